"""Agents with approval-gated tools, shared by the approval tests."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from temporalio import workflow

from smyth_temporal import AgentConfig, AgentInput, AgentResult, AgentWorkflow, tool
from tests.trading import Order, record


@tool(effect="side_effect", requires_approval=lambda order: order.quantity > 100)
async def buy(order: Order) -> str:
    """Buy shares; large orders need a person's consent."""
    record("buy", symbol=order.symbol, quantity=order.quantity)
    return f"bought {order.quantity} {order.symbol}"


@tool(effect="side_effect", requires_approval=True)
async def sell(symbol: str, quantity: int) -> str:
    """Sell shares (always needs consent)."""
    record("sell", symbol=symbol, quantity=quantity)
    return f"sold {quantity} {symbol}"


@tool(effect="side_effect", requires_approval=True, approval_timeout=timedelta(hours=24))
async def wire(amount: int) -> str:
    """Wire money; rejected when nobody decides within a day."""
    record("wire", amount=amount)
    return f"wired {amount}"


@tool(
    effect="side_effect",
    requires_approval=True,
    approval_timeout=timedelta(hours=24),
    on_timeout="approve",
)
async def rebalance(target: str) -> str:
    """Rebalance the portfolio; goes ahead when nobody objects within a day."""
    record("rebalance", target=target)
    return f"rebalanced to {target}"


@tool(effect="side_effect", requires_approval=True, approval_timeout=timedelta(hours=24))
async def close_account(reason: str) -> str:
    """Close the account; the run fails when nobody decides within a day."""
    record("close_account", reason=reason)
    return "closed"


TRADER_TOOLS = [buy, sell, wire, rebalance]


@workflow.defn
class Trader(AgentWorkflow):
    config = AgentConfig(model="test-model", tools=TRADER_TOOLS, max_steps=6)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class StrictTrader(AgentWorkflow):
    config = AgentConfig(
        model="test-model",
        tools=[close_account],
        on_approval_timeout="fail",
        max_steps=3,
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


# The time-skipping test server cannot register search attributes.
@workflow.defn
class OfflineTrader(AgentWorkflow):
    config = dataclasses.replace(Trader.config, search_attributes=False)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class OfflineStrictTrader(AgentWorkflow):
    config = dataclasses.replace(StrictTrader.config, search_attributes=False)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)
