"""Agents shared by the tests (imported by in-process and subprocess workers).

Their tools, models and the tool ledger live in ``tests.helpers.trading`` (re-exported here).
"""

from __future__ import annotations

from temporalio import workflow

from smyth_temporal import AgentConfig, AgentInput, AgentResult, AgentWorkflow
from tests.helpers.trading import (
    LEDGER_ENV,
    PRICES,
    Order,
    Verdict,
    always_fails,
    get_quote,
    place_order,
    read_ledger,
    record,
    slow_lookup,
    write_note,
)

__all__ = [
    "LEDGER_ENV",
    "PRICES",
    "Analyst",
    "Counter",
    "Desk",
    "Order",
    "Rater",
    "Summarizer",
    "Verdict",
    "always_fails",
    "get_quote",
    "place_order",
    "read_ledger",
    "record",
    "slow_lookup",
    "write_note",
]


@workflow.defn
class Analyst(AgentWorkflow):
    config = AgentConfig(
        model="test-model",
        instructions="You analyse markets.",
        tools=[get_quote, place_order, write_note, slow_lookup, always_fails],
        max_steps=8,
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class Summarizer(AgentWorkflow):
    """A custom agent: its own loop built from the building blocks."""

    config = AgentConfig(model="test-model", tools=[get_quote], max_steps=4)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        self.begin(input)
        reply = await self.think()
        # Only the quotes the model asked for, then a summary turn offering no tools.
        await self.act(reply.tool_calls)
        summary = await self.think(tools=[])
        return self.finish(f"SUMMARY: {summary.content}")


@workflow.defn
class Rater(AgentWorkflow):
    """Answers with a ``Verdict`` (validated, corrected at most twice)."""

    config = AgentConfig(
        model="test-model",
        instructions="You rate stocks.",
        tools=[get_quote],
        output_type=Verdict,
        max_steps=6,
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class Counter(AgentWorkflow):
    """Answers with a plain integer."""

    config = AgentConfig(model="test-model", output_type=int, output_retries=0)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class Desk(AgentWorkflow):
    """Hands the rating to a ``Rater`` and reports the typed verdict it gets back."""

    config = AgentConfig(model="test-model", subagents=[Rater])

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        self.begin(input)
        result = await self.delegate(Rater, input.prompt)
        # The child's data comes back as the child's output type, not as JSON.
        return self.finish(f"{type(result.data).__name__}: {result.data!r}")
