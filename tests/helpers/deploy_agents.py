"""Two builds of the same agents, for the safe-deploy tests (``tests/clients/test_deploys.py``).

``ClerkA`` and ``ClerkB`` are builds A and B of the workflow type ``DeployClerk``: B
waits on a durable timer before its loop (a command A never schedules, so B cannot
replay A's runs) and marks its answers. A worker process loads one of them.
``RelayA`` and ``RelayB`` are the same pair for an agent that continues as new after
every step (where a pinned run moves to the current build).

``Filer``, ``RewordedFiler`` and ``ThrottledFiler`` are builds of ``DeployFiler`` for
``smyth verify-deploy``: the reworded build changes only the instructions (the same
commands: compatible), the throttled one waits before every model turn (a timer where
history has an activity: incompatible).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from datetime import timedelta

from temporalio import workflow

from smyth_temporal import (
    AgentConfig,
    AgentInput,
    AgentResult,
    AgentWorkflow,
    Message,
    Tool,
    ToolCall,
)
from tests.helpers.agents import get_quote
from tests.helpers.trading import sell

B_MARK = " [build B]"
"""What build B appends to its answers."""

CLERK_CONFIG = AgentConfig(model="test-model", tools=[sell], max_steps=4)


@workflow.defn(name="DeployClerk")
class ClerkA(AgentWorkflow):
    config = CLERK_CONFIG

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn(name="DeployClerk")
class ClerkB(AgentWorkflow):
    config = dataclasses.replace(CLERK_CONFIG, instructions="Sell carefully.")

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        await workflow.sleep(timedelta(milliseconds=10))
        result = await self.run_agent(input)
        return result.model_copy(update={"output": result.output + B_MARK})


RELAY_CONFIG = dataclasses.replace(CLERK_CONFIG, continue_as_new_after_steps=1)


@workflow.defn(name="DeployRelay")
class RelayA(AgentWorkflow):
    """Build A of an agent that continues as new after every step."""

    config = RELAY_CONFIG

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn(name="DeployRelay")
class RelayB(AgentWorkflow):
    """Build B of it: a timer first (so it cannot replay A's runs), marked answers."""

    config = RELAY_CONFIG

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        await workflow.sleep(timedelta(milliseconds=10))
        result = await self.run_agent(input)
        return result.model_copy(update={"output": result.output + B_MARK})


FILER_CONFIG = AgentConfig(
    model="test-model", instructions="Quote the symbol.", tools=[get_quote], max_steps=3
)


@workflow.defn(name="DeployFiler")
class Filer(AgentWorkflow):
    config = FILER_CONFIG

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn(name="DeployFiler")
class RewordedFiler(AgentWorkflow):
    """New instructions only: the model sees another prompt, the commands are the same."""

    config = dataclasses.replace(FILER_CONFIG, instructions="Quote the ticker, politely.")

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn(name="DeployFiler")
class ThrottledFiler(AgentWorkflow):
    """Waits before every model turn: a timer where history has the model activity."""

    config = FILER_CONFIG

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)

    async def think(self, *, tools: Sequence[Tool] | None = None) -> Message:
        await asyncio.sleep(0.1)  # a durable timer inside a workflow
        return await super().think(tools=tools)


@workflow.defn(name="DeployFiler")
class HastyFiler(AgentWorkflow):
    """Answers without running the tool calls (the model is asked again at once)."""

    config = FILER_CONFIG

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)

    async def act(self, calls: Sequence[ToolCall]) -> list[Message]:
        results = [
            Message(role="tool", tool_call_id=c.id, name=c.name, content="skipped") for c in calls
        ]
        self.conversation.add(*results)
        return results


@workflow.defn(name="DeployFiler")
class TerseFiler(AgentWorkflow):
    """Stops after the model's first turn: history goes on where the code completes."""

    config = FILER_CONFIG

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        self.begin(input)
        reply = await self.think()
        return self.finish(reply.content or "")
