"""Agents for the run-context tests (``tests/agent/test_run_context.py``)."""

from __future__ import annotations

from temporalio import workflow

from smyth_temporal import AgentConfig, AgentInput, AgentResult, AgentWorkflow
from smyth_temporal.tools import Tool
from tests.helpers.trading import get_quote, place_order

__all__ = ["CountingAnalyst"]


@workflow.defn
class CountingAnalyst(AgentWorkflow):
    """Notes the step at which its ``tools`` hook is asked, each time it is."""

    config = AgentConfig(model="test-model", tools=[get_quote, place_order], max_steps=4)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)

    @property
    def tools(self) -> list[Tool]:
        self.data.setdefault("asked_at", []).append(self.conversation.step)
        return super().tools
