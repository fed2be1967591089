"""Interrupts and double texting on a real dev server.

An interrupt cancels the model call in flight, lets running tool calls finish (a
side effect is never abandoned half-way), does not start the calls left, and ends a
waiting approval in a rejection. Sessions apply a ``while_busy`` policy to a message
that arrives while they answer another one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError

from smyth_temporal import (
    AgentClient,
    AgentInput,
    AgentNotFoundError,
    AgentState,
    ApprovalDecision,
)
from smyth_temporal.testing import agent_worker, reply, tool_call
from smyth_temporal.types import (
    APPROVAL_UPDATE,
    INTERRUPT_UPDATE,
    SESSION_MESSAGE_UPDATE,
    ApprovalOutcome,
    Interrupt,
    InterruptOutcome,
    SessionMessage,
    SessionReply,
    WhileBusy,
    session_workflow_id,
)
from tests.helpers.agents import read_ledger
from tests.helpers.live_agents import GatedModel, Operator

NOTE = "[The previous turn was interrupted by alice: wrong ticker]"


async def until(check: Callable[[], Awaitable[bool]], what: str) -> None:
    for _ in range(600):  # a bound on the polling, not a timing assertion
        if await check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"never saw: {what}")


def started(ledger: Path, tool: str) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return any(e["tool"] == f"{tool}.start" for e in read_ledger(ledger))

    return check


def flag(test: Callable[[], bool]) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return test()

    return check


async def interrupt(handle: WorkflowHandle[object, object]) -> InterruptOutcome:
    outcome: InterruptOutcome = await handle.execute_update(
        INTERRUPT_UPDATE,
        Interrupt(reason="wrong ticker", by="alice"),
        result_type=InterruptOutcome,
    )
    return outcome


def state_is(
    agents: AgentClient, workflow_id: str, test: Callable[[AgentState], bool]
) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        try:
            return test(await agents.state(workflow_id))
        except AgentNotFoundError:  # the session's first message is still on its way
            return False

    return check


async def test_an_interrupt_cancels_the_model_call_in_flight(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = GatedModel([tool_call("get_quote", symbol="ACME"), reply("never")], held={2})
    async with agent_worker(client, Operator, model=model, task_queue=task_queue):
        handle = await agents.start(Operator, AgentInput(prompt="Trade ACME"))
        await until(flag(lambda: 2 in model.waiting), "the second turn thinking")
        outcome = await interrupt(client.get_workflow_handle(handle.id))
        result = await agents.result(handle.id)
        state = await agents.state(handle.id)
        history = await client.get_workflow_handle(handle.id).fetch_history()

    assert (outcome.status, outcome.step) == ("thinking", 1)
    assert (result.status, result.steps) == ("interrupted", 1)
    assert [e["tool"] for e in read_ledger(ledger)] == ["get_quote"]  # done stays done
    assert state.messages[-1].content == NOTE
    assert any(
        e.HasField("activity_task_cancel_requested_event_attributes") for e in history.events
    )
    await until(flag(lambda: model.cancelled == [2]), "the model call cancelled")


async def test_a_running_side_effect_finishes_and_the_calls_left_are_not_run(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = GatedModel(
        [[tool_call("slow_transfer", amount=5, seconds=1), tool_call("get_quote", symbol="ACME")]],
        held=set(),
    )
    async with agent_worker(client, Operator, model=model, task_queue=task_queue):
        handle = await agents.start(Operator, AgentInput(prompt="Pay and quote"))
        await until(started(ledger, "slow_transfer"), "the transfer running")
        outcome = await interrupt(client.get_workflow_handle(handle.id))
        result = await agents.result(handle.id)
        state = await agents.state(handle.id)

    assert outcome.status == "acting"
    assert result.status == "interrupted"
    assert [e["tool"] for e in read_ledger(ledger)] == ["slow_transfer.start", "slow_transfer.end"]
    transfer, quote, note = state.messages[-3:]
    assert transfer.content == "transferred 5"
    assert quote.content == "Error: not run: the turn was interrupted"
    assert note.content == NOTE
    assert len(model.requests) == 1  # no model turn after the interrupt


async def test_a_read_only_batch_finishes_and_the_next_batch_is_not_run(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    # Two read-only lookups run together; the transfer after them is a batch of its own.
    calls = [
        tool_call("slow_lookup", symbol="ACME", seconds=1),
        tool_call("slow_lookup", symbol="GLOBEX", seconds=1),
        tool_call("slow_transfer", amount=5, seconds=0),
    ]
    model = GatedModel([calls], held=set())
    async with agent_worker(client, Operator, model=model, task_queue=task_queue):
        handle = await agents.start(Operator, AgentInput(prompt="Look, then pay"))
        await until(started(ledger, "slow_lookup"), "the lookups running")
        outcome = await agents.interrupt(handle.id, reason="wrong ticker", by="alice")
        result = await agents.result(handle.id)
        state = await agents.state(handle.id)

    assert (outcome.status, result.status) == ("acting", "interrupted")
    finished = sorted(e["symbol"] for e in read_ledger(ledger) if e["tool"] == "slow_lookup")
    assert finished == ["ACME", "GLOBEX"]  # what started finished
    assert "slow_transfer.start" not in [e["tool"] for e in read_ledger(ledger)]
    acme, globex, transfer, note = state.messages[-4:]
    assert (acme.content, globex.content) == ("ACME volume is high", "GLOBEX volume is high")
    assert transfer.content == "Error: not run: the turn was interrupted"
    assert note.content == NOTE


async def test_an_interrupt_ends_an_approval_wait_in_a_rejection(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = GatedModel([tool_call("sell", symbol="ACME", quantity=5)], held=set())
    async with agent_worker(client, Operator, model=model, task_queue=task_queue):
        handle = await agents.start(Operator, AgentInput(prompt="Sell ACME"))
        await until(state_is(agents, handle.id, lambda s: bool(s.pending_approvals)), "a request")
        outcome = await interrupt(client.get_workflow_handle(handle.id))
        result = await agents.result(handle.id)
        state = await agents.state(handle.id)

    assert (outcome.status, result.status) == ("awaiting_approval", "interrupted")
    [request] = state.approvals
    assert request.status == "rejected"
    assert request.decision is not None and request.decision.by == "system:interrupt"
    assert read_ledger(ledger) == []


async def test_nothing_to_interrupt_is_refused_without_a_trace(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    model = GatedModel([reply("hello")], held=set())
    workflow_id = session_workflow_id("Operator", "default", "s-idle")
    async with agent_worker(client, Operator, model=model, task_queue=task_queue):
        await agents.send(Operator, "s-idle", "Hi")
        workflow = client.get_workflow_handle(workflow_id)
        before = len((await workflow.fetch_history()).events)
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await interrupt(workflow)
        after = len((await workflow.fetch_history()).events)
    assert "nothing to interrupt: the agent is idle" in str(refused.value.cause)
    assert before == after


def accepted(handle: WorkflowHandle[object, object], count: int) -> Callable[[], Awaitable[bool]]:
    """True once the run's history has ``count`` accepted updates."""

    async def check() -> bool:
        events = (await handle.fetch_history()).events
        return (
            sum(e.HasField("workflow_execution_update_accepted_event_attributes") for e in events)
            >= count
        )

    return check


# -- double texting ----------------------------------------------------------------------


async def message(
    client: Client, session: str, text: str, policy: WhileBusy | None = None
) -> SessionReply:
    handle = client.get_workflow_handle(session_workflow_id("Operator", "default", session))
    reply_: SessionReply = await handle.execute_update(
        SESSION_MESSAGE_UPDATE,
        SessionMessage(text=text, while_busy=policy),
        result_type=SessionReply,
    )
    return reply_


async def test_reject_refuses_a_message_while_the_session_is_busy(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    model = GatedModel([reply("first answer"), reply("third answer")], held={1})
    async with agent_worker(client, Operator, model=model, task_queue=task_queue):
        first = asyncio.create_task(agents.send(Operator, "s-reject", "first"))
        await until(flag(lambda: 1 in model.waiting), "the first message thinking")
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await message(client, "s-reject", "second", "reject")
        model.release.set()
        answered = await first
        third = await message(client, "s-reject", "third", "reject")  # idle: accepted
    assert "the session is busy answering message 1" in str(refused.value.cause)
    assert answered is not None and answered.text == "first answer"
    assert (third.number, third.text) == (2, "third answer")  # the refusal took no number


async def test_interrupt_stops_the_current_turn_and_answers_the_new_message(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    model = GatedModel(
        # The cancelled call never reaches the script; the new turn asks at step 2 again.
        [tool_call("get_quote", symbol="ACME"), reply("Lisbon it is")],
        held={2},
    )
    async with agent_worker(client, Operator, model=model, task_queue=task_queue):
        first = asyncio.create_task(agents.send(Operator, "s-int", "Plan Porto"))
        await until(flag(lambda: 2 in model.waiting), "the first message thinking")
        second = await message(client, "s-int", "actually, Lisbon", "interrupt")
        answered = await first
    assert model.cancelled == [2]
    assert answered is not None and answered.number == 1
    assert (second.number, second.text) == (2, "Lisbon it is")
    # The new turn saw the interruption, then the new message.
    last = model.requests[-1].messages
    assert [m.content for m in last[-2:]] == [
        "[The previous turn was interrupted: a newer message arrived]",
        "actually, Lisbon",
    ]


async def test_steer_joins_the_current_turn_after_its_tool_calls(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = GatedModel(
        [tool_call("slow_lookup", symbol="ACME", seconds=1), reply("GLOBEX looks better")],
        held=set(),
    )
    async with agent_worker(client, Operator, model=model, task_queue=task_queue):
        first = asyncio.create_task(agents.send(Operator, "s-steer", "Look at ACME"))
        await until(started(ledger, "slow_lookup"), "the lookup running")
        steered = await message(client, "s-steer", "and compare with GLOBEX", "steer")
        answered = await first
    assert answered is not None
    assert (answered.text, steered.text) == ("GLOBEX looks better", "GLOBEX looks better")
    assert (answered.number, steered.number) == (1, 2)
    second_turn = model.requests[1].messages
    assert [m.role for m in second_turn[-2:]] == ["tool", "user"]
    assert second_turn[-1].content == "and compare with GLOBEX"


async def test_a_steering_message_is_never_taken_as_an_approval(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = GatedModel([tool_call("sell", symbol="ACME", quantity=5), reply("sold")], held=set())
    workflow_id = session_workflow_id("Operator", "default", "s-approve")
    async with agent_worker(client, Operator, model=model, task_queue=task_queue):
        first = asyncio.create_task(agents.send(Operator, "s-approve", "Sell ACME"))
        await until(state_is(agents, workflow_id, lambda s: bool(s.pending_approvals)), "a request")
        steer = asyncio.create_task(message(client, "s-approve", "yes, approve it", "steer"))
        handle = client.get_workflow_handle(workflow_id)
        await until(accepted(handle, 2), "the steering message accepted")
        state = await agents.state(workflow_id)
        assert [r.status for r in state.approvals] == ["pending"]  # the message decided nothing
        await handle.execute_update(
            APPROVAL_UPDATE, ApprovalDecision(approved=True, by="bob"), result_type=ApprovalOutcome
        )
        answered, steered = await first, await steer
    assert answered is not None and answered.text == steered.text == "sold"
    assert [e["tool"] for e in read_ledger(ledger)] == ["sell"]
    second_turn = model.requests[1].messages
    assert [m.role for m in second_turn[-2:]] == ["tool", "user"]
    assert second_turn[-1].content == "yes, approve it"
