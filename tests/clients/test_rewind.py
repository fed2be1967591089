"""``AgentClient.rewind``: the same run back to a step, through Temporal's reset.

Real dev server, real Qdrant Edge on disk; only the model is scripted.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType, WorkflowTaskFailedCause
from temporalio.client import Client
from temporalio.worker import Replayer

from smyth_temporal import (
    AccessDeniedError,
    AgentClient,
    AgentInput,
    AgentNotFoundError,
    SmythPlugin,
)
from smyth_temporal.exceptions import RewindError
from smyth_temporal.memory import EdgeStore, HashEmbedder, MemoryManager
from smyth_temporal.models import ModelRequest, ModelResponse
from smyth_temporal.security import Principal
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from smyth_temporal.types.rewind import REWIND_SIGNAL
from smyth_temporal.types.sessions import session_workflow_id
from tests.agent.test_approvals import wait_for_pending
from tests.helpers.context_agents import Relay
from tests.helpers.rewind_agents import GATES, Mailer, Rewindable

FACT_1 = "ACME reports earnings on May 3"
FACT_3 = "ACME's CFO resigned"
NEW_COURSE = "Never mind the CFO: what do we already know about ACME?"
RECALL_ALL = tool_call("recall", query="ACME earnings CFO", k=20)


def said(request: ModelRequest, text: str) -> bool:
    return any(m.content == text for m in request.messages)


def turn(request: ModelRequest) -> ModelResponse:
    """The original remembers at steps 1 and 3 and e-mails at 4; rewound with the new
    course, it recalls at step 3 and answers what it recalled.
    """
    if said(request, NEW_COURSE):
        if request.step == 3:
            return RECALL_ALL
        return reply([m.content or "" for m in request.messages if m.role == "tool"][-1])
    return {
        1: tool_call("remember", text=FACT_1, kind="fact"),
        2: tool_call("get_quote", symbol="ACME"),
        3: tool_call("remember", text=FACT_3, kind="fact"),
        4: tool_call("send_email", to="ceo", text="CFO news"),
    }.get(request.step) or reply("ACME noted.")


@pytest.fixture
async def memory(tmp_path: Path) -> AsyncIterator[MemoryManager]:
    manager = MemoryManager(EdgeStore(tmp_path / "memory"), HashEmbedder(64))
    yield manager
    await manager.close()


async def test_a_rewind_to_step_2_forgets_step_3s_memory_keeps_step_1s_and_completes(
    client: Client, agents: AgentClient, task_queue: str, memory: MemoryManager, ledger: Path
) -> None:
    model = ScriptedModel([turn] * 12)
    async with agent_worker(client, Rewindable, model=model, task_queue=task_queue, memory=memory):
        handle = await agents.start(Rewindable, AgentInput(prompt="Learn about ACME", tenant="t1"))
        original = await agents.result(handle.id)
        assert (original.output, original.steps) == ("ACME noted.", 5)
        before = await agents.memory.list_memories(tenant="t1", namespace="research")
        assert {r.text for r in before} == {FACT_1, FACT_3}

        started = time.perf_counter()
        rewound = await agents.rewind(handle.id, to_step=2, prompt=NEW_COURSE)
        seconds = time.perf_counter() - started
        result = await agents.result(handle.id)
        after = await agents.memory.list_memories(tenant="t1", namespace="research")
        history = await client.get_workflow_handle(handle.id).fetch_history()
        description = await client.get_workflow_handle(handle.id).describe()
    print(f"rewind to step 2 of 5: {seconds * 1000:.0f} ms")

    # The same workflow id goes on in a new run, from step 3, with the new course.
    assert rewound.workflow_id == handle.id and rewound.to_step == 2
    assert rewound.abandoned_run_id == handle.result_run_id != rewound.run_id
    assert description.run_id == rewound.run_id
    assert FACT_1 in result.output and FACT_3 not in result.output
    assert result.steps == 4
    rewound_requests = [r for r in model.requests if said(r, NEW_COURSE)]
    assert [r.step for r in rewound_requests] == [3, 4]  # no model call for steps 1-2
    assert len(model.requests) == 5 + 2
    first = rewound_requests[0]
    assert [m.role for m in first.messages][-3:] == ["assistant", "tool", "user"]
    # Memory: step 1's fact is there, step 3's is gone.
    assert {r.text for r in after} == {FACT_1}
    # The e-mail of step 4 cannot be undone: listed, with its result and key.
    [email] = rewound.side_effects
    assert (email.tool, email.step, email.outcome, email.result) == (
        "send_email",
        4,
        "completed",
        "sent to ceo",
    )
    assert email.idempotency_key.endswith("/4/" + email.call_id)
    # History shows the reset: the task it took over failed with cause RESET_WORKFLOW
    # (naming the abandoned run), then the notice; describe names the reset too.
    [reset] = [
        e.workflow_task_failed_event_attributes
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
    ]
    assert reset.cause == WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW
    assert (reset.base_run_id, reset.new_run_id) == (rewound.abandoned_run_id, rewound.run_id)
    signals = [
        e.workflow_execution_signaled_event_attributes.signal_name
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
    ]
    assert signals == [REWIND_SIGNAL]
    assert description.raw_description.workflow_extended_info.HasField("last_reset_time")
    # The rewound run's history (reset, notice, the wait for it) replays with this code.
    replayer = Replayer(workflows=[Rewindable], plugins=[SmythPlugin()])
    await replayer.replay_workflow(history)


def mail(request: ModelRequest) -> ModelResponse:
    """A quote, an e-mail, an answer; after a rewind with a prompt, the answer at once."""
    if any(m.role == "user" and m.content == NEW_COURSE for m in request.messages):
        return reply("changed course")
    return {
        1: tool_call("get_quote", symbol="ACME"),
        2: tool_call("send_email", to="ceo", text="ACME"),
    }.get(request.step) or reply("mailed")


async def history_of(client: Client, workflow_id: str) -> tuple[str, list[EventType.ValueType]]:
    """The current run's id and its event types."""
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    return history.run_id, [e.event_type for e in history.events]


async def test_a_step_beyond_the_run_another_tenants_run_a_viewer_or_an_unknown_id_resets_nothing(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = ScriptedModel([mail] * 6)
    viewer = agents.acting_for(Principal(name="acme-viewer", tenant="acme", role="viewer"))
    globex = agents.acting_for(Principal(name="globex-ops", tenant="globex", role="operator"))
    acme = agents.acting_for(Principal(name="acme-ops", tenant="acme", role="operator"))
    async with agent_worker(client, Mailer, model=model, task_queue=task_queue):
        handle = await agents.start(Mailer, AgentInput(prompt="Mail the CEO", tenant="acme"))
        assert (await agents.result(handle.id)).steps == 3
        before = await history_of(client, handle.id)
        for step in (3, 7):  # its last step (nothing after it to go back over), beyond it
            with pytest.raises(RewindError, match="has taken 3 steps; it cannot be rewound"):
                await acme.rewind(handle.id, to_step=step)
        with pytest.raises(RewindError, match="0 or more"):
            await acme.rewind(handle.id, to_step=-1)
        with pytest.raises(RewindError, match="must not be empty"):
            await acme.rewind(handle.id, to_step=1, prompt="  ")
        with pytest.raises(AccessDeniedError, match="role viewer"):
            await viewer.rewind(handle.id, to_step=1)
        with pytest.raises(AgentNotFoundError):
            await globex.rewind(handle.id, to_step=1)
        with pytest.raises(AgentNotFoundError):
            await acme.rewind("no-such-run", to_step=1)
        assert await history_of(client, handle.id) == before  # nothing was reset

        rewound = await acme.rewind(handle.id, to_step=1, prompt=NEW_COURSE)
        result = await agents.result(handle.id)
        notices = [n for n in (await agents.audit(handle.id)).entries if n.kind == "rewound"]

    assert (result.output, result.steps) == ("changed course", 2)
    [email] = rewound.side_effects  # the quote of step 1 is read-only: not listed
    assert (email.tool, email.step, email.outcome) == ("send_email", 2, "completed")
    [notice] = notices
    assert notice.fields["by"] == "acme-ops" and notice.fields["to_step"] == 1


async def test_approvals_decided_after_the_step_are_void_and_asked_again(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    order = tool_call("place_order", symbol="ACME", quantity=5)
    model = ScriptedModel([tool_call("get_quote", symbol="ACME"), order, reply("ordered")] * 2)
    async with agent_worker(client, Mailer, model=model, task_queue=task_queue):
        handle = await agents.start(Mailer, "Buy ACME")
        [request] = (await wait_for_pending(agents, handle.id, 1)).pending_approvals
        await agents.approve(handle.id, request.id, by="ann")
        assert (await agents.result(handle.id)).output == "ordered"

        rewound = await agents.rewind(handle.id, to_step=1)
        # The rewound run asks again: ann's decision is not applied to it.
        [again] = (await wait_for_pending(agents, handle.id, 1)).pending_approvals
        await agents.reject(handle.id, again.id, by="bob")
        result = await agents.result(handle.id)

    assert rewound.voided_approvals == (request.id,)
    [placed] = rewound.side_effects
    assert (placed.tool, placed.step, placed.outcome) == ("place_order", 2, "completed")
    assert result.output == "ordered" and result.steps == 3


async def test_a_step_in_an_earlier_run_of_a_chain_or_where_a_run_started_is_refused(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    # Relay continues as new after every two steps: its last run starts at step 4.
    def relay(request: ModelRequest) -> ModelResponse:
        if said(request, NEW_COURSE):
            return reply("again")
        return tool_call("daily_report", day=request.step) if request.step < 6 else reply("done")

    model = ScriptedModel([relay] * 8)
    async with agent_worker(client, Relay, model=model, task_queue=task_queue):
        handle = await agents.start(Relay, "Read five days.")
        assert (await agents.result(handle.id)).steps == 6
        before = await history_of(client, handle.id)
        with pytest.raises(
            RewindError, match=r"earlier run of its chain.*continued as new at step 4"
        ):
            await agents.rewind(handle.id, to_step=3)
        # Where the run started: its constructor cannot see a reset at its first task,
        # so without a signal in the reset request (the dev server has none) it refuses.
        with pytest.raises(RewindError, match=r"is where run .* started"):
            await agents.rewind(handle.id, to_step=4)
        assert await history_of(client, handle.id) == before
        rewound = await agents.rewind(handle.id, to_step=5, prompt=NEW_COURSE)
        result = await agents.result(handle.id)

    assert rewound.abandoned_run_id == before[0]
    assert (result.output, result.steps) == ("again", 6)
    assert [r.step for r in model.requests] == [1, 2, 3, 4, 5, 6, 6]  # none for steps 1-5


async def test_a_session_answering_a_message_is_not_rewound(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    order = tool_call("place_order", symbol="ACME", quantity=5)
    model = ScriptedModel([order, reply("not ordered")])
    async with agent_worker(client, Mailer, model=model, task_queue=task_queue):
        sending = asyncio.ensure_future(agents.send(Mailer, "desk", "Buy ACME"))
        workflow_id = session_workflow_id("Mailer", "default", "desk")
        for _ in range(200):  # until the session has asked the model (it exists then)
            if model.requests:
                break
            await asyncio.sleep(0.02)
        await wait_for_pending(agents, workflow_id, 1)  # the message's update is open
        before = await history_of(client, workflow_id)
        with pytest.raises(RewindError, match="is handling update 'send_message'"):
            await agents.rewind(workflow_id, to_step=0)
        assert await history_of(client, workflow_id) == before
        await agents.reject(workflow_id, by="bob")
        reply_ = await sending
    assert reply_ is not None and reply_.text == "not ordered"


async def test_a_session_rewound_between_messages_takes_the_prompt_with_its_next_message(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    def chat(request: ModelRequest) -> ModelResponse:
        said_last = [m.content for m in request.messages if m.role == "user"][-2:]
        return reply(" | ".join(str(text) for text in said_last))

    model = ScriptedModel([chat] * 6)
    async with agent_worker(client, Mailer, model=model, task_queue=task_queue):
        await agents.send(Mailer, "rewound-desk", "first")
        await agents.send(Mailer, "rewound-desk", "second")
        workflow_id = session_workflow_id("Mailer", "default", "rewound-desk")
        await agents.rewind(workflow_id, to_step=1, prompt=NEW_COURSE)
        third = await agents.send(Mailer, "rewound-desk", "third")
        history = await client.get_workflow_handle(workflow_id).fetch_history()

    # The second message was abandoned with its step; the prompt comes before the third.
    assert third is not None and third.text == f"{NEW_COURSE} | third"
    # The session never waited out NOTICE_WAIT for a notice it had (no timer fired; one
    # started and cancelled in a task is a turn that ran before the notice's handler).
    fired = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_TIMER_FIRED]
    assert fired == []


async def test_a_run_waiting_for_an_approval_is_rewound_and_goes_on_without_the_request(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    def order(request: ModelRequest) -> ModelResponse:
        if said(request, NEW_COURSE):
            return reply("changed course")
        if request.step == 1:
            return tool_call("get_quote", symbol="ACME")
        return tool_call("place_order", symbol="ACME", quantity=5)

    model = ScriptedModel([order] * 4)
    async with agent_worker(client, Mailer, model=model, task_queue=task_queue):
        handle = await agents.start(Mailer, "Buy ACME")
        await wait_for_pending(agents, handle.id, 1)  # step 2 waits for a person
        rewound = await agents.rewind(handle.id, to_step=1, prompt=NEW_COURSE)
        result = await agents.result(handle.id)
        state = await agents.state(handle.id)

    assert (result.output, result.steps) == ("changed course", 2)
    assert rewound.side_effects == () and rewound.voided_approvals == ()  # nothing ran
    assert state.pending_approvals == []


async def test_a_side_effect_call_still_running_is_listed_with_an_unknown_outcome(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    def wire(request: ModelRequest) -> ModelResponse:
        if said(request, NEW_COURSE):
            return reply("changed course")
        if request.step == 1:
            return tool_call("get_quote", symbol="ACME")
        return tool_call("wire_money", amount=100)

    GATES.clear()
    model = ScriptedModel([wire] * 4)
    async with agent_worker(client, Mailer, model=model, task_queue=task_queue):
        handle = await agents.start(Mailer, "Pay ACME")
        started = GATES.setdefault("started", asyncio.Event())
        await asyncio.wait_for(started.wait(), timeout=60)  # a guard against a hang only
        rewound = await agents.rewind(handle.id, to_step=1, prompt=NEW_COURSE)
        GATES.setdefault("done", asyncio.Event()).set()  # the abandoned call ends now
        result = await agents.result(handle.id)

    [wired] = rewound.side_effects  # it may have acted: a reconcile hook decides
    assert (wired.tool, wired.step, wired.outcome, wired.result) == (
        "wire_money",
        2,
        "unknown",
        None,
    )
    assert (result.output, result.steps) == ("changed course", 2)
