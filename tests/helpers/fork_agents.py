"""Agents of the fork tests (imported by the workers that run them)."""

from __future__ import annotations

from temporalio import workflow

from smyth_temporal import AgentConfig, AgentInput, AgentResult, AgentWorkflow
from tests.helpers.trading import get_quote

__all__ = ["QuoteEvaluator"]


@workflow.defn
class QuoteEvaluator(AgentWorkflow):
    """Quotes one symbol a step, then answers: an evaluation of up to 25 steps."""

    config = AgentConfig(
        model="test-model", instructions="Quote each symbol.", tools=[get_quote], max_steps=25
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)
