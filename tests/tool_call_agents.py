"""Agents for the tool-call identity and bounds tests (workflow code only)."""

from __future__ import annotations

import dataclasses

from temporalio import workflow

from smyth_temporal import AgentInput, AgentResult, AgentWorkflow
from tests.agents import Analyst


@workflow.defn
class CappedAnalyst(AgentWorkflow):
    """``Analyst`` running at most 3 tool calls a turn."""

    config = dataclasses.replace(Analyst.config, max_tool_calls_per_turn=3)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)
