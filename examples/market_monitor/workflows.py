"""The market monitor agent: quotes, news, volatility, alerts, sales, and a report."""

from __future__ import annotations

from temporalio import workflow

from smyth_temporal import AgentConfig, AgentInput, AgentResult, AgentWorkflow

# The tools run only on workers (as activities); the workflow reads their specs.
# Passing the module through keeps the sandbox from re-importing it for every run.
with workflow.unsafe.imports_passed_through():
    from examples.market_monitor.tools import (
        get_news,
        get_quote,
        get_volatility,
        sell_position,
        send_alert,
    )

__all__ = ["INSTRUCTIONS", "MODEL", "MarketMonitor"]

MODEL = "gpt-4o-mini"
"""The model the agent asks for; a worker's provider resolves the name."""

INSTRUCTIONS = """\
You are a market monitor for a trading desk. Use the tools to look at the market; \
never guess a price, a headline or a number. Fetch independent data in the same turn \
(for example the quotes of several symbols at once). An alert interrupts a trader: \
send one only for a move of 2 standard deviations or more, with the cause if the news \
gives one. Sell shares only when the task tells you to, and say why in the same turn: \
a trader reads it when approving the sale. End with a short report: one line per \
symbol, then the alerts you sent and the sales you made."""
"""The system prompt."""


@workflow.defn
class MarketMonitor(AgentWorkflow):
    """Watches a few stocks, reads the news, measures the moves, raises alerts and sells.

    Large sales wait for a trader's approval (see ``sell_position``).
    """

    config = AgentConfig(
        model=MODEL,
        instructions=INSTRUCTIONS,
        tools=[get_quote, get_news, get_volatility, send_alert, sell_position],
        max_steps=12,
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        """Run the default agent loop on the task."""
        return await self.run_agent(input)
