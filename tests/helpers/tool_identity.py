"""Workflows that report which objects their sandboxed modules see."""

from __future__ import annotations

from temporalio import workflow

from smyth_temporal import AgentConfig, AgentWorkflow, tool
from tests.helpers.agents import get_quote  # re-imported by the workflow sandbox for each run
from tests.helpers.trading import Order  # a tool's argument type: the worker shares its module


@workflow.defn
class ToolIdentity:
    @workflow.run
    async def run(self) -> list[int]:
        return [id(get_quote), id(get_quote.arguments_model)]


@tool(effect="side_effect")
async def size_order(order: Order) -> int:
    """The size of an order."""
    return order.quantity


@workflow.defn
class ModuleIdentity(AgentWorkflow):
    """Reports its tools' argument type and its own class, as its run sees them."""

    config = AgentConfig(model="test-model", tools=[size_order])

    @workflow.run
    async def run(self) -> list[int]:
        return [id(Order), id(ModuleIdentity)]
