"""AG-UI 1.0 at ``POST /ag-ui/{agent}``, read with httpx and parsed with ``ag-ui-protocol``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from ag_ui.core import Event, EventType, RunAgentInput, UserMessage
from pydantic import TypeAdapter
from temporalio.client import Client

from smyth_temporal.exceptions import AgentNotFoundError
from smyth_temporal.gateway import _agui
from smyth_temporal.gateway._agui import _Events
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from smyth_temporal.types.sessions import session_workflow_id
from tests.helpers.gateway_support import TENANT, Keys, Running, gateway, make_keys, sse
from tests.helpers.live_agents import Operator

EVENTS: TypeAdapter[Any] = TypeAdapter(Event)
ANSWER = "ACME trades at 42 today, up two percent since the opening bell rang."


@pytest.fixture
def keys(tmp_path: Path) -> Keys:
    return make_keys(tmp_path / "keys.json")


def run_input(thread: str, text: str | None = "Hello.", **extra: Any) -> dict[str, Any]:
    messages = [] if text is None else [UserMessage(id=uuid.uuid4().hex, content=text)]
    body = RunAgentInput(
        thread_id=thread, run_id=uuid.uuid4().hex, messages=messages, tools=[], context=[]
    )
    return {**body.model_dump(mode="json", by_alias=True), **extra}


async def run(
    running: Running, keys: Keys, body: dict[str, Any], role: str = "operator"
) -> list[Any]:
    """The run's events, parsed by ag-ui-protocol's own types."""
    headers = {**keys.headers(role), "Accept": "text/event-stream"}
    async with running.http.stream("POST", "/ag-ui/Operator", json=body, headers=headers) as r:
        assert r.status_code == 200, await r.aread()
        assert r.headers["content-type"].startswith("text/event-stream")
        return [EVENTS.validate_python(e.json()) async for e in sse(r)]


def kinds(events: list[Any]) -> list[str]:
    return [e.type.value for e in events]


def text_of(events: list[Any]) -> str:
    return "".join(e.delta for e in events if e.type == EventType.TEXT_MESSAGE_CONTENT)


async def test_a_run_streams_text_events_in_order_and_finishes(
    client: Client, task_queue: str, keys: Keys
) -> None:
    model = ScriptedModel([reply(ANSWER), reply("Your question was about ACME.")], piece_delay=0.03)
    thread = f"agui-{uuid.uuid4().hex[:8]}"
    async with (
        agent_worker(client, Operator, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        first = await run(running, keys, run_input(thread, "How is ACME doing?"))
        second = await run(running, keys, run_input(thread, "What did I ask?"))

    names = kinds(first)
    assert names[0] == "RUN_STARTED" and names[-2:] == ["STATE_SNAPSHOT", "RUN_FINISHED"]
    text = [n for n in names if n.startswith("TEXT_MESSAGE")]
    assert text[0] == "TEXT_MESSAGE_START" and text[-1] == "TEXT_MESSAGE_END"
    assert set(text[1:-1]) == {"TEXT_MESSAGE_CONTENT"} and len(text) > 4  # as written
    assert text_of(first) == ANSWER
    started, finished = first[0], first[-1]
    assert (started.thread_id, finished.thread_id) == (thread, thread)
    assert started.run_id == finished.run_id
    assert finished.outcome.type == "success" and finished.result == ANSWER
    assert finished.usage and finished.usage[0].total_tokens > 0
    snapshot = first[-2].snapshot
    workflow_id = session_workflow_id("Operator", TENANT, thread)
    assert (snapshot["workflow_id"], snapshot["tenant"]) == (workflow_id, TENANT)
    # The thread is one durable session: the second run saw the first exchange, and only
    # the new user message was sent.
    assert text_of(second) == "Your question was about ACME."
    seen = [m.content for m in model.requests[1].messages if m.role == "user"]
    assert seen == ["How is ACME doing?", "What did I ask?"]


async def test_an_approval_interrupt_then_resume_continues_the_same_durable_turn(
    client: Client, task_queue: str, keys: Keys
) -> None:
    model = ScriptedModel([tool_call("sell", symbol="ACME", quantity=5), reply("Sold 5 ACME.")])
    thread = f"agui-{uuid.uuid4().hex[:8]}"
    async with (
        agent_worker(client, Operator, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        async with asyncio.timeout(30):
            stopped = await run(running, keys, run_input(thread, "Sell 5 ACME."))
        [interrupt] = stopped[-1].outcome.interrupts
        request = interrupt.metadata["smyth"]
        decision = {"approved": True, "arguments_sha256": request["arguments_sha256"]}
        resume = [{"interruptId": interrupt.id, "status": "resolved", "payload": decision}]
        # An operator may run the thread, not decide: refused before anything is sent.
        refused = await running.http.post(
            "/ag-ui/Operator",
            json=run_input(thread, None, resume=resume),
            headers=keys.headers("operator"),
        )
        resumed = await run(running, keys, run_input(thread, None, resume=resume), "approver")

    names = kinds(stopped)
    assert names[-2:] == ["STATE_SNAPSHOT", "RUN_FINISHED"]
    assert stopped[-1].outcome.type == "interrupt"
    start = next(e for e in stopped if e.type == EventType.TOOL_CALL_START)
    args = next(e for e in stopped if e.type == EventType.TOOL_CALL_ARGS)
    assert (start.tool_call_name, start.tool_call_id) == ("sell", interrupt.tool_call_id)
    assert json.loads(args.delta) == {"symbol": "ACME", "quantity": 5}
    assert "TOOL_CALL_RESULT" not in names  # it waits for the decision
    assert interrupt.reason == "approval"
    assert (request["tool"], request["arguments"]) == ("sell", {"symbol": "ACME", "quantity": 5})
    assert interrupt.response_schema["required"] == ["approved"]
    assert stopped[-2].snapshot["status"] == "awaiting_approval"

    assert refused.status_code == 403, refused.text
    assert "may not decide approvals" in refused.json()["detail"]

    # The same durable turn went on: the call ran, the model answered, nothing was resent.
    assert kinds(resumed)[0] == "RUN_STARTED"
    [result] = [e for e in resumed if e.type == EventType.TOOL_CALL_RESULT]
    assert result.tool_call_id == interrupt.tool_call_id
    assert text_of(resumed) == "Sold 5 ACME."
    assert resumed[-1].outcome.type == "success"
    assert len(model.requests) == 2
    assert [m.content for m in model.requests[1].messages if m.role == "user"] == ["Sell 5 ACME."]
    [decided] = resumed[-2].snapshot["approvals"]
    assert decided["status"] == "approved"
    assert decided["decision"]["by"] == f"{TENANT}-approver"  # the key's name


async def test_a_cancelled_resume_entry_rejects_the_call(
    client: Client, task_queue: str, keys: Keys
) -> None:
    model = ScriptedModel([tool_call("sell", symbol="ACME", quantity=5), reply("Not sold.")])
    thread = f"agui-{uuid.uuid4().hex[:8]}"
    async with (
        agent_worker(client, Operator, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        stopped = await run(running, keys, run_input(thread, "Sell 5 ACME."))
        [interrupt] = stopped[-1].outcome.interrupts
        resume = [{"interruptId": interrupt.id, "status": "cancelled"}]
        resumed = await run(running, keys, run_input(thread, None, resume=resume), "approver")

    assert text_of(resumed) == "Not sold."
    [decided] = resumed[-2].snapshot["approvals"]
    assert decided["status"] == "rejected"


async def no_session(client: Client, thread: str) -> bool:
    handle = client.get_workflow_handle(session_workflow_id("Operator", TENANT, thread))
    try:
        await handle.describe()
    except Exception:
        return True
    return False


async def test_bad_input_is_refused_before_the_stream_with_problem_details(
    client: Client, task_queue: str, keys: Keys
) -> None:
    model = ScriptedModel([reply("never")])
    thread = f"agui-{uuid.uuid4().hex[:8]}"
    headers = keys.headers("admin")
    big = "x" * (1024 * 1024 + 1)
    bad_resume = [{"interruptId": "approval-1@3", "status": "resolved", "payload": {}}]
    async with (
        agent_worker(client, Operator, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        post = running.http.post
        answers = {
            "unknown agent": await post("/ag-ui/Nobody", json=run_input(thread), headers=headers),
            "not JSON": await post(
                "/ag-ui/Operator",
                content=b"{not json",
                headers={**headers, "Content-Type": "application/json"},
            ),
            "no threadId": await post(
                "/ag-ui/Operator", json={"runId": "r", "messages": []}, headers=headers
            ),
            "no user message": await post(
                "/ag-ui/Operator", json=run_input(thread, None), headers=headers
            ),
            "long threadId": await post(
                "/ag-ui/Operator", json=run_input("t" * 201), headers=headers
            ),
            "oversize": await post("/ag-ui/Operator", json=run_input(thread, big), headers=headers),
            "resume, no thread": await post(
                "/ag-ui/Operator", json=run_input(thread, None, resume=bad_resume), headers=headers
            ),
            "resume, forged id": await post(
                "/ag-ui/Operator",
                json=run_input(
                    thread, None, resume=[{"interruptId": "anything", "status": "cancelled"}]
                ),
                headers=headers,
            ),
            "no key": await post("/ag-ui/Operator", json=run_input(thread)),
            "viewer": await post(
                "/ag-ui/Operator", json=run_input(thread), headers=keys.headers("viewer")
            ),
        }
        nothing_started = await no_session(client, thread)

    statuses = {what: answer.status_code for what, answer in answers.items()}
    assert statuses == {
        "unknown agent": 404,
        "not JSON": 400,
        "no threadId": 422,
        "no user message": 422,
        "long threadId": 422,
        "oversize": 413,
        "resume, no thread": 404,
        "resume, forged id": 404,
        "no key": 401,
        "viewer": 403,
    }
    for what, answer in answers.items():
        assert answer.headers["content-type"] == "application/problem+json", what
        assert answer.json()["detail"], what
    assert "unknown agent 'Nobody'" in answers["unknown agent"].json()["detail"]
    assert nothing_started
    assert model.requests == []


@contextlib.asynccontextmanager
async def waiting_on_a_sale(
    client: Client, task_queue: str, keys: Keys
) -> AsyncIterator[tuple[Running, str, list[Any]]]:
    """A served Operator whose new thread's first run ended at the sale's interrupt.

    Yields the running gateway, the thread id and the events of that first run.
    """
    model = ScriptedModel([tool_call("sell", symbol="ACME", quantity=5), reply("Sold.")])
    thread = f"agui-{uuid.uuid4().hex[:8]}"
    async with (
        agent_worker(client, Operator, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        yield running, thread, await run(running, keys, run_input(thread, "Sell 5 ACME."))


async def test_another_tenants_thread_is_not_reached(
    client: Client, task_queue: str, keys: Keys
) -> None:
    async with waiting_on_a_sale(client, task_queue, keys) as (running, thread, stopped):
        [interrupt] = stopped[-1].outcome.interrupts
        request = interrupt.metadata["smyth"]
        decision = {"approved": True, "arguments_sha256": request["arguments_sha256"]}
        resume = [{"interruptId": interrupt.id, "status": "resolved", "payload": decision}]
        # The same thread id under another tenant's key names that tenant's (absent) thread.
        other = await running.http.post(
            "/ag-ui/Operator",
            json=run_input(thread, None, resume=resume),
            headers={"Authorization": f"Bearer {keys.other}"},
        )
        state = await running.http.get(
            f"/v1/runs/{session_workflow_id('Operator', TENANT, thread)}",
            headers=keys.headers("viewer"),
        )

    assert other.status_code == 404, other.text
    assert state.json()["status"] == "awaiting_approval"  # untouched


async def test_a_refused_resume_decides_nothing(
    client: Client, task_queue: str, keys: Keys
) -> None:
    async with waiting_on_a_sale(client, task_queue, keys) as (running, thread, stopped):
        [interrupt] = stopped[-1].outcome.interrupts
        sha = interrupt.metadata["smyth"]["arguments_sha256"]

        def entry(payload: dict[str, Any]) -> dict[str, Any]:
            return {"interruptId": interrupt.id, "status": "resolved", "payload": payload}

        approve = entry({"approved": True, "arguments_sha256": sha})
        refusals = {
            "another hash": [entry({"approved": True, "arguments_sha256": "0" * 64})],
            "twice": [approve, {"interruptId": interrupt.id, "status": "cancelled"}],
            "no hash": [entry({"approved": True})],
        }
        answers = {
            what: await running.http.post(
                "/ag-ui/Operator",
                json=run_input(thread, None, resume=resume),
                headers=keys.headers("approver"),
            )
            for what, resume in refusals.items()
        }
        state = await running.http.get(
            f"/v1/runs/{session_workflow_id('Operator', TENANT, thread)}",
            headers=keys.headers("viewer"),
        )
        resumed = await run(running, keys, run_input(thread, None, resume=[approve]), "approver")

    statuses = {what: answer.status_code for what, answer in answers.items()}
    assert statuses == {"another hash": 409, "twice": 422, "no hash": 422}
    assert "approve only what was shown" in answers["another hash"].json()["detail"]
    [request] = state.json()["approvals"]
    assert request["status"] == "pending"  # no refused resume decided anything
    assert text_of(resumed) == "Sold."


async def test_a_new_message_while_an_interrupt_waits_is_refused_before_the_stream(
    client: Client, task_queue: str, keys: Keys
) -> None:
    model = ScriptedModel([tool_call("sell", symbol="ACME", quantity=5), reply("Sold.")])
    thread = f"agui-{uuid.uuid4().hex[:8]}"
    async with (
        agent_worker(client, Operator, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        stopped = await run(running, keys, run_input(thread, "Sell 5 ACME."))
        async with asyncio.timeout(30):  # it used to stream nothing until the decision
            refused = await running.http.post(
                "/ag-ui/Operator",
                json=run_input(thread, "Never mind, how is ACME?"),
                headers=keys.headers("operator"),
            )
        [interrupt] = stopped[-1].outcome.interrupts
        resume = [{"interruptId": interrupt.id, "status": "cancelled"}]
        resumed = await run(running, keys, run_input(thread, None, resume=resume), "approver")

    assert refused.status_code == 409, refused.text
    assert "busy" in refused.json()["detail"]
    assert text_of(resumed) == "Sold."
    # The refused message never reached the session.
    user = [m.content for r in model.requests for m in r.messages if m.role == "user"]
    assert "Never mind, how is ACME?" not in user


def test_a_failure_after_the_stream_began_is_a_run_error_in_the_sdks_words() -> None:
    frame = _Events("thread", "run").error(AgentNotFoundError("no agent run with id 'x'"))
    event = EVENTS.validate_json(frame.decode().removeprefix("data: ").strip())
    assert event.type == EventType.RUN_ERROR
    assert (event.message, event.code) == ("no agent run with id 'x'", "AgentNotFoundError")
    unexpected = _Events("thread", "run").error(RuntimeError("secret internals"))
    event = EVENTS.validate_json(unexpected.decode().removeprefix("data: ").strip())
    assert "secret" not in event.message and event.code == "500"


async def test_a_resume_at_an_offset_past_the_threads_events_is_refused_and_decides_nothing(
    client: Client, task_queue: str, keys: Keys
) -> None:
    async with waiting_on_a_sale(client, task_queue, keys) as (running, thread, stopped):
        [interrupt] = stopped[-1].outcome.interrupts
        sha = interrupt.metadata["smyth"]["arguments_sha256"]
        request_id = interrupt.id.rpartition("@")[0]
        payload = {"approved": True, "arguments_sha256": sha}
        # The real request, at an offset no event will reach for ages: it waited forever.
        forged = [
            {"interruptId": f"{request_id}@{10**15}", "status": "resolved", "payload": payload}
        ]
        async with asyncio.timeout(30):
            refused = await running.http.post(
                "/ag-ui/Operator",
                json=run_input(thread, None, resume=forged),
                headers=keys.headers("approver"),
            )
        state = await running.http.get(
            f"/v1/runs/{session_workflow_id('Operator', TENANT, thread)}",
            headers=keys.headers("viewer"),
        )
        real = [{"interruptId": interrupt.id, "status": "resolved", "payload": payload}]
        resumed = await run(running, keys, run_input(thread, None, resume=real), "approver")

    assert refused.status_code == 404, refused.text
    assert "the thread's events end at offset" in refused.json()["detail"]
    [request] = state.json()["approvals"]
    assert request["status"] == "pending"  # the refused resume decided nothing
    assert text_of(resumed) == "Sold."


class _Answered:
    """A reply answered before its events reach the reader (the usual order)."""

    reply = None

    def __init__(self) -> None:
        self.answered = asyncio.Event()
        self.answered.set()

    async def events(self) -> Any:
        for number in range(2):
            await asyncio.sleep(0)  # the feed's batches
            yield number


def _snapshot_reader(
    monkeypatch: pytest.MonkeyPatch, owns: Any, order: list[str]
) -> tuple[Any, Any]:
    unscoped, state = object(), object()

    async def asked(_: Any, client: Any, workflow_id: str) -> Any:
        assert client is unscoped and workflow_id == "thread"
        order.append("query")
        return state

    monkeypatch.setattr(_agui, "_state", asked)
    gateway = SimpleNamespace(agents=unscoped)
    client = SimpleNamespace(identity=SimpleNamespace(owns=owns))
    return _agui._reader(gateway, client, "thread"), state  # type: ignore[arg-type]


async def test_the_snapshots_ownership_check_and_query_go_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The describe of the ownership check no longer adds its round trip to each run."""
    order: list[str] = []

    async def owns(workflow_id: str) -> None:
        order.append("check")
        await asyncio.sleep(0)  # the describe's round trip
        order.append("checked")

    read, state = _snapshot_reader(monkeypatch, owns, order)
    items = [item async for item in read(_Answered())]
    assert order == ["check", "query", "checked"]
    assert items[:2] == [0, 1] and items[-1].state is state


async def test_a_snapshot_whose_ownership_check_refuses_ends_the_run_with_the_refusal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def owns(workflow_id: str) -> None:
        raise AgentNotFoundError(f"no agent run with workflow id {workflow_id!r}")

    read, _ = _snapshot_reader(monkeypatch, owns, [])
    items: list[Any] = []
    with pytest.raises(AgentNotFoundError):  # RUN_ERROR in its words, as any refusal
        async for item in read(_Answered()):
            items.append(item)
    assert items == [0, 1]  # no end, so no snapshot
