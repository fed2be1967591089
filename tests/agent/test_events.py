"""The event stream of a run on a real dev server: what it carries, in order, once.

Streamed text is a view: its deltas concatenate to the message in history. Readers
resume from an offset, share one poll per process, and go on across continue-as-new.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle
from temporalio.service import RPCError, RPCStatusCode

from smyth_temporal import AgentClient, AgentInput, InvalidInterruptError
from smyth_temporal.agent.tooling import idempotency_key
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from smyth_temporal.types import (
    AgentEvent,
    MessageCompleted,
    TextAssembler,
    TextDelta,
    TextReset,
    ToolCallFinished,
    ToolCallScheduled,
    TurnStarted,
)
from smyth_temporal.types.live import live_workflow_id
from tests.helpers.agents import Analyst
from tests.helpers.live_agents import GatedModel, HalfWritten, Operator

ANSWER = "ACME trades at 101.5, up two percent on the week; nothing to do."


async def collect(
    agents: AgentClient, workflow_id: str, after: int | None = None
) -> list[AgentEvent]:
    return [event async for event in agents.events(workflow_id, after=after)]


def durable(events: Sequence[AgentEvent]) -> list[AgentEvent]:
    """The events of the run's own stream (not its turns' live text)."""
    return [e for e in events if not isinstance(e, TextDelta | TextReset)]


def kinds(events: Sequence[AgentEvent]) -> list[str]:
    return [e.kind for e in events if e.kind not in ("status", "usage", "text_delta")]


async def test_a_run_streams_its_turns_tools_and_text_in_order(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = ScriptedModel([tool_call("get_quote", symbol="ACME"), reply(ANSWER)], piece_delay=0.05)
    async with agent_worker(client, Analyst, model=model, task_queue=task_queue):
        handle = await agents.start(Analyst, AgentInput(prompt="How is ACME?"))
        events = await collect(agents, handle.id)
        result = await agents.result(handle.id)

    assert kinds(events) == [
        "run_started",
        "message",  # system
        "message",  # user
        "turn_started",
        "message",  # assistant: the call
        "tool_call",
        "tool_result",
        "message",  # the tool's result
        "turn_finished",
        "turn_started",
        "message",  # the answer
        "turn_finished",
        "run_finished",
    ]
    offsets = [e.offset for e in durable(events)]
    assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
    # Text comes from each turn's live channel, placed after the run's event before it.
    for before, event in itertools.pairwise(events):
        if isinstance(event, TextDelta):
            assert event.offset == before.offset
    assert {e.run_id for e in events} == {handle.result_run_id}
    scheduled = next(e for e in events if isinstance(e, ToolCallScheduled))
    assert scheduled.idempotency_key == idempotency_key(
        handle.id, handle.first_execution_run_id or "", 1, scheduled.call.id
    )
    finished = next(e for e in events if isinstance(e, ToolCallFinished))
    assert (finished.name, finished.content, finished.error) == ("get_quote", "101.5", False)
    # The answer was streamed in pieces that make up exactly the message in history.
    answer = [e for e in events if isinstance(e, MessageCompleted)][-1]
    deltas = [e for e in events if isinstance(e, TextDelta) and e.message_id == answer.message_id]
    assert len(deltas) > 1 and all(e.attempt == 1 for e in deltas)
    assembler = TextAssembler()
    for each in deltas:
        assembler.add(each)
    assert assembler.text(answer.message_id or "") == ANSWER == result.output
    assert events.index(deltas[-1]) < events.index(answer)  # the text before its message
    # None of it is in the agent's history: the deltas went to the live channel, which
    # the model call closed when it answered.
    history = await client.get_workflow_handle(handle.id).fetch_history()
    assert not [
        e for e in history.events if e.HasField("workflow_execution_signaled_event_attributes")
    ]
    turn = next(
        e for e in events if isinstance(e, TurnStarted) and e.message_id == answer.message_id
    )
    assert turn.live is not None
    channel = await client.get_workflow_handle(turn.live.workflow_id).describe()
    assert (channel.workflow_type, channel.status) == (
        "smyth.live",
        WorkflowExecutionStatus.COMPLETED,
    )
    statuses = [e.status for e in events if e.kind == "status"]
    assert statuses[-1] == "completed" and "thinking" in statuses and "acting" in statuses


async def test_a_reader_resumes_after_the_last_offset_it_saw(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = ScriptedModel([tool_call("get_quote", symbol="ACME"), reply(ANSWER)])
    async with agent_worker(client, Analyst, model=model, task_queue=task_queue):
        handle = await agents.start(Analyst, AgentInput(prompt="How is ACME?"))
        everything = await collect(agents, handle.id)
        cut = everything[len(everything) // 2].offset
        rest = await collect(agents, handle.id, after=cut)
    assert durable(rest) == [e for e in durable(everything) if e.offset > cut]


async def test_a_reader_resuming_mid_message_reads_its_text_again_after_a_reset(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = ScriptedModel([reply(ANSWER)], piece_delay=0.1)
    async with agent_worker(client, Analyst, model=model, task_queue=task_queue):
        handle = await agents.start(Analyst, AgentInput(prompt="How is ACME?"))
        seen: list[AgentEvent] = []
        async for event in agents.events(handle.id):
            seen.append(event)
            if sum(isinstance(e, TextDelta) for e in seen) == 2:
                break  # a reader that goes away mid-message
        rest = await collect(agents, handle.id, after=seen[-1].offset)
    assert isinstance(rest[0], TextReset) and rest[0].message_id == seen[-1].message_id
    assembler = TextAssembler()
    for event in [*seen, *rest]:
        assembler.add(event)
    assert assembler.text(seen[-1].message_id or "") == ANSWER
    assert durable(rest) == durable([e for e in rest if e.offset > seen[-1].offset])


async def test_readers_in_one_process_share_one_reading_and_hold_no_update(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = GatedModel([tool_call("get_quote", symbol="ACME"), reply(ANSWER)], held={2})
    async with agent_worker(client, Operator, model=model, task_queue=task_queue):
        handle = await agents.start(Operator, AgentInput(prompt="How is ACME?"))
        readers = [asyncio.create_task(collect(agents, handle.id)) for _ in range(20)]
        while 2 not in model.waiting:
            await asyncio.sleep(0.05)
        model.release.set()
        seen = await asyncio.gather(*readers)
        history = await client.get_workflow_handle(handle.id).fetch_history()
    assert all(each == seen[0] for each in seen)
    assert kinds(seen[0])[-1] == "run_finished"
    # Readers read by query: not one update of the run (nor a history event) is theirs.
    assert not [
        e
        for e in history.events
        if e.HasField("workflow_execution_update_accepted_event_attributes")
    ]


async def test_an_interrupt_from_the_client_and_a_refusal_when_idle(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = GatedModel([tool_call("get_quote", symbol="ACME"), reply("never")], held={2})
    async with agent_worker(client, Operator, model=model, task_queue=task_queue):
        handle = await agents.start(Operator, AgentInput(prompt="How is ACME?"))
        while 2 not in model.waiting:
            await asyncio.sleep(0.05)
        outcome = await agents.interrupt(handle.id, reason="wrong ticker", by="alice")
        result = await agents.result(handle.id)
        with pytest.raises(InvalidInterruptError, match="the run has finished"):
            await agents.interrupt(handle.id)
    assert outcome.status == "thinking"
    assert result.status == "interrupted"


async def test_a_session_reply_streams_as_it_is_written(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    # A pause between words, so the first one is published alone and more follow.
    steps = [tool_call("get_quote", symbol="ACME"), reply(ANSWER), reply("Bye now.")]
    model = ScriptedModel(steps, piece_delay=0.05)
    async with agent_worker(client, Operator, model=model, task_queue=task_queue):
        stream = agents.send(Operator, "s-stream", "How is ACME?", stream=True)
        chunks = [chunk async for chunk in stream]
        second = agents.send(Operator, "s-stream", "Thanks", stream=True)
        more = [chunk async for chunk in second]
    assert len(chunks) > 1 and not any(c.reset for c in chunks)
    assert "".join(c.text for c in chunks) == ANSWER
    assert stream.reply is not None and stream.reply.text == ANSWER
    assert "".join(c.text for c in more) == "Bye now."
    assert second.reply is not None and second.reply.number == 2


async def test_nobody_watching_starts_no_channel_and_a_late_reader_gets_the_text_so_far(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = HalfWritten([reply(ANSWER), reply(ANSWER)])
    async with agent_worker(client, Operator, model=model, task_queue=task_queue):
        # Run to the end with nobody watching: the turn streamed to no channel.
        model.release.set()
        unwatched = await agents.start(Operator, AgentInput(prompt="How is ACME?"))
        assert (await agents.result(unwatched.id)).output == ANSWER
        with pytest.raises(RPCError) as missing:
            await client.get_workflow_handle(channel_of(unwatched)).describe()
        assert missing.value.status == RPCStatusCode.NOT_FOUND

        # The first word is written before anyone reads: a reader that comes then gets
        # it too, and then the rest.
        model.release.clear()
        model.written.clear()
        handle = await agents.start(Operator, AgentInput(prompt="How is ACME?"))
        await model.written.wait()
        with pytest.raises(RPCError):
            await client.get_workflow_handle(channel_of(handle)).describe()
        reader = asyncio.create_task(collect(agents, handle.id))
        while not await is_running(client, channel_of(handle)):
            await asyncio.sleep(0.05)
        model.release.set()
        events = await reader
    assembler = TextAssembler()
    for event in events:
        assembler.add(event)
    answer = [e for e in events if isinstance(e, MessageCompleted)][-1]
    assert assembler.text(answer.message_id or "") == ANSWER
    channel = await client.get_workflow_handle(channel_of(handle)).describe()
    assert channel.status == WorkflowExecutionStatus.COMPLETED


def channel_of(handle: WorkflowHandle[Any, Any]) -> str:
    """The live channel of a run's first turn."""
    return live_workflow_id(handle.id, f"{handle.result_run_id}/1")


async def is_running(client: Client, workflow_id: str) -> bool:
    try:
        described = await client.get_workflow_handle(workflow_id).describe()
    except RPCError:
        return False
    return described.status == WorkflowExecutionStatus.RUNNING
