"""Sessions, event streams and interrupts through the gateway, on a real dev server."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from pathlib import Path

import httpx
import pytest
from temporalio.client import Client

from smyth_temporal import AgentClient
from smyth_temporal.security import Principal
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from smyth_temporal.types import MessageCompleted, TextAssembler, parse_event
from smyth_temporal.types.sessions import session_workflow_id
from tests.helpers.gateway_support import (
    FAST,
    OTHER,
    TENANT,
    Event,
    Keys,
    bearer,
    flag,
    gateway,
    make_keys,
    pending_approvals,
    sse,
    until,
)
from tests.helpers.live_agents import GatedModel, Operator
from tests.helpers.trader import Trader

LONG_ANSWER = " ".join(f"word{i}" for i in range(40))


@pytest.fixture
def keys(tmp_path: Path) -> Keys:
    return make_keys(tmp_path / "keys.json")


async def test_a_session_answers_whole_streamed_and_posted(
    client: Client, task_queue: str, keys: Keys
) -> None:
    # Words far enough apart that the reader has started the turn's live channel before
    # the last one is written (readers learn of a turn one query after it starts).
    model = ScriptedModel(
        [reply("Hello, Alice."), reply("You told me: Alice."), reply("Noted.")], piece_delay=0.03
    )
    path = "/v1/agents/Operator/sessions/s1/messages"
    async with (
        agent_worker(client, Operator, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        http, operator = running.http, keys.headers("operator")
        whole = await http.post(path, json={"text": "I am Alice."}, headers=operator)
        streamed_headers = {**operator, "Accept": "text/event-stream"}
        async with http.stream(
            "POST", path, json={"text": "Who am I?"}, headers=streamed_headers
        ) as stream:
            assert stream.status_code == 200
            events = [e async for e in sse(stream)]
        posted = await http.post(path, json={"text": "Bye.", "wait": False}, headers=operator)
        workflow_id = session_workflow_id("Operator", TENANT, "s1")

        async def answered_third() -> bool:
            state = await http.get(f"/v1/runs/{workflow_id}", headers=operator)
            return state.json()["messages"][-1]["content"] == "Noted."

        await until(answered_third, "the posted message answered")
        # Another tenant's session of the same name is another session altogether.
        theirs = await http.post(path, json={"text": "I am Bob."}, headers=bearer(keys.other))
        history = await client.get_workflow_handle(workflow_id).fetch_history()

    assert whole.status_code == 200, whole.text
    assert (whole.json()["number"], whole.json()["text"]) == (1, "Hello, Alice.")
    chunks = [e.json() for e in events if e.event == "chunk"]
    assert len(chunks) > 1 and "".join(c["text"] for c in chunks) == "You told me: Alice."
    assert events[-1].event == "reply"
    assert (events[-1].json()["number"], events[-1].json()["text"]) == (2, "You told me: Alice.")
    assert "I am Alice." in model.requests[1].messages[-3].content  # the session kept it
    assert (posted.status_code, posted.json()) == (202, {"workflow_id": workflow_id})
    assert (theirs.status_code, theirs.json()["number"]) == (200, 1)
    # Messages are sent as the key's name, for the audit trail.
    recorded = b"".join(e.SerializeToString() for e in history.events)
    assert f"{TENANT}-operator".encode() in recorded and OTHER.encode() not in recorded


async def test_a_message_refused_at_once_is_a_409_even_when_streaming(
    client: Client, task_queue: str, keys: Keys
) -> None:
    model = GatedModel([reply("first answer")], held={1})
    path = "/v1/agents/Operator/sessions/busy/messages"
    async with (
        agent_worker(client, Operator, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        http, operator = running.http, keys.headers("operator")
        first = await http.post(path, json={"text": "first", "wait": False}, headers=operator)
        await until(flag(lambda: 1 in model.waiting), "the first message thinking")
        busy = {"text": "second", "while_busy": "reject"}
        streamed = await http.post(path, params={"stream": "true"}, json=busy, headers=operator)
        whole = await http.post(path, json=busy, headers=operator)
        model.release.set()

    assert first.status_code == 202
    for refused in (streamed, whole):
        assert refused.status_code == 409, refused.text
        assert refused.headers["content-type"] == "application/problem+json"
        assert refused.json()["type"] == "urn:smyth:error:InvalidMessageError"
        assert "busy" in refused.json()["detail"]


async def test_an_event_stream_resumes_after_a_disconnect_missing_nothing(
    client: Client, task_queue: str, keys: Keys
) -> None:
    model = ScriptedModel(
        [tool_call("get_quote", symbol="ACME"), reply(LONG_ANSWER)], piece_delay=0.03
    )
    async with (
        agent_worker(client, Operator, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        http, viewer = running.http, keys.headers("viewer")
        started = await http.post(
            "/v1/agents/Operator/runs",
            json={"prompt": "How is ACME?"},
            headers=keys.headers("operator"),
        )
        workflow_id = started.json()["workflow_id"]
        url = f"/v1/runs/{workflow_id}/events"
        first: list[Event] = []
        async with http.stream("GET", url, headers=viewer) as stream:
            async for event in sse(stream):
                first.append(event)
                if event.event == "text_delta":
                    break  # the client goes away mid-answer

        async def reader_gone() -> bool:
            return not running.gateway.agents._feeds._feeds  # the server stopped polling

        await until(reader_gone, "the server to notice the disconnect")
        # ``after`` is where the page first started; Last-Event-ID, as a browser sends it
        # when it reconnects, says where it really is.
        headers = {**viewer, "Last-Event-ID": first[-1].id or ""}
        async with http.stream("GET", url, params={"after": -1}, headers=headers) as stream:
            rest = [e async for e in sse(stream)]
        everything = [
            e async for e in AgentClient(client, task_queue=task_queue).events(workflow_id)
        ]

    text = ("text_delta", "text_reset")
    seen = [int(e.id or -1) for e in [*first, *rest] if e.event not in text]
    durable = [e.offset for e in everything if e.kind not in text]
    assert seen == durable  # nothing missed, nothing twice
    assert rest[-1].event == "run_finished"
    # The answer's text is read again from its start, after a reset: assembled, it
    # reads once.
    assert rest[0].event == "text_reset"
    assembler = TextAssembler()
    for event in [*first, *rest]:
        if event.event in text:
            assembler.add(parse_event(event.json()))
    answer = [e for e in everything if isinstance(e, MessageCompleted)][-1]
    assert assembler.text(answer.message_id or "") == LONG_ANSWER


async def test_an_interrupt_over_http_and_pings_while_the_stream_is_idle(
    client: Client, task_queue: str, keys: Keys
) -> None:
    model = GatedModel([tool_call("get_quote", symbol="ACME"), reply("never")], held={2})
    async with (
        agent_worker(client, Operator, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        http, operator = running.http, keys.headers("operator")
        started = await http.post(
            "/v1/agents/Operator/runs", json={"prompt": "How is ACME?"}, headers=operator
        )
        base = f"/v1/runs/{started.json()['workflow_id']}"
        await until(flag(lambda: 2 in model.waiting), "the second turn thinking")
        async with http.stream("GET", f"{base}/events", headers=keys.headers("viewer")) as stream:
            lines = stream.aiter_lines()
            async with asyncio.timeout(10):
                while await anext(lines) != ": ping":
                    pass  # the run is idle, waiting for the model: pings keep it open
        outcome = await http.post(
            f"{base}/interrupt", json={"reason": "wrong ticker"}, headers=operator
        )
        result = await http.get(f"{base}/result", headers=operator)
        again = await http.post(f"{base}/interrupt", headers=operator)

    assert outcome.status_code == 200, outcome.text
    assert outcome.json() == {"status": "thinking", "step": 1}
    assert result.json()["status"] == "interrupted"
    assert again.status_code == 409
    assert again.json()["type"] == "urn:smyth:error:InvalidInterruptError"


async def test_a_key_past_its_stream_cap_gets_a_429_and_the_run_still_takes_its_decision(
    client: Client, task_queue: str, keys: Keys
) -> None:
    model = ScriptedModel([tool_call("sell", symbol="ACME", quantity=5), reply("sold")])
    capped = dataclasses.replace(FAST, max_streams_per_key=2)
    viewer = Principal(name=f"{TENANT}-viewer", tenant=TENANT, role="viewer")
    async with (
        agent_worker(client, Trader, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys, capped) as running,
        contextlib.AsyncExitStack() as open_streams,
    ):
        http = running.http
        started = await http.post(
            "/v1/agents/Trader/runs", json={"prompt": "Sell ACME"}, headers=keys.headers("operator")
        )
        workflow_id = started.json()["workflow_id"]
        url = f"/v1/runs/{workflow_id}/events"

        async def opened(role: str) -> httpx.Response:
            response = await open_streams.enter_async_context(
                http.stream("GET", url, headers=keys.headers(role))
            )
            return response

        first, second = await opened("viewer"), await opened("viewer")
        refused = await http.get(url, headers=keys.headers("viewer"))
        other_key = await opened("approver")  # the cap is per key
        [pending] = await pending_approvals(http, keys, workflow_id)
        request = pending["request"]
        decided = await http.post(
            f"/v1/runs/{workflow_id}/approvals/{request['id']}",
            json={"approved": True, "arguments_sha256": request["arguments_sha256"]},
            headers=keys.headers("approver"),
        )
        await first.aclose()  # closing one gives its slot back
        await until(
            flag(lambda: running.gateway.streams.open(viewer) < 2), "the stream's slot freed"
        )
        again = await opened("viewer")
        events = [e.event async for e in sse(again)]

    assert [first.status_code, second.status_code, other_key.status_code] == [200] * 3
    assert refused.status_code == 429, refused.text
    assert refused.headers["content-type"] == "application/problem+json"
    assert "2 event streams open" in refused.json()["detail"]
    assert "Retry-After" in refused.headers
    assert decided.status_code == 200, decided.text
    assert again.status_code == 200 and events[-1] == "run_finished"
