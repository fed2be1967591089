"""Agents for the console's browser tests.

``Reporter``: its tool answers at length, as a real research run's do (filings, pages);
the run view must stay a compact timeline however long they are. ``Janitor``: its first
tool's request expires after ``PURGE_DEADLINE`` while its second keeps the run waiting.
``Clerk``: its payments need two approvers.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow

from smyth_temporal import AgentConfig, AgentInput, AgentResult, AgentWorkflow, ApprovalPolicy, tool
from tests.helpers.trading import record, sell

FILING_LINES = 40
"""Lines in each filing ``read_filing`` returns."""

PURGE_DEADLINE = timedelta(seconds=15)
"""How long a request to purge a cache waits; long enough for a person to select it."""


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


@tool(
    effect="side_effect",
    requires_approval=True,
    approval_timeout=PURGE_DEADLINE,
    on_timeout="reject",
)
async def purge_cache(service: str) -> str:
    """Purge a service's cache (rejected if nobody approves within 15 s).

    Args:
        service: The service.
    """
    record("purge_cache", service=service)
    return f"purged {service}"


@tool(
    effect="side_effect",
    requires_approval=ApprovalPolicy(roles=("approver", "admin"), quorum=2),
)
async def pay_supplier(amount: int, to: str) -> str:
    """Pay a supplier (two approvers).

    Args:
        amount: How much.
        to: Which supplier.
    """
    record("pay_supplier", amount=amount, to=to)
    return f"paid {amount} to {to}"


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


@workflow.defn
class Janitor(AgentWorkflow):
    config = AgentConfig(model="test-model", tools=[purge_cache, sell], max_steps=4)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class Clerk(AgentWorkflow):
    config = AgentConfig(model="test-model", tools=[pay_supplier], max_steps=4)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)
