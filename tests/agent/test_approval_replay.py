"""Found by the chaos bench: an approval accepted in the workflow task that asks for it.

A decision can reach a run in the same workflow task as the event that makes its
request (the model call's completion): the worker that had the run was SIGKILLed, its
workflow task timed out, and the client, having seen the request pending, sent the
decision meanwhile. The worker that took the task over accepted it. But a replay of
that history applies the update before the workflow code has made the request again
(temporalio runs update jobs before an activation's other jobs), the handler finds
"unknown approval request", and the workflow task fails on every worker from then on:
the run never ends (bench/README.md, "Chaos").

``chaos_histories/approval_decided_with_its_request.json`` is that run (a
``ChaosTrader`` of ``bench/chaos.py``, 100 kills, seed 12), cut before the failed
workflow task: events 24-32 hold the task that asked for the approval and accepted it.
It replays now (``Approvals.decide`` holds such a decision on replay, and
``agent._update_order`` puts its acceptance back where the run had it). Live, such a
decision is refused with a clear error, and a signalled one is no longer dropped.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType, UpdateWorkflowExecutionLifecycleStage
from temporalio.api.update.v1 import UpdateRef, WaitPolicy
from temporalio.api.workflowservice.v1 import PollWorkflowExecutionUpdateRequest
from temporalio.client import Client, WorkflowHistory, WorkflowUpdateFailedError
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import Replayer, Worker

from bench._chaos_agents import ChaosTrader
from smyth_temporal import AgentClient, InvalidDecisionError, SmythPlugin
from smyth_temporal.activities import tool_activities
from smyth_temporal.activities.model import ModelActivities
from smyth_temporal.agent import WorkflowLogger
from smyth_temporal.agent.approvals import Approvals
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from smyth_temporal.types.approvals import (
    APPROVAL_SIGNAL,
    APPROVAL_UPDATE,
    ApprovalDecision,
    ApprovalOutcome,
)
from tests.helpers.agents import read_ledger
from tests.helpers.runs import bare_run
from tests.helpers.trader import Trader
from tests.helpers.trading import TRADER_TOOLS

HISTORY = Path(__file__).parents[1] / "chaos_histories" / "approval_decided_with_its_request.json"


async def test_an_approval_accepted_with_its_request_replays() -> None:
    history = WorkflowHistory.from_json("chaos-approval-81", HISTORY.read_text())
    replayer = Replayer(workflows=[ChaosTrader], plugins=[SmythPlugin()])
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, result.replay_failure


@pytest.mark.parametrize("request_id", ["apr-1-call_1_0", None])
async def test_a_decision_without_its_request_is_refused_when_not_replaying(
    request_id: str | None,
) -> None:
    # Only a replay may hold a decision back (its validator accepted it live).
    approvals = Approvals(
        bare_run(Trader.config, log=WorkflowLogger("tests.approval_replay")),
        on_change=lambda: None,
        clock=lambda: datetime(2026, 11, 26, tzinfo=UTC),
        replaying=lambda: False,
    )
    decision = ApprovalDecision(request_id=request_id, approved=True, by="alice")
    with pytest.raises(InvalidDecisionError, match=r"unknown approval request|no approval"):
        await approvals.decide(decision)
    assert approvals.requests == {}


def _events(history: WorkflowHistory, kind: EventType.ValueType) -> list[int]:
    return [e.event_id for e in history.events if e.event_type == kind]


async def _until(client: Client, workflow_id: str, kind: EventType.ValueType) -> None:
    # Polls history (no timing threshold: the event comes or the test's timeout ends it).
    while not _events(await client.get_workflow_handle(workflow_id).fetch_history(), kind):
        await asyncio.sleep(0.05)


async def _until_count(
    client: Client, workflow_id: str, kind: EventType.ValueType, count: int
) -> None:
    handle = client.get_workflow_handle(workflow_id)
    while len(_events(await handle.fetch_history(), kind)) < count:
        await asyncio.sleep(0.05)


async def _until_admitted(client: Client, workflow_id: str, update_id: str) -> None:
    # The server holds the update for the run's next workflow task from here on.
    request = PollWorkflowExecutionUpdateRequest(
        namespace=client.namespace,
        update_ref=UpdateRef(
            workflow_execution=WorkflowExecution(workflow_id=workflow_id), update_id=update_id
        ),
        wait_policy=WaitPolicy(
            lifecycle_stage=UpdateWorkflowExecutionLifecycleStage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_ADMITTED
        ),
    )
    while True:
        try:
            await client.workflow_service.poll_workflow_execution_update(request)
            return
        except RPCError as exc:
            if exc.status != RPCStatusCode.NOT_FOUND:
                raise
            await asyncio.sleep(0.05)


async def test_a_decision_sent_before_its_request_exists_is_refused_and_loses_nothing(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    """Live, a decision that reaches the run with the event that makes its request is
    refused (temporalio validates it first): only a replay may hold one back.

    A worker without activities takes the first task (the model call is scheduled) and
    stops; activities alone complete the model call, whose workflow task then waits
    for a worker; the decision is sent meanwhile, and a worker that caches nothing
    (every task replays the run from its start) takes both in one task. The decision
    is refused with a clear error, the request is made, a decision sent again approves
    it, the sale runs once, and no workflow task fails.
    """
    model = ScriptedModel([tool_call("sell", symbol="ACME", quantity=3), reply("sold")])
    async with agent_worker(
        client, Trader, model=model, task_queue=task_queue, no_remote_activities=True
    ):
        handle = await agents.start(Trader, "Sell 3 ACME")
        await _until(client, handle.id, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
    activities = [ModelActivities(model).complete, *tool_activities(TRADER_TOOLS)]
    async with Worker(client, task_queue=task_queue, activities=activities):
        await _until(client, handle.id, EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED)
    decision = ApprovalDecision(request_id="apr-1-call_1_0", approved=True, by="alice")
    early = asyncio.create_task(
        client.get_workflow_handle(handle.id).execute_update(
            APPROVAL_UPDATE, decision, id="early", result_type=ApprovalOutcome
        )
    )
    await _until_admitted(client, handle.id, "early")
    async with agent_worker(
        client, Trader, model=model, task_queue=task_queue, max_cached_workflows=0
    ):
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await early
        outcome = await agents.approve(handle.id, request_id="apr-1-call_1_0", by="alice")
        result = await agents.result(handle.id)
    history = await client.get_workflow_handle(handle.id).fetch_history()

    assert "unknown approval request 'apr-1-call_1_0'" in str(refused.value.cause)
    assert outcome is not None and outcome.request.status == "approved"
    assert result.output == "sold"
    assert [e["tool"] for e in read_ledger(ledger)] == ["sell"]
    assert _events(history, EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED) == []
    replayer = Replayer(workflows=[Trader], plugins=[SmythPlugin()])
    replayed = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert replayed.replay_failure is None


async def test_a_decision_signalled_with_the_event_that_makes_its_request_is_applied(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    """A signalled decision that reaches the run with its request's event is not lost.

    As above, but the decision is a signal: temporalio hands it to the run before the
    model call's completion, live as on replay. It used to find no request and be
    dropped (logged), leaving the run waiting for a decision the client had sent.
    """
    model = ScriptedModel([tool_call("sell", symbol="ACME", quantity=3), reply("sold")])
    async with agent_worker(
        client, Trader, model=model, task_queue=task_queue, no_remote_activities=True
    ):
        handle = await agents.start(Trader, "Sell 3 ACME")
        await _until(client, handle.id, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
    activities = [ModelActivities(model).complete, *tool_activities(TRADER_TOOLS)]
    async with Worker(client, task_queue=task_queue, activities=activities):
        await _until(client, handle.id, EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED)
    decision = ApprovalDecision(request_id="apr-1-call_1_0", approved=True, by="alice")
    await client.get_workflow_handle(handle.id).signal(APPROVAL_SIGNAL, decision)
    async with agent_worker(
        client, Trader, model=model, task_queue=task_queue, max_cached_workflows=0
    ):
        # The task that took the signal and the completion together has completed.
        await _until_count(client, handle.id, EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, 2)
        decided = (await agents.state(handle.id)).approvals
        assert [(r.id, r.status) for r in decided] == [("apr-1-call_1_0", "approved")]
        result = await agents.result(handle.id)
    history = await client.get_workflow_handle(handle.id).fetch_history()

    assert result.output == "sold"
    assert [e["tool"] for e in read_ledger(ledger)] == ["sell"]
    assert _events(history, EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED) == []
    replayer = Replayer(workflows=[Trader], plugins=[SmythPlugin()])
    replayed = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert replayed.replay_failure is None


async def test_a_signalled_decision_never_waits_for_a_request_made_later(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    # A decision for the next step's request, signalled early, is dropped (as before):
    # that request, made in a later activation, still waits for a person.
    sells = [tool_call("sell", symbol="ACME", quantity=n) for n in (1, 2)]
    model = ScriptedModel([*sells, reply("done")])
    async with agent_worker(client, Trader, model=model, task_queue=task_queue):
        handle = await agents.start(Trader, "Sell twice")
        await _until(client, handle.id, EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES)
        early = ApprovalDecision(request_id="apr-2-call_2_0", approved=True, by="mallory")
        await client.get_workflow_handle(handle.id).signal(APPROVAL_SIGNAL, early)
        await _until(client, handle.id, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED)
        await agents.approve(handle.id, request_id="apr-1-call_1_0", by="alice")
        await _until_count(client, handle.id, EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, 3)
        while len((state := await agents.state(handle.id)).approvals) < 2:
            await asyncio.sleep(0.05)
        assert [(r.id, r.status) for r in state.approvals] == [
            ("apr-1-call_1_0", "approved"),
            ("apr-2-call_2_0", "pending"),
        ]
        await agents.reject(handle.id, request_id="apr-2-call_2_0", by="alice")
        result = await agents.result(handle.id)

    assert result.output == "done"
    assert [(e["tool"], e["quantity"]) for e in read_ledger(ledger)] == [("sell", 1)]
