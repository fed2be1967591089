"""A worker process SIGKILLed mid-run, and a fresh one that finishes the run.

The workers are real processes (``tests.helpers.worker_process``) so that the kill is a real
crash: no ``finally``, no graceful shutdown, the activity in flight simply vanishes.
Every tool execution and model call lands in a JSON-lines ledger with its idempotency
key, attempt and pid; the assertions count side effects there.

Timings are printed (``pytest -s``) for information only: they depend on the load of
the machine, so nothing here asserts them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any, Protocol

import pytest
from temporalio.api.enums.v1 import EventType, TimeoutType
from temporalio.client import Client

from smyth_temporal import AgentClient, AgentInput
from smyth_temporal.agent.tooling import idempotency_key
from smyth_temporal.plugin import DEFAULT_HEARTBEAT_THROTTLE
from smyth_temporal.testing import ScriptedModel, agent_worker, new_task_queue
from smyth_temporal.tools import DEFAULT_TOOL_HEARTBEAT_TIMEOUT
from tests.helpers.agents import Analyst, read_ledger
from tests.helpers.worker_process import RecoveryProbe, WorkerProcess, spawn_worker

Entry = dict[str, Any]

# Generous: the machine may be shared with other test runs. Recovery itself takes
# about heartbeat timeout + retry interval + the re-run + the sticky queue timeout.
EVENT_TIMEOUT = 60.0
RESULT_TIMEOUT = 120.0


class Spawn(Protocol):
    async def __call__(self, script: str) -> WorkerProcess: ...


@pytest.fixture
async def spawn(
    client: Client, task_queue: str, ledger: Path, tmp_path: Path
) -> AsyncIterator[Spawn]:
    """Start worker processes on this test's task queue; all are killed at teardown."""
    processes: list[WorkerProcess] = []

    async def start(script: str) -> WorkerProcess:
        process = await spawn_worker(
            address=client.service_client.config.target_host,
            task_queue=task_queue,
            ledger=ledger,
            script=script,
            log=tmp_path / f"worker-{len(processes)}.log",
        )
        processes.append(process)
        return process

    try:
        yield start
    finally:
        for process in processes:
            await process.stop()


async def wait_for_entry(ledger: Path, predicate: Callable[[Entry], bool]) -> Entry:
    """The first ledger entry that matches, waiting (polling) for it to appear."""
    deadline = time.monotonic() + EVENT_TIMEOUT
    while time.monotonic() < deadline:
        found = next((e for e in read_ledger(ledger) if predicate(e)), None)
        if found is not None:
            return found
        await asyncio.sleep(0.02)
    raise AssertionError(f"no matching ledger entry after {EVENT_TIMEOUT}s: {read_ledger(ledger)}")


def entries(ledger: Path, tool: str, **fields: Any) -> list[Entry]:
    return [
        e
        for e in read_ledger(ledger)
        if e["tool"] == tool and all(e.get(k) == v for k, v in fields.items())
    ]


def report(name: str, killed_at: float, **moments: float) -> None:
    timings = ", ".join(f"{what} {at - killed_at:.2f}s" for what, at in moments.items())
    print(f"\n[{name}] after SIGKILL: {timings}")


async def test_kill_during_a_tool_call(agents: AgentClient, ledger: Path, spawn: Spawn) -> None:
    first = await spawn("crash-tool")
    handle = await agents.start(Analyst, AgentInput(prompt="Buy ACME, then look around"))
    key = idempotency_key(handle.id, handle.first_execution_run_id or "", 4, "call_4_0")

    # Steps 1-3 (quote, order, note) are done and step 4's slow lookup is running.
    await wait_for_entry(ledger, lambda e: e["tool"] == "slow_lookup.start")
    state = await agents.state(handle.id)
    assert state.step == 4
    assert [c.name for c in state.pending_tool_calls] == ["slow_lookup"]

    killed_at = first.kill()
    second = await spawn("crash-tool")
    ready_at = time.monotonic()
    rerun = await wait_for_entry(ledger, lambda e: e["pid"] == second.pid)
    resumed_at = time.monotonic()
    result = await asyncio.wait_for(agents.result(handle.id), RESULT_TIMEOUT)
    report(
        "tool in flight",
        killed_at,
        replacement_ready=ready_at,
        first_progress=resumed_at,
        completed=time.monotonic(),
    )

    assert result.status == "completed"
    assert result.output == (
        '101.5 | bought 3 ACME | {"saved":true,"chars":13} | ACME volume is high | 42.0'
    )
    assert result.steps == 6
    assert result.usage.tool_calls == 5

    # Completed before the kill: ran exactly once, on the first worker.
    for tool in ("place_order", "write_note"):
        [done] = entries(ledger, tool)
        assert done["pid"] == first.pid
    [acme] = entries(ledger, "get_quote", symbol="ACME")
    assert acme["pid"] == first.pid

    # In flight at the kill: ran again on the new worker, with the same idempotency
    # key and the next attempt number; only the re-run got to finish.
    starts = entries(ledger, "slow_lookup.start")
    assert [(e["pid"], e["attempt"], e["key"]) for e in starts] == [
        (first.pid, 1, key),
        (second.pid, 2, key),
    ]
    assert rerun == starts[1]  # the new worker's first act was the re-run
    [finished] = entries(ledger, "slow_lookup")
    assert (finished["pid"], finished["attempt"]) == (second.pid, 2)

    # The step counter went on from where the dead worker left it: the new worker
    # asked the model for steps 5 and 6 only, and the next call got step 5's key.
    model_steps = [(e["step"], e["pid"]) for e in entries(ledger, "model.start")]
    assert model_steps == [(step, first.pid) for step in range(1, 5)] + [
        (5, second.pid),
        (6, second.pid),
    ]
    [globex] = entries(ledger, "get_quote", symbol="GLOBEX")
    assert (globex["pid"], globex["key"]) == (
        second.pid,
        idempotency_key(handle.id, handle.first_execution_run_id or "", 5, "call_5_0"),
    )

    state = await agents.state(handle.id)
    assert (state.status, state.step, state.pending_tool_calls) == ("completed", 6, [])


async def test_kill_during_a_model_call(agents: AgentClient, ledger: Path, spawn: Spawn) -> None:
    first = await spawn("crash-model")
    handle = await agents.start(Analyst, AgentInput(prompt="Buy ACME"))

    # Steps 1-2 (quote, order) are done; the model is thinking about step 3.
    await wait_for_entry(ledger, lambda e: e["tool"] == "model.start" and e["step"] == 3)
    assert (await agents.state(handle.id)).status == "thinking"

    killed_at = first.kill()
    second = await spawn("crash-model")
    ready_at = time.monotonic()
    await wait_for_entry(ledger, lambda e: e["pid"] == second.pid)
    resumed_at = time.monotonic()
    result = await asyncio.wait_for(agents.result(handle.id), RESULT_TIMEOUT)
    report(
        "model in flight",
        killed_at,
        replacement_ready=ready_at,
        first_progress=resumed_at,
        completed=time.monotonic(),
    )

    assert result.status == "completed"
    assert result.output == '101.5 | bought 3 ACME | {"saved":true,"chars":13}'
    assert result.steps == 4
    assert result.usage.requests == 4  # the lost model attempt is not counted twice

    for tool in ("get_quote", "place_order"):
        [done] = entries(ledger, tool)
        assert done["pid"] == first.pid
    # The model turn in flight ran again (attempt 2) on the new worker, once.
    step3 = [(e["pid"], e["attempt"]) for e in entries(ledger, "model.start", step=3)]
    assert step3 == [(first.pid, 1), (second.pid, 2)]
    assert [(e["pid"], e["step"]) for e in entries(ledger, "model")] == [
        (first.pid, 1),
        (first.pid, 2),
        (second.pid, 3),
        (second.pid, 4),
    ]
    # The tool it asked for ran once, keyed with step 3.
    [note] = entries(ledger, "write_note")
    assert (note["pid"], note["key"]) == (
        second.pid,
        idempotency_key(handle.id, handle.first_execution_run_id or "", 3, "call_3_0"),
    )


async def test_decision_sent_while_no_worker_runs(
    client: Client, task_queue: str, ledger: Path, spawn: Spawn
) -> None:
    """Kill the worker while the agent waits for approval, decide with no worker up,
    then a new worker resumes and runs the approved tool exactly once."""
    agents = AgentClient(client, task_queue=task_queue)
    first = await spawn("approval-sell")
    handle = await agents.start("Trader", AgentInput(prompt="Sell ACME"))
    for _ in range(400):
        state = await agents.state(handle.id)
        if state.pending_approvals:
            break
        await asyncio.sleep(0.05)
    request = state.pending_approvals[0]
    first.kill()

    # Listing needs no worker: pending requests travel in the run's memo.
    for _ in range(100):
        listed = [p for p in await agents.pending_approvals() if p.workflow_id == handle.id]
        if listed:
            break
        await asyncio.sleep(0.1)
    assert [p.request.id for p in listed] == [request.id]

    # No worker runs: the update could not be validated, so the decision goes as a
    # signal, which the server stores in history until a worker takes it.
    await agents.approve(handle.id, request.id, by="ivan", wait=False)
    history = await client.get_workflow_handle(handle.id).fetch_history()
    signaled = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
    assert [e.event_type for e in history.events].count(signaled) == 1
    assert [e for e in read_ledger(ledger) if e["tool"] == "sell"] == []

    await spawn("approval-sell")
    result = await asyncio.wait_for(agents.result(handle.id), RESULT_TIMEOUT)
    sales = [e for e in read_ledger(ledger) if e["tool"] == "sell"]
    assert result.output == "sold 7 ACME"
    assert len(sales) == 1
    assert sales[0]["pid"] != first.pid
    final = await agents.state(handle.id)
    assert final.approvals[0].decision is not None
    assert final.approvals[0].decision.by == "ivan"


async def test_an_escalation_timer_pending_at_a_sigkill_still_applies(
    client: Client, task_queue: str, ledger: Path, spawn: Spawn
) -> None:
    """Kill the worker while a request waits for its escalation step (a durable timer,
    not a worker's poll): a new worker applies the step once, then the deadline
    rejects the call, which never runs."""
    agents = AgentClient(client, task_queue=task_queue)
    first = await spawn("approval-hotfix")
    handle = await agents.start("Treasurer", AgentInput(prompt="Patch the db"))
    for _ in range(400):
        state = await agents.state(handle.id)
        if state.pending_approvals:
            break
        await asyncio.sleep(0.05)
    [request] = state.pending_approvals
    assert request.escalated_at == []
    first.kill()

    await spawn("approval-hotfix")
    result = await asyncio.wait_for(agents.result(handle.id), RESULT_TIMEOUT)
    [expired] = (await agents.state(handle.id)).approvals
    assert expired.id == request.id and expired.status == "expired"
    assert len(expired.escalated_at) == 1
    assert expired.escalated_at[0] - expired.requested_at >= timedelta(seconds=2)
    assert "approval request expired" in result.output
    assert [e for e in read_ledger(ledger) if e["tool"] == "hotfix"] == []


async def test_kill_during_a_blocking_tool_with_the_defaults(
    agents: AgentClient, client: Client, ledger: Path, spawn: Spawn
) -> None:
    """A plain ``def`` tool with every option the SDK's default, in flight at a SIGKILL:
    the server declares the attempt lost by its heartbeat timeout (not the 5-minute
    start-to-close one) and a replacement re-runs it once, with the same key."""
    first = await spawn("crash-blocking")
    handle = await agents.start(RecoveryProbe, AgentInput(prompt="Look up ACME"))
    key = idempotency_key(handle.id, handle.first_execution_run_id or "", 2, "call_2_0")
    await wait_for_entry(ledger, lambda e: e["tool"] == "blocking_lookup.start")

    killed_at = first.kill()
    second = await spawn("crash-blocking")
    await wait_for_entry(ledger, lambda e: e["pid"] == second.pid)
    rerun_after = time.monotonic() - killed_at
    result = await asyncio.wait_for(agents.result(handle.id), RESULT_TIMEOUT)
    report("blocking tool, SDK defaults", killed_at, completed=time.monotonic())
    # A hang guard only: the recovery time itself is measured by bench.crash_recovery.
    assert rerun_after < 20

    assert result.status == "completed"
    assert result.output == "101.5 | ACME looked up, blocking | 42.0"
    starts = entries(ledger, "blocking_lookup.start")
    assert [(e["pid"], e["attempt"], e["key"]) for e in starts] == [
        (first.pid, 1, key),
        (second.pid, 2, key),
    ]
    [finished] = entries(ledger, "blocking_lookup")
    assert (finished["pid"], finished["attempt"], finished["key"]) == (second.pid, 2, key)

    # The SDK's defaults went out with the command, and the lost attempt ended by its
    # heartbeat timeout: the short path, not the 5-minute start-to-close timeout.
    history = await client.get_workflow_handle(handle.id).fetch_history()
    [scheduled_event] = [
        e
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name
        == "smyth.tool.blocking_lookup"
    ]
    scheduled = scheduled_event.activity_task_scheduled_event_attributes
    assert scheduled.heartbeat_timeout.ToTimedelta() == DEFAULT_TOOL_HEARTBEAT_TIMEOUT
    assert scheduled.heartbeat_timeout.ToTimedelta() == timedelta(seconds=2)
    assert scheduled.retry_policy.initial_interval.ToTimedelta() == timedelta(milliseconds=250)
    [started] = [
        e.activity_task_started_event_attributes
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
        and e.activity_task_started_event_attributes.scheduled_event_id == scheduled_event.event_id
    ]
    assert started.attempt == 2
    timeout_type = started.last_failure.timeout_failure_info.timeout_type
    assert timeout_type == TimeoutType.TIMEOUT_TYPE_HEARTBEAT


async def test_a_healthy_blocking_tool_outlives_the_heartbeat_timeout(
    agents: AgentClient, ledger: Path, spawn: Spawn
) -> None:
    """A plain ``def`` tool that blocks for 10 s (sleeping 5 s, then spinning the CPU
    for 5 s) under the default 2 s heartbeat timeout runs exactly once: it runs in a
    thread, so the worker's event loop keeps heartbeating for it."""
    await spawn("blocking-10s")
    handle = await agents.start(RecoveryProbe, AgentInput(prompt="Look up ACME slowly"))
    result = await asyncio.wait_for(agents.result(handle.id), RESULT_TIMEOUT)

    assert result.output == "ACME looked up, blocking"
    assert [e["attempt"] for e in entries(ledger, "blocking_lookup.start")] == [1]
    [finished] = entries(ledger, "blocking_lookup")
    assert finished["attempt"] == 1
    assert finished["spins"] > 0


async def test_plugin_sends_heartbeats_often_unless_the_user_chose(client: Client) -> None:
    """temporalio holds a heartbeat back for 80% of the timeout (1.6 s of 2 s); the
    plugin has workers send one every 0.5 s, unless ``Worker()`` was given a value."""
    model = ScriptedModel([])
    default = agent_worker(client, Analyst, model=model, task_queue=new_task_queue())
    active = default.config(active_config=True)
    assert active["max_heartbeat_throttle_interval"] == DEFAULT_HEARTBEAT_THROTTLE
    assert DEFAULT_HEARTBEAT_THROTTLE <= DEFAULT_TOOL_HEARTBEAT_TIMEOUT / 4
    chosen = agent_worker(
        client,
        Analyst,
        model=model,
        task_queue=new_task_queue(),
        max_heartbeat_throttle_interval=timedelta(seconds=5),
    )
    assert chosen.config(active_config=True)["max_heartbeat_throttle_interval"] == timedelta(
        seconds=5
    )
