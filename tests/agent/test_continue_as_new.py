"""Continue-as-new: state carried across runs; signals, updates, queries and approval
decisions sent around the switch all land."""

from __future__ import annotations

import asyncio
import contextlib

from temporalio.client import Client

from smyth_temporal import AgentClient, AgentInput, AgentNotFoundError
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from tests.helpers.chains import chain_histories
from tests.helpers.context_agents import HOPS, Relay, Switchboard


async def run_chain(client: Client, workflow_id: str) -> list[str]:
    """The run ids of a workflow's continue-as-new chain, oldest first."""
    return [h.run_id for h in await chain_histories(client, workflow_id)]


async def test_a_long_task_continues_as_new_and_carries_its_state(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    steps = 9
    model = ScriptedModel(
        [*(tool_call("daily_report", day=d) for d in range(1, steps)), reply("relayed")]
    )
    async with agent_worker(client, Relay, model=model, task_queue=task_queue):
        handle = await agents.start(Relay, AgentInput(prompt="Read the reports."))
        result = await agents.result(handle.id)
        state = await agents.state(handle.id)
    assert result.output == "relayed"
    assert result.steps == steps
    # Usage counts every run: one request per step, one tool call per report.
    assert result.usage.requests == steps and result.usage.tool_calls == steps - 1
    runs = await run_chain(client, handle.id)
    assert len(runs) == 5  # a switch after every two steps
    assert state.generation == 5 and state.run_id == runs[-1]
    # The last run's model saw the whole conversation, carried over four switches.
    last = model.requests[-1].messages
    assert [m.name for m in last if m.role == "tool"] == ["daily_report"] * (steps - 1)
    assert last[0].content == "Read the reports."


async def pending_request(agents: AgentClient, workflow_id: str) -> str:
    for _ in range(400):
        with contextlib.suppress(AgentNotFoundError):
            state = await agents.state(workflow_id)
            if state.pending_approvals:
                return state.pending_approvals[0].id
        await asyncio.sleep(0.02)
    raise AssertionError("no approval request")


async def hammer(
    agents: AgentClient, workflow_id: str, stop: asyncio.Event
) -> tuple[list[int], list[int], int]:
    """Signals, updates and queries in a tight loop until ``stop``, by workflow id."""
    pings: list[int] = []
    echoes: list[int] = []
    queries = 0
    number = 0
    while not stop.is_set():
        number += 1
        await agents.signal(workflow_id, "ping", number)
        pings.append(number)
        echoed = await agents.update(workflow_id, "echo", number, result_type=int)
        assert echoed == number
        echoes.append(number)
        state = await agents.state(workflow_id)
        assert state.agent == "Switchboard"
        queries += 1
    return pings, echoes, queries


async def test_signals_updates_queries_and_decisions_around_the_switch(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    model = ScriptedModel([tool_call("place_order", symbol="ACME", quantity=5), reply("done")])
    async with agent_worker(client, Switchboard, model=model, task_queue=task_queue):
        handle = await agents.start(Switchboard, AgentInput(prompt="Buy 5 ACME."))
        request_id = await pending_request(agents, handle.id)
        stop = asyncio.Event()
        traffic = asyncio.create_task(hammer(agents, handle.id, stop))
        # Decide while the agent hops from run to run with the request pending.
        while (await agents.state(handle.id)).generation < HOPS // 2:
            await asyncio.sleep(0.02)
        outcome = await agents.approve(handle.id, request_id, by="alice")
        while (await agents.state(handle.id)).generation < HOPS:
            await asyncio.sleep(0.02)
        stop.set()
        pings, echoes, queries = await traffic
        await agents.signal(handle.id, "release")
        result = await agents.result(handle.id)
        state = await agents.state(handle.id)

    assert outcome.request.status == "approved"
    assert result.output == "done"
    runs = await run_chain(client, handle.id)
    assert len(runs) == HOPS
    # The request made in the first run was decided in a later one and ran once.
    [request] = state.approvals
    assert request.id == request_id and request.decision and request.decision.by == "alice"
    assert model.requests[-1].messages[-1].content == "ordered 5 ACME"
    # Every signal and update landed exactly once, across all the switches.
    assert pings and queries
    assert state.data["pings"] == pings
    assert state.data["echoes"] == echoes
