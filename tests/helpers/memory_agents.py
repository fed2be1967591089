"""Agents with long-term memory, shared by the memory tests."""

from __future__ import annotations

from temporalio import workflow

from smyth_temporal import AgentConfig, AgentInput, AgentResult, AgentWorkflow
from tests.helpers.agents import get_quote


@workflow.defn
class Researcher(AgentWorkflow):
    config = AgentConfig(
        model="test-model",
        instructions="You research companies.",
        tools=[get_quote],
        memory_namespace="research",
        max_steps=6,
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class Reviewer(AgentWorkflow):
    config = AgentConfig(
        model="test-model",
        instructions="You review research.",
        memory_namespace="research",
        max_steps=4,
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class Archivist(AgentWorkflow):
    """A custom agent using the memory building blocks directly."""

    config = AgentConfig(model="test-model", memory_namespace="archive", memory_episodes=False)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        self.begin(input)
        facts = [line for line in input.prompt.splitlines() if line.strip()]
        stored = await self.remember(facts, kind="note")
        # The same facts again: idempotent, nothing new is stored.
        again = await self.remember(facts, kind="note")
        old = stored[0]
        newer = await self.supersede(old.id, f"{old.text} (revised)")
        hits = await self.recall(facts[0], k=10)
        summary = {
            "stored": [r.id for r in stored],
            "again": [r.id for r in again],
            "newer": newer.id,
            "recalled": [h.record.id for h in hits],
        }
        return self.finish(repr(summary))


@workflow.defn
class ChainedResearcher(AgentWorkflow):
    """A Researcher that continues as new after every two steps (a fork's chain)."""

    config = AgentConfig(
        model="test-model",
        tools=[get_quote],
        memory_namespace="research",
        memory_episodes=False,
        context_budget=None,
        continue_as_new_after_steps=2,
        max_steps=10,
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)
