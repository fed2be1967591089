"""The recorded run that notified replays, and a run that stops notifying does not.

``histories/payer_notified.json`` (recorded by ``tests/helpers/record_notification_histories``):
``Payer``'s request notifies ``hook``, its escalation step notifies ``lead``, then it
is approved. The history holds the channel names and the activities; what a channel
stands for (the webhook's URL) stays on the worker.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from temporalio import workflow
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer
from temporalio.workflow import NondeterminismError

from smyth_temporal import AgentConfig, AgentInput, AgentResult, AgentWorkflow, SmythPlugin, tool
from smyth_temporal.types import NOTIFY_ACTIVITY
from tests.helpers.notify_agents import Payer
from tests.helpers.notify_tools import PAY_POLICY

HISTORY = Path(__file__).parent / "histories" / "payer_notified.json"


def load() -> WorkflowHistory:
    return WorkflowHistory.from_json("history-payer_notified", HISTORY.read_text())


def test_the_history_notified_by_channel_name_only() -> None:
    events = json.loads(HISTORY.read_text())["events"]
    assert events[-1]["eventType"] == "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED"
    scheduled = [
        e["activityTaskScheduledEventAttributes"]
        for e in events
        if e["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED"
    ]
    notices = [a for a in scheduled if a["activityType"]["name"] == NOTIFY_ACTIVITY]
    assert len(notices) == 2
    assert "127.0.0.1" not in HISTORY.read_text()


async def test_the_notifying_run_replays() -> None:
    result = await Replayer(workflows=[Payer], plugins=[SmythPlugin()]).replay_workflow(load())
    assert result.replay_failure is None


@tool(
    name="pay",
    effect="side_effect",
    requires_approval=dataclasses.replace(
        PAY_POLICY,
        notify=(),
        escalation=[s.model_copy(update={"notify": ()}) for s in PAY_POLICY.escalation],
    ),
)
async def silent_pay(amount: int, to: str) -> str:
    """Pay someone, telling nobody.

    Args:
        amount: How much.
        to: Whom.
    """
    return f"paid {amount} to {to}"


@workflow.defn(name="Payer")
class SilentPayer(AgentWorkflow):
    """``Payer`` whose policy no longer notifies: its commands differ from the record."""

    config = AgentConfig(model="test-model", tools=[silent_pay], max_steps=3)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


async def test_a_run_that_stops_notifying_fails_replay() -> None:
    with pytest.raises(NondeterminismError, match="smyth-approval-notify"):
        await Replayer(workflows=[SilentPayer], plugins=[SmythPlugin()]).replay_workflow(
            load(), raise_on_replay_failure=True
        )
