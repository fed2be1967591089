"""The OpenAI-compatible endpoint, driven by the real ``openai`` client, on a real dev server."""

from __future__ import annotations

import json
from pathlib import Path

import openai
import pytest
from temporalio.client import Client

from smyth_temporal.clients import ReplyChunk
from smyth_temporal.gateway._openai import _Chunks
from smyth_temporal.testing import ScriptedModel, agent_worker, reply
from smyth_temporal.types.sessions import SessionReply, session_workflow_id
from tests.helpers.gateway_support import SERVED, TENANT, Keys, gateway, make_keys
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
        stream = await chat.chat.completions.create(
            model="Operator", user="alice", messages=transcript, stream=True, temperature=0.2
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
    chunks = _Chunks("chatcmpl-1", 0, "Operator")
    pieces = [
        ReplyChunk("Hel", "m1"),
        ReplyChunk("lo", "m1"),
        ReplyChunk("Hello!", "m1", reset=True),  # a retry that wrote more: only the rest
        ReplyChunk("Bye", "m1", reset=True),  # a retry that wrote otherwise: all of it, apart
        ReplyChunk("Second.", "m2"),  # the reply's next message
        SessionReply(text="Second.", number=1, step=2),
    ]
    events = [json.loads(chunks.render(p).decode().removeprefix("data: ")) for p in pieces]
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
