"""The workflows ``bench.notifications`` times (re-imported by the sandbox: no I/O here).

``NotifyBench`` is an agent whose one tool needs approval under an ``ApprovalPolicy``
that notifies the ``hook`` channel of each request.
``PlainNotify`` is the baseline: a hand-written temporalio workflow that starts one
activity posting the same webhook.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow

from smyth_temporal import (
    AgentConfig,
    AgentInput,
    AgentResult,
    AgentWorkflow,
    ApprovalPolicy,
    tool,
)

PLAIN_NOTIFY_ACTIVITY = "bench.plain_notify"


@tool(requires_approval=ApprovalPolicy(notify=("hook",)))
async def transfer(amount: int) -> str:
    """Move money (needs a person's approval).

    Args:
        amount: How much.
    """
    return f"moved {amount}"


@workflow.defn
class NotifyBench(AgentWorkflow):
    """One gated tool; its policy notifies each request over the ``hook`` channel."""

    config = AgentConfig(model="bench-model", tools=[transfer], max_steps=3)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class PlainNotify:
    """The baseline: on a signal (a later workflow task, as the agent's request is), note
    the time, start one activity that posts the webhook, and wait."""

    def __init__(self) -> None:
        self._tool: str | None = None

    @workflow.signal
    def request(self, tool: str) -> None:
        """Ask for approval of ``tool``."""
        self._tool = tool

    @workflow.run
    async def run(self) -> None:
        await workflow.wait_condition(lambda: self._tool is not None)
        body: dict[str, Any] = {
            "workflow_id": workflow.info().workflow_id,
            "requested_at": workflow.now().isoformat(),
            "tool": self._tool,
        }
        workflow.start_activity(
            PLAIN_NOTIFY_ACTIVITY, body, start_to_close_timeout=timedelta(seconds=30)
        )
        await workflow.wait_condition(lambda: False)  # waits, as the agent does
