"""The agents the chaos bench runs (workflow code only: the sandbox re-imports this module).

Their tools are the test suite's ledger tools (``tests.helpers.trading``): every execution
appends a line with its idempotency key and attempt, which is how the bench counts
re-runs. The MCP agent is the tests' ``Scribe`` (``tests.helpers.mcp_agents``).
"""

from __future__ import annotations

from temporalio import workflow

from smyth_temporal import AgentConfig, AgentInput, AgentResult, AgentWorkflow
from tests.helpers.trading import get_quote, sell, write_note


@workflow.defn
class ChaosTrader(AgentWorkflow):
    """A quote, then a sale that waits for a person's approval."""

    config = AgentConfig(model="test-model", tools=[get_quote, sell], max_steps=6)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class ChaosLong(AgentWorkflow):
    """Continues as new after every step: a quote, a note, a quote, then the answer."""

    config = AgentConfig(
        model="test-model",
        tools=[get_quote, write_note],
        max_steps=10,
        continue_as_new_after_steps=1,
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class ChaosDesk(AgentWorkflow):
    """A session: each message gets a quote, then an answer."""

    config = AgentConfig(model="test-model", tools=[get_quote], max_steps=40)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class ChaosStreamer(AgentWorkflow):
    """A quote, then a long answer streamed a word at a time."""

    config = AgentConfig(model="test-model", tools=[get_quote], max_steps=4)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)
