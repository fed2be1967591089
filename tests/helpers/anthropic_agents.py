"""An agent on an ``anthropic:`` model (the Anthropic provider's tests and bench)."""

from __future__ import annotations

from temporalio import workflow

from smyth_temporal import AgentInput, AgentResult, AgentWorkflow
from tests.helpers import provider_agents
from tests.helpers.provider_agents import RESEARCH

__all__ = ["RESEARCH", "ClaudeAnalyst", "ClaudeLongRunner"]


@workflow.defn
class ClaudeAnalyst(AgentWorkflow):
    config = provider_agents.analyst("anthropic:claude-test")

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class ClaudeLongRunner(AgentWorkflow):
    """``ClaudeAnalyst`` for long runs: compacts beyond 2,400 tokens, continues as new
    every 25 turns."""

    config = provider_agents.long_runner("anthropic:claude-test")

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)
