"""Agents with approval-gated tools, shared by the approval tests (their tools live in
``tests.helpers.trading``, ``Trader`` in ``tests.helpers.trader``)."""

from __future__ import annotations

import dataclasses

from temporalio import workflow

from smyth_temporal import AgentConfig, AgentInput, AgentResult, AgentWorkflow
from tests.helpers.trader import Trader
from tests.helpers.trading import close_account


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
