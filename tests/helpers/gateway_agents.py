"""Agents for the gateway's tests, alone in their module (a worker imports it per run)."""

from __future__ import annotations

from temporalio import workflow

from smyth_temporal import AgentConfig, AgentInput, AgentResult, AgentWorkflow

NOTES = "the client is about to sell; keep it quiet"


@workflow.defn
class Notetaker(AgentWorkflow):
    """Keeps working notes in ``data`` and finishes without a model call."""

    config = AgentConfig(model="test-model")

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        self.begin(input)
        self.data["notes"] = NOTES
        return self.finish("noted", status="completed")


DAILY_CHECK = AgentInput(prompt="daily check")


@workflow.defn
class Defaulted(AgentWorkflow):
    """An agent whose input has a default (a scheduled check, say): a probe could run it."""

    config = AgentConfig(model="test-model", instructions="Check.")

    @workflow.run
    async def run(self, input: AgentInput = DAILY_CHECK) -> AgentResult:
        return await self.run_agent(input)
