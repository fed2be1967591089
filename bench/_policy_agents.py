"""The workflows ``bench.approval_policy`` times (re-imported by the sandbox: no I/O here).

``QuorumBench`` is an agent whose one tool needs two approvers (``ApprovalPolicy(quorum=2)``);
``PlainQuorum`` is the baseline: a hand-written temporalio workflow that takes approvals
as an update, counts distinct approvers, and starts one activity at the second.
"""

from __future__ import annotations

import time
from datetime import timedelta

from temporalio import workflow

from smyth_temporal import (
    AgentConfig,
    AgentInput,
    AgentResult,
    AgentWorkflow,
    ApprovalPolicy,
    tool,
    tool_context,
)

PLAIN_RELEASE_ACTIVITY = "bench.plain_release"
STARTS: dict[str, float] = {}
"""When each run's tool (or activity) started, by workflow id (worker clock)."""


@tool(effect="side_effect", requires_approval=ApprovalPolicy(quorum=2))
async def release(amount: int) -> str:
    """Release funds (two approvers).

    Args:
        amount: How much.
    """
    STARTS[tool_context().workflow_id] = time.time()
    return f"released {amount}"


@workflow.defn
class QuorumBench(AgentWorkflow):
    """One tool, gated by a two-approver policy."""

    config = AgentConfig(model="bench-model", tools=[release], max_steps=3)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class PlainQuorum:
    """The baseline: distinct approvers through an update; the activity at the second."""

    def __init__(self) -> None:
        self.approvers: set[str] = set()

    @workflow.update
    def approve(self, by: str) -> int:
        self.approvers.add(by)
        return len(self.approvers)

    @workflow.run
    async def run(self, amount: int) -> str:
        await workflow.wait_condition(lambda: len(self.approvers) >= 2)
        result: str = await workflow.execute_activity(
            PLAIN_RELEASE_ACTIVITY, amount, start_to_close_timeout=timedelta(seconds=30)
        )
        return result
