"""A run recorded before its gated tool got an ``ApprovalPolicy`` replays as it ran: one
approver (the policy's patch, ``smyth-approval-policy``, keeps it on the old path)."""

from __future__ import annotations

import dataclasses

from temporalio import workflow
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from smyth_temporal import AgentInput, AgentResult, AgentWorkflow, ApprovalPolicy, Tool
from tests.helpers.trader import Trader

# The workflow below is defined here, so the sandbox re-imports this module; the
# worker-side imports are passed through as is.
with workflow.unsafe.imports_passed_through():
    from smyth_temporal import SmythPlugin
    from tests.helpers.record_histories import HISTORIES, workflow_id


def _with_quorum(tool: Tool) -> Tool:
    if tool.requires_approval is True:
        return dataclasses.replace(tool, requires_approval=ApprovalPolicy(quorum=2))
    return tool


@workflow.defn(name="Trader")
class TraderWithQuorum(AgentWorkflow):
    """``Trader`` after its gated ``sell`` got a two-approver policy."""

    config = dataclasses.replace(
        Trader.config, tools=[_with_quorum(t) for t in Trader.config.tools]
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


async def test_a_run_recorded_before_its_tool_had_a_policy_replays_with_one_approver() -> None:
    # Without the patch the recorded approval would count as one vote of two, the sale
    # would never be scheduled, and the replay would fail.
    path = HISTORIES / "trader_approved.json"
    history = WorkflowHistory.from_json(workflow_id(path.stem), path.read_text())
    replayer = Replayer(workflows=[TraderWithQuorum], plugins=[SmythPlugin()])
    result = await replayer.replay_workflow(history)
    assert result.replay_failure is None
