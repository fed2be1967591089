"""Readers of a run's events never take what the run needs from Temporal.

Temporal admits 10 in-flight updates per workflow; a reader that held a poll update
open (0.7.0 and before) took one, so ten readers from other processes or at other
offsets refused the run's approval decisions, session messages and interrupts. Readers
now read by query: however many there are, the run takes its updates.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import (
    Client,
    Interceptor,
    OutboundInterceptor,
    QueryWorkflowInput,
    SignalWorkflowInput,
    StartWorkflowUpdateInput,
)

from smyth_temporal import AgentClient, AgentInput, ApprovalDecision
from smyth_temporal.clients import _events
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from smyth_temporal.types import AgentEvent, TextDelta, TextReset, TurnStarted, session_workflow_id
from tests.agent.test_events import ANSWER, collect
from tests.helpers.live_agents import GatedModel, Operator

SESSION = "s-fifty"
PROCESSES = 10
OFFSETS = (None, 0, 1, 2, 3)
"""Each of ``PROCESSES`` clients (a process each, as far as sharing goes) reads from
each of these offsets: 50 readers, none sharing a reading with one of another client."""


def durable(events: Sequence[AgentEvent]) -> list[AgentEvent]:
    return [e for e in events if not isinstance(e, TextDelta | TextReset)]


async def test_fifty_readers_never_starve_an_approval_a_message_or_an_interrupt(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    steps = [tool_call("sell", symbol="ACME", quantity=5), reply("sold"), reply("answer")]
    model = GatedModel([*steps, reply("never")], held={4})
    workflow_id = session_workflow_id("Operator", "default", SESSION)
    async with agent_worker(client, Operator, model=model, task_queue=task_queue):
        first = asyncio.create_task(agents.send(Operator, SESSION, "Sell ACME"))
        while not await _pending(agents, workflow_id):
            await asyncio.sleep(0.05)

        started = asyncio.Semaphore(0)

        async def read(reader: AgentClient, after: int | None) -> list[AgentEvent]:
            seen: list[AgentEvent] = []
            async for event in reader.events(workflow_id, after=after):
                if not seen:
                    started.release()
                seen.append(event)
            return seen

        processes = [AgentClient(client, task_queue=task_queue) for _ in range(PROCESSES)]
        readers = [
            asyncio.create_task(read(reader, after)) for reader in processes for after in OFFSETS
        ]
        for _ in readers:  # every reader is reading before the run is asked anything
            await asyncio.wait_for(started.acquire(), 60)

        async with asyncio.timeout(60):
            await agents.decide(workflow_id, ApprovalDecision(approved=True, by="bob"))
            sold = await first
            answered = await agents.send(Operator, SESSION, "Any news?")
            held = asyncio.create_task(agents.send(Operator, SESSION, "Take your time"))
            while 4 not in model.waiting:
                await asyncio.sleep(0.05)
            interrupted = await agents.interrupt(workflow_id, reason="enough", by="alice")
            await held
            await agents.close_session(Operator, SESSION)
            seen = await asyncio.gather(*readers)

    assert sold is not None and sold.text == "sold"
    assert answered is not None and answered.text == "answer"
    assert interrupted.status == "thinking"
    # Every reader read to the end of the session, each from its own offset.
    everything = durable(seen[0])
    assert everything[-1].kind == "run_finished"
    for index, events in enumerate(seen):
        after = OFFSETS[index % len(OFFSETS)]
        expected = [e for e in everything if after is None or e.offset > after]
        assert durable(events) == expected


async def _pending(agents: AgentClient, workflow_id: str) -> bool:
    try:
        return bool((await agents.state(workflow_id)).pending_approvals)
    except Exception:  # the session's first message is still on its way
        return False


async def test_a_turn_whose_provider_cannot_stream_is_not_held_back(
    client: Client,
    agents: AgentClient,
    task_queue: str,
    ledger: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GatedModel only completes: the turns name a live channel nobody starts. Their
    # messages must not wait for it (with the drain wait made endless, they would).
    monkeypatch.setattr(_events, "LIVE_DRAIN", timedelta(hours=1))
    model = GatedModel([tool_call("get_quote", symbol="ACME"), reply(ANSWER)], held=set())
    async with agent_worker(client, Operator, model=model, task_queue=task_queue):
        handle = await agents.start(Operator, AgentInput(prompt="How is ACME?"))
        events = await asyncio.wait_for(collect(agents, handle.id), 60)
    assert [e for e in events if isinstance(e, TurnStarted) and e.live]
    assert not [e for e in events if isinstance(e, TextDelta)]
    assert events[-1].kind == "run_finished" and events[-1].output == ANSWER


class _Calls(Interceptor):
    """Counts the calls a client makes, by workflow id (queries, updates and signals)."""

    def __init__(self) -> None:
        self.by_workflow: Counter[str] = Counter()

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        return _Counting(next, self.by_workflow)


class _Counting(OutboundInterceptor):
    def __init__(self, next: OutboundInterceptor, calls: Counter[str]) -> None:
        super().__init__(next)
        self.calls = calls

    async def query_workflow(self, input: QueryWorkflowInput) -> Any:
        self.calls[input.id] += 1
        return await super().query_workflow(input)

    async def start_workflow_update(self, input: StartWorkflowUpdateInput) -> Any:
        self.calls[input.id] += 1
        return await super().start_workflow_update(input)

    async def signal_workflow(self, input: SignalWorkflowInput) -> None:
        self.calls[input.id] += 1
        await super().signal_workflow(input)


async def test_a_turn_over_before_the_readers_offset_costs_its_live_channel_no_call(
    client: Client, task_queue: str, ledger: Path
) -> None:
    # A reader of the next reply reads a few events back (to find a turn it resumes
    # in): the turns there are over for it, their text skipped. Reading their channels
    # (a closed channel's read replays it on a worker) only delayed the reply.
    calls = _Calls()
    config = client.config()
    config["interceptors"] = [*config["interceptors"], calls]
    agents = AgentClient(Client(**config), task_queue=task_queue)
    model = ScriptedModel([reply(ANSWER), reply("Bye now.")], piece_delay=0.01)
    async with agent_worker(client, Operator, model=model, task_queue=task_queue):
        first = [c async for c in agents.send(Operator, "s-skip", "How is ACME?", stream=True)]
        session = session_workflow_id("Operator", "default", "s-skip")
        channels = {workflow_id for workflow_id in calls.by_workflow if workflow_id != session}
        assert channels, "the first reply was not read from a live channel"
        calls.by_workflow.clear()
        second = [c async for c in agents.send(Operator, "s-skip", "Thanks", stream=True)]
    assert "".join(c.text for c in first) == ANSWER
    assert "".join(c.text for c in second) == "Bye now."
    assert {workflow_id: calls.by_workflow[workflow_id] for workflow_id in channels} == {
        workflow_id: 0 for workflow_id in channels
    }
