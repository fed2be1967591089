"""Agents for the tool-call identity and bounds tests (workflow code only)."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

from smyth_temporal import AgentInput, AgentResult, AgentWorkflow, tool, tool_context
from tests.helpers.agents import Analyst, record


@tool(
    effect="idempotent",
    retry=RetryPolicy(maximum_attempts=3, initial_interval=timedelta(milliseconds=50)),
)
async def flaky_note(text: str) -> str:
    """Write a note; the first attempt of every call fails (and is retried)."""
    record("flaky_note", text=text)
    if tool_context().attempt == 1:
        raise RuntimeError("the first attempt fails")
    return "noted"


@workflow.defn
class CappedAnalyst(AgentWorkflow):
    """``Analyst`` running at most 3 tool calls a turn."""

    config = dataclasses.replace(Analyst.config, max_tool_calls_per_turn=3)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class HoppingAnalyst(AgentWorkflow):
    """``Analyst`` continuing as new after every step (its keys must not start again)."""

    config = dataclasses.replace(
        Analyst.config,
        tools=[*Analyst.config.tools, flaky_note],
        continue_as_new_after_steps=1,
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)
