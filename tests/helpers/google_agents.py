"""Agents on ``google:`` models (the Google provider's tests and bench)."""

from __future__ import annotations

from temporalio import workflow

from smyth_temporal import AgentConfig, AgentInput, AgentResult, AgentWorkflow
from tests.helpers.anthropic_agents import RESEARCH
from tests.helpers.trading import get_quote


@workflow.defn
class GeminiAnalyst(AgentWorkflow):
    config = AgentConfig(
        model="google:gemini-test", instructions=RESEARCH, tools=[get_quote], max_steps=60
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class GeminiWithFallback(AgentWorkflow):
    config = AgentConfig(
        model="google:gemini-primary",
        fallback_models=["google:gemini-backup"],
        instructions="Answer in one sentence.",
        tools=[get_quote],
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class GeminiInSmallWindow(AgentWorkflow):
    """Its budget (the default 32k) is far above the model's window: only the window's
    refusal can make it compact."""

    config = AgentConfig(
        model="google:gemini-test",
        instructions="Quote the symbols one at a time.",
        tools=[get_quote],
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class GeminiLongRunner(AgentWorkflow):
    """``GeminiAnalyst`` for long runs: compacts beyond 2,400 tokens, continues as new
    every 25 turns."""

    config = AgentConfig(
        model="google:gemini-test",
        instructions=RESEARCH,
        tools=[get_quote],
        max_steps=200,
        context_budget=2_400,
        continue_as_new_after_steps=25,
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)
