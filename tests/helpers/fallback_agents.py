"""Agents with fallback models (for turns and summaries), or a window smaller than their budget."""

from __future__ import annotations

from temporalio import workflow

from smyth_temporal import AgentConfig, AgentInput, AgentResult, AgentWorkflow
from tests.helpers import provider_agents
from tests.helpers.trading import get_quote


@workflow.defn
class ClaudeWithFallback(AgentWorkflow):
    config = provider_agents.with_fallback("anthropic:claude-primary", "anthropic:claude-backup")

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class ClaudeInSmallWindow(AgentWorkflow):
    """Its budget (the default 32k) is far above the model's window: only the window's
    refusal can make it compact."""

    config = provider_agents.in_small_window("anthropic:claude-test")

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class GPTWithFallbacks(AgentWorkflow):
    """Two fallbacks on an OpenAI-compatible endpoint, one attempt at each before moving."""

    config = AgentConfig(
        model="gpt-primary",
        fallback_models=["gpt-backup", "gpt-last-resort"],
        fallback_after_attempts=1,
        instructions="Answer in one sentence.",
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class ClaudeCompactingWithFallback(AgentWorkflow):
    """Compacts every few turns (a small budget); its summaries may fall back too."""

    config = AgentConfig(
        model="anthropic:claude-primary",
        fallback_models=["anthropic:claude-backup"],
        fallback_after_attempts=1,
        instructions="Quote the symbols one at a time.",
        tools=[get_quote],
        context_budget=1_000,
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)
