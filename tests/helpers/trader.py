"""``Trader``, an agent whose sales wait for a person: alone in its module.

A worker imports an agent's module again for every run (the workflow sandbox), so this
one holds the agent and nothing else; its tools live in ``tests.helpers.trading``, a module
without workflows that runs share (as the README advises). The parked-agents bench
measures what such a module costs per waiting run.
"""

from __future__ import annotations

from temporalio import workflow

from smyth_temporal import AgentConfig, AgentInput, AgentResult, AgentWorkflow
from tests.helpers.trading import TRADER_TOOLS


@workflow.defn
class Trader(AgentWorkflow):
    config = AgentConfig(model="test-model", tools=TRADER_TOOLS, max_steps=6)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)
