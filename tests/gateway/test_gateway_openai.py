"""The OpenAI-compatible endpoint, driven by the real ``openai`` client, on a real dev server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import openai
import pytest
from temporalio.client import Client

from smyth_temporal.gateway._openai import _Answer, _Chunks
from smyth_temporal.gateway._turns import TurnItem, TurnText
from smyth_temporal.models import ModelResponse
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from smyth_temporal.types.sessions import SessionReply, session_workflow_id
from tests.helpers.gateway_support import (
    SERVED,
    TENANT,
    Keys,
    gateway,
    make_keys,
)
from tests.helpers.live_agents import Operator

NAME = "Your name is Alice, as you told me when this session began a moment ago."
REPLY = "Nice to meet you, Alice: I will remember your name for as long as this session lasts."


@pytest.fixture
def keys(tmp_path: Path) -> Keys:
    return make_keys(tmp_path / "keys.json")


def openai_client(url: str, key: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=f"{url}/openai/v1", api_key=key, max_retries=0)


async def test_chat_whole_then_streamed_in_one_session(
    client: Client, task_queue: str, keys: Keys
) -> None:
    model = ScriptedModel([reply(REPLY), reply(NAME)], piece_delay=0.03)
    async with (
        agent_worker(client, Operator, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        chat = openai_client(running.url, keys.by_role["operator"])
        models = await chat.models.list()
        first = await chat.chat.completions.create(
            model="Operator",
            user="alice",
            messages=[{"role": "user", "content": "Hello, I am Alice."}],
        )
        # The second call sends the whole transcript, as OpenAI clients do: only its last
        # user message goes to the session, which has the rest already.
        transcript = [
            {"role": "system", "content": "ignored: the agent has its instructions"},
            {"role": "user", "content": "Hello, I am Alice."},
            {"role": "assistant", "content": REPLY},
            {"role": "user", "content": [{"type": "text", "text": "What is my name?"}]},
        ]
        # As written, word by word: with interim text (without it, the answer comes whole
        # once it is known to be the answer: see the next test).
        stream = await chat.chat.completions.create(
            model="Operator",
            user="alice",
            messages=transcript,
            stream=True,
            temperature=0.2,
            extra_body={"smyth": {"interim_text": True}},
        )
        chunks = [chunk async for chunk in stream]

    assert [m.id for m in models.data] == [agent.__name__ for agent in SERVED]
    assert first.object == "chat.completion"
    assert (first.model, first.choices[0].message.role) == ("Operator", "assistant")
    assert first.choices[0].message.content == REPLY
    assert first.choices[0].finish_reason == "stop"
    assert first.model_extra == {"smyth_session": session_workflow_id("Operator", TENANT, "alice")}

    assert all(c.object == "chat.completion.chunk" and c.id == chunks[0].id for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert text == NAME
    assert len(chunks) > 3  # streamed as written, not in one piece
    assert chunks[-1].choices[0].finish_reason == "stop"
    # One session: the second turn saw the first exchange, and only one new user message.
    seen = [m.content for m in model.requests[1].messages if m.role == "user"]
    assert seen == ["Hello, I am Alice.", "What is my name?"]


async def test_the_session_outlives_a_worker_restart_between_calls(
    client: Client, task_queue: str, keys: Keys
) -> None:
    # One script, two models: each worker's model keeps the requests it answered.
    first_model = ScriptedModel([reply(REPLY), reply(NAME)])
    second_model = ScriptedModel(first_model.steps)
    # A session of its own: sessions outlive tests, and "alice" runs on another test's queue.
    async with gateway(client, task_queue, keys) as running:
        chat = openai_client(running.url, keys.by_role["operator"])
        async with agent_worker(client, Operator, model=first_model, task_queue=task_queue):
            first = await chat.chat.completions.create(
                model="Operator",
                user="restarted",
                messages=[{"role": "user", "content": "Hello, I am Alice."}],
            )
        # A fresh worker (no cache, another model): the session is rebuilt from history.
        async with agent_worker(client, Operator, model=second_model, task_queue=task_queue):
            second = await chat.chat.completions.create(
                model="Operator",
                user="restarted",
                messages=[{"role": "user", "content": "What is my name?"}],
            )

    assert first.choices[0].message.content == REPLY
    assert second.choices[0].message.content == NAME
    assert first.model_extra == second.model_extra
    assert len(first_model.requests) == 1
    [request] = second_model.requests
    conversation = [(m.role, m.content) for m in request.messages if m.role != "system"]
    assert conversation == [
        ("user", "Hello, I am Alice."),
        ("assistant", REPLY),
        ("user", "What is my name?"),
    ]


async def test_the_session_header_names_the_session_too(
    client: Client, task_queue: str, keys: Keys
) -> None:
    model = ScriptedModel([reply("one"), reply("two")])
    async with (
        agent_worker(client, Operator, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        chat = openai_client(running.url, keys.by_role["operator"])
        for text in ("first", "second"):
            await chat.chat.completions.create(
                model="Operator",
                messages=[{"role": "user", "content": text}],
                extra_headers={"X-Smyth-Session": "desk-7"},
            )
    assert [m.content for m in model.requests[1].messages if m.role == "user"] == [
        "first",
        "second",
    ]


async def test_errors_come_in_openai_shape(client: Client, task_queue: str, keys: Keys) -> None:
    async with gateway(client, task_queue, keys) as running:
        chat = openai_client(running.url, keys.by_role["operator"])
        hello = [{"role": "user", "content": "hi"}]
        with pytest.raises(openai.NotFoundError) as unknown:
            await chat.chat.completions.create(model="Nobody", user="s", messages=hello)
        with pytest.raises(openai.BadRequestError) as nameless:
            await chat.chat.completions.create(model="Operator", messages=hello)
        with pytest.raises(openai.AuthenticationError) as bad_key:
            await openai_client(running.url, "smyth_nope").models.list()
        with pytest.raises(openai.PermissionDeniedError):
            await openai_client(running.url, keys.by_role["viewer"]).chat.completions.create(
                model="Operator", user="s", messages=hello
            )

    # The client shows OpenAI's error message as is, after the status.
    assert unknown.value.message == (
        "Error code: 404 - unknown agent 'Nobody'; this gateway serves: Analyst, Operator, "
        "Trader, Researcher"
    )
    assert unknown.value.code == "UnknownAgentError"
    assert "name the session: set `user` or the X-Smyth-Session header" in nameless.value.message
    assert bad_key.value.message == "Error code: 401 - invalid or revoked API key"


def test_chunks_never_take_text_back() -> None:
    answer = _Answer(interim_text=True, workflow_id="w")
    chunks = _Chunks("chatcmpl-1", 0, "Operator", answer)
    pieces: list[TurnItem] = [
        TurnText("m1", "Hel"),
        TurnText("m1", "lo"),
        TurnText("m1", "Hello!", reset=True),  # a retry that wrote more: only the rest
        TurnText("m1", "Bye", reset=True),  # a retry that wrote otherwise: all of it, apart
        TurnText("m2", "Second."),  # the reply's next message
        SessionReply(text="Second.", number=1, step=2),
    ]
    rendered = b"".join(chunks.render(p) for p in pieces).decode().split("\n\n")
    events = [json.loads(e.removeprefix("data: ")) for e in rendered if e]
    deltas = [e["choices"][0]["delta"] for e in events]
    assert deltas == [
        {"role": "assistant", "content": "Hel"},
        {"content": "lo"},
        {"content": "!"},
        {"content": "\nBye"},
        {"content": "\n\nSecond."},
        {},
    ]
    assert events[-1]["choices"][0]["finish_reason"] == "stop"


def _saying(step: ModelResponse, text: str) -> ModelResponse:
    """``step`` (tool calls) with text the model wrote beside them."""
    return step.model_copy(update={"message": step.message.model_copy(update={"content": text})})


INTERIM = "Let me look the quote up first."
ANSWER = "ACME trades at 42, up two percent since the open this morning."


async def test_streamed_and_whole_completions_carry_the_same_text_and_the_turns_usage(
    client: Client, task_queue: str, keys: Keys
) -> None:
    # Each turn: interim text beside a tool call, then the answer. Four turns: whole and
    # streamed, without and with interim text.
    turn = [_saying(tool_call("get_quote", symbol="ACME"), INTERIM), reply(ANSWER)]
    model = ScriptedModel(turn * 4, piece_delay=0.03, tokens_per_turn=7)
    hello = [{"role": "user", "content": "How is ACME?"}]
    interim = {"smyth": {"interim_text": True}}
    async with (
        agent_worker(client, Operator, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        chat = openai_client(running.url, keys.by_role["operator"])
        session = {"model": "Operator", "user": "consistent", "messages": hello}
        whole = await chat.chat.completions.create(**session)
        streamed = [
            c
            async for c in await chat.chat.completions.create(
                **session, stream=True, stream_options={"include_usage": True}
            )
        ]
        whole_interim = await chat.chat.completions.create(**session, extra_body=interim)
        streamed_interim = [
            c
            async for c in await chat.chat.completions.create(
                **session, stream=True, extra_body=interim
            )
        ]

    def text(chunks: list[Any]) -> str:
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)

    assert whole.choices[0].message.content == ANSWER
    assert text(streamed) == ANSWER
    assert whole_interim.choices[0].message.content == f"{INTERIM}\n\n{ANSWER}"
    assert text(streamed_interim) == f"{INTERIM}\n\n{ANSWER}"
    assert len(streamed_interim) > 4  # written as it comes, not in one piece
    # Two model calls of 7 input and 7 output tokens each: the turn's, not the session's.
    assert whole.usage is not None
    assert (whole.usage.prompt_tokens, whole.usage.completion_tokens) == (14, 14)
    assert whole.usage.total_tokens == 28
    assert streamed[-1].choices == [] and streamed[-1].usage == whole.usage
    assert streamed[-2].choices[0].finish_reason == "stop"
    assert whole_interim.usage == whole.usage


async def test_a_completion_stopped_by_a_pending_approval_ends_naming_the_request(
    client: Client, task_queue: str, keys: Keys
) -> None:
    model = ScriptedModel(
        [
            tool_call("sell", symbol="ACME", quantity=5),
            reply("Sold 5 ACME."),
            reply("On it."),
            reply("Done."),
        ]
    )
    hello = [{"role": "user", "content": "Sell 5 ACME."}]
    hurry = [{"role": "user", "content": "Hurry."}]
    async with (
        agent_worker(client, Operator, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        chat = openai_client(running.url, keys.by_role["operator"])
        async with asyncio.timeout(30):  # it used to wait for the decision, silently
            stopped = await chat.chat.completions.create(
                model="Operator", user="gated", messages=hello
            )
            # A message behind the waiting turn ends too, naming what it waits behind.
            waiting = await chat.chat.completions.create(
                model="Operator", user="gated", messages=hurry
            )
        workflow_id = session_workflow_id("Operator", TENANT, "gated")
        state = await running.http.get(f"/v1/runs/{workflow_id}", headers=keys.headers("viewer"))
        [request] = state.json()["pending_approvals"]
        decided = await running.http.post(
            f"/v1/runs/{workflow_id}/approvals/{request['id']}",
            json={"approved": True, "arguments_sha256": request["arguments_sha256"]},
            headers=keys.headers("approver"),
        )
        then = await chat.chat.completions.create(
            model="Operator", user="gated", messages=[{"role": "user", "content": "Thanks."}]
        )

    content = stopped.choices[0].message.content or ""
    assert stopped.choices[0].finish_reason == "stop"
    assert content.startswith(f"Waiting for approval: request {request['id']} (sell)")
    assert stopped.model_extra is not None
    assert stopped.model_extra["smyth_pending"] == {
        "request_id": request["id"],
        "tool": "sell",
        "workflow_id": session_workflow_id("Operator", TENANT, "gated"),
    }
    assert waiting.choices[0].message.content == content
    assert decided.status_code == 200, decided.text
    # The next message is answered after the decided turn and the one queued behind it.
    assert then.choices[0].message.content == "Done."
    assert [m.content for m in model.requests[2].messages if m.role == "assistant"][-1] == (
        "Sold 5 ACME."
    )
