"""A lead agent and its sub-agents, for the delegation tests."""

from __future__ import annotations

from temporalio import workflow

from smyth_temporal import AgentConfig, AgentInput, AgentResult, AgentWorkflow
from tests.helpers.context_agents import check_price, daily_report, place_order


@workflow.defn
class Helper(AgentWorkflow):
    """Has a tool (check_price) that its leads do not have."""

    config = AgentConfig(
        model="helper-model", tools=[daily_report, check_price, place_order], max_steps=6
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class Lead(AgentWorkflow):
    """Its model may hand tasks to Helper through the built-in delegate tool."""

    config = AgentConfig(
        model="lead-model", tools=[daily_report, place_order], subagents=[Helper], max_steps=4
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class Manager(AgentWorkflow):
    """Delegates in code, with a narrow tool list and a step budget."""

    config = AgentConfig(model="lead-model", tools=[daily_report, place_order])

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        self.begin(input)
        child = await self.delegate(Helper, input.prompt, tools=["daily_report"], max_steps=2)
        return self.finish(f"{child.status}: {child.output}")
