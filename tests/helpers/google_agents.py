"""Agents on ``google:`` models (the Google provider's tests and bench)."""

from __future__ import annotations

from temporalio import workflow

from smyth_temporal import AgentInput, AgentResult, AgentWorkflow
from tests.helpers import provider_agents


@workflow.defn
class GeminiAnalyst(AgentWorkflow):
    config = provider_agents.analyst("google:gemini-test")

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class GeminiWithFallback(AgentWorkflow):
    config = provider_agents.with_fallback("google:gemini-primary", "google:gemini-backup")

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class GeminiInSmallWindow(AgentWorkflow):
    """Its budget (the default 32k) is far above the model's window: only the window's
    refusal can make it compact."""

    config = provider_agents.in_small_window("google:gemini-test")

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class GeminiLongRunner(AgentWorkflow):
    """``GeminiAnalyst`` for long runs: compacts beyond 2,400 tokens, continues as new
    every 25 turns."""

    config = provider_agents.long_runner("google:gemini-test")

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)
