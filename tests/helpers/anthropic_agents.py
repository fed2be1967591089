"""An agent on an ``anthropic:`` model (the Anthropic provider's tests and bench)."""

from __future__ import annotations

from temporalio import workflow

from smyth_temporal import AgentConfig, AgentInput, AgentResult, AgentWorkflow
from tests.helpers.trading import get_quote

RESEARCH = (
    "You are a careful market analyst. Look quotes up with get_quote before answering, "
    "one symbol at a time, and answer in one sentence. "
) * 30
"""Long instructions, as real agents have: the prefix worth caching."""


@workflow.defn
class ClaudeAnalyst(AgentWorkflow):
    config = AgentConfig(
        model="anthropic:claude-test", instructions=RESEARCH, tools=[get_quote], max_steps=60
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class ClaudeLongRunner(AgentWorkflow):
    """``ClaudeAnalyst`` for long runs: compacts beyond 2,400 tokens, continues as new
    every 25 turns."""

    config = AgentConfig(
        model="anthropic:claude-test",
        instructions=RESEARCH,
        tools=[get_quote],
        max_steps=200,
        context_budget=2_400,
        continue_as_new_after_steps=25,
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)
