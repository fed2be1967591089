"""Pause and resume agents with Temporal's Workflow Pause, on a real dev server.

The session's dev server runs with ``frontend.WorkflowPauseEnabled=true`` (what
``smyth dev`` passes). A paused agent makes no model or tool call: the model call in
flight finishes, but the tool it asks for waits until the run is resumed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from smyth_temporal import (
    AgentClient,
    AgentInput,
    AgentNotFoundError,
    AgentPausedError,
    PauseUnavailableError,
)
from smyth_temporal.cli.main import main
from smyth_temporal.clients import is_paused_execution
from smyth_temporal.clients._pause import is_paused
from smyth_temporal.clients._visibility import executions
from smyth_temporal.devserver import find_binary
from smyth_temporal.testing import agent_worker, reply, tool_call
from tests.helpers.agents import read_ledger
from tests.helpers.cli_support import Outcome
from tests.helpers.live_agents import GatedModel, Operator


async def until(check: Callable[[], Awaitable[bool]], what: str) -> None:
    for _ in range(600):  # a bound on the polling, not a timing assertion
        if await check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"never saw: {what}")


async def _listed(client: Client, query: str) -> bool:
    return [e async for e in executions(client, query)] != []


def quote_then_answer() -> GatedModel:
    """First model call held until released; it asks for a quote, then answers."""
    return GatedModel([tool_call("get_quote", symbol="ACME"), reply("ACME at 42.")], held={1})


async def test_a_paused_agent_makes_no_calls_and_resumes_where_it_was(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = quote_then_answer()
    async with agent_worker(client, Operator, model=model, task_queue=task_queue):
        handle = await agents.start(Operator, "Quote ACME.")
        await until(waiting(model), "the first model call")
        assert await agents.pause(handle.id, reason="vendor outage") is True
        assert await agents.pause(handle.id) is False  # paused already: nothing to do
        assert await is_paused(client, handle.id)

        model.release.set()  # the call in flight finishes; its result waits
        # The worker would run the tool within ~100 ms if the run were not paused;
        # while paused nothing is dispatched, however long we look.
        await asyncio.sleep(1.5)
        assert read_ledger(ledger) == []
        assert model.calls == 1
        with pytest.raises(AgentPausedError, match="is paused"):
            await agents.state(handle.id)
        assert await agents.status(handle.id) is not None  # open, not gone
        # Listings go on with a paused run in the namespace (temporalio 1.35's own
        # list_workflows raises on its status): storage gc, approvals, the gateway.
        query = f"WorkflowId = '{handle.id}' AND ExecutionStatus = 'Paused'"
        await until(lambda: _listed(client, query), "the paused run in visibility")
        listed = [e async for e in executions(client)]
        assert any(e.id == handle.id and is_paused_execution(e) for e in listed)
        assert all(e.status is not None for e in listed)
        await agents.pending_approvals()

        assert await agents.resume(handle.id) is True
        assert await agents.resume(handle.id) is False
        result = await agents.result(handle.id)
    assert result.output == "ACME at 42."
    assert [e["tool"] for e in read_ledger(ledger)] == ["get_quote"]
    assert model.calls == 2  # one call per turn: none was repeated
    assert not await is_paused(client, handle.id)


async def test_pause_and_resume_by_tenant_and_agent(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    # One worker (and model) per tenant, so each run's model calls can be counted.
    models = {tenant: quote_then_answer() for tenant in ("acme", "globex")}
    queues = {tenant: f"{task_queue}-{tenant}" for tenant in models}
    async with (
        agent_worker(client, Operator, model=models["acme"], task_queue=queues["acme"]),
        agent_worker(client, Operator, model=models["globex"], task_queue=queues["globex"]),
    ):
        handles = {
            tenant: await agents.start(
                Operator, AgentInput(prompt="Quote ACME.", tenant=tenant), task_queue=queue
            )
            for tenant, queue in queues.items()
        }
        for model in models.values():
            await until(waiting(model), "the first model calls")
        await _visible(agents, handles["acme"].id)

        paused = await agents.pause_agents(tenant="acme")
        assert handles["acme"].id in paused.changed
        assert handles["globex"].id not in paused.changed + paused.unchanged
        assert await is_paused(client, handles["acme"].id)
        assert not await is_paused(client, handles["globex"].id)

        for model in models.values():
            model.release.set()
        assert (await agents.result(handles["globex"].id)).output == "ACME at 42."
        assert models["acme"].calls == 1  # held by the pause

        await _visible(agents, handles["acme"].id, paused=True)
        resumed = await agents.resume_agents(agent=Operator)
        assert handles["acme"].id in resumed.changed
        assert (await agents.result(handles["acme"].id)).output == "ACME at 42."


async def test_pause_refuses_unknown_and_finished_runs(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    with pytest.raises(AgentNotFoundError, match="no agent run with workflow id 'nope'"):
        await agents.pause("nope")
    with pytest.raises(AgentNotFoundError, match="no agent run with workflow id 'nope'"):
        await agents.resume("nope")
    model = GatedModel([reply("Done.")], held=set())
    async with agent_worker(client, Operator, model=model, task_queue=task_queue):
        done = await agents.run(Operator, "Say done.", id=f"done-{task_queue}")
    assert done.output == "Done."
    with pytest.raises(AgentNotFoundError, match="has finished"):
        await agents.pause(f"done-{task_queue}")
    with pytest.raises(AgentNotFoundError, match="has finished"):
        await agents.resume(f"done-{task_queue}")


async def test_a_server_without_workflow_pause_is_named() -> None:
    # A dev server as Temporal ships it: Workflow Pause is off.
    env = await WorkflowEnvironment.start_local(dev_server_existing_path=find_binary("temporal"))
    try:
        agents = AgentClient(env.client, task_queue="q")
        handle = await env.client.start_workflow("Nobody", id="w", task_queue="q")
        with pytest.raises(PauseUnavailableError, match="WorkflowPauseEnabled=true"):
            await agents.pause(handle.id)
    finally:
        await env.shutdown()


Smyth = Callable[..., Awaitable[Outcome]]


@pytest.fixture
def smyth(capsys: pytest.CaptureFixture[str], reset_structlog: None) -> Smyth:
    """Run ``smyth ARGS...`` in-process; returns exit code, stdout and stderr."""

    async def call(*args: str) -> Outcome:
        capsys.readouterr()
        code = await asyncio.to_thread(main, list(args))  # main() runs its own loop
        captured = capsys.readouterr()
        return Outcome(code, captured.out, captured.err)

    return call


async def test_cli_pause_and_resume(
    client: Client, agents: AgentClient, task_queue: str, address: str, smyth: Smyth
) -> None:
    model = quote_then_answer()
    async with agent_worker(client, Operator, model=model, task_queue=task_queue):
        handle = await agents.start(Operator, "Quote ACME.")
        connection = ("--address", address)
        paused = await smyth("pause", handle.id, "--reason", "look", *connection)
        assert (paused.code, paused.out) == (0, f"paused {handle.id}\n"), paused.err
        again = await smyth("pause", handle.id, *connection)
        assert (again.code, again.out) == (0, ""), again.err
        assert "was paused already" in again.err

        state = await smyth("state", handle.id, *connection)
        assert state.code == 1
        assert f"smyth resume {handle.id}" in state.err

        usage = await smyth("pause", *connection)
        assert usage.code == 2
        assert "give a workflow id, or --tenant and/or --agent" in usage.err

        model.release.set()
        await _visible(agents, handle.id, paused=True)
        resumed = await smyth("resume", "--agent", "Operator", *connection)
        assert resumed.code == 0, resumed.err
        assert f"resumed {handle.id}\n" in resumed.out
        assert (await agents.result(handle.id)).output == "ACME at 42."
        none = await smyth("resume", "--tenant", "nobody", *connection)
        assert (none.code, none.out) == (0, "")
        assert "resumed 0 paused run(s) of tenant nobody" in none.err


async def _visible(agents: AgentClient, workflow_id: str, *, paused: bool = False) -> None:
    """Wait until visibility lists the run as running (or paused): bulk pauses read it."""
    status = "Paused" if paused else "Running"

    async def listed() -> bool:
        query = f"WorkflowId = '{workflow_id}' AND ExecutionStatus = '{status}'"
        count = await agents.client.count_workflows(query)
        return count.count == 1

    await until(listed, f"{workflow_id} listed as {status}")


def waiting(model: GatedModel) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return bool(model.waiting)

    return check
