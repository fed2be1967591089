"""``Reporter``: an agent whose tools answer at length, for the console's run view tests.

A real research run reads filings and pages: each tool result is dozens of lines. The
run view must stay a compact timeline however long they are.
"""

from __future__ import annotations

from temporalio import workflow

from smyth_temporal import AgentConfig, AgentInput, AgentResult, AgentWorkflow, tool

FILING_LINES = 40
"""Lines in each filing ``read_filing`` returns."""


@tool
async def read_filing(symbol: str, section: str) -> str:
    """A long section of a company's filing (read-only).

    Args:
        symbol: The ticker, e.g. ACME.
        section: Which section, e.g. risks.
    """
    return "\n".join(
        f"{symbol} {section}, line {n}: revenue, margins and guidance as reported."
        for n in range(1, FILING_LINES + 1)
    )


@workflow.defn
class Reporter(AgentWorkflow):
    config = AgentConfig(
        model="test-model",
        instructions="You write reports from filings.",
        tools=[read_filing],
        max_steps=10,
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)
