"""Agents whose tools are gated by ``ApprovalPolicy`` (tools in ``policy_tools``)."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from temporalio import workflow

from smyth_temporal import AgentConfig, AgentInput, AgentResult, AgentWorkflow, ApprovalPolicy
from tests.helpers.policy_tools import POLICY_TOOLS, REVIEWED_TOOLS, pay
from tests.helpers.trading import TRADER_TOOLS

HOPS = 4


@workflow.defn
class Treasurer(AgentWorkflow):
    config = AgentConfig(model="test-model", tools=[*POLICY_TOOLS, *REVIEWED_TOOLS], max_steps=6)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


# The time-skipping test server cannot register search attributes.
@workflow.defn
class OfflineTreasurer(AgentWorkflow):
    config = dataclasses.replace(Treasurer.config, search_attributes=False)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class QuorumRelay(AgentWorkflow):
    """Asks for a payment's approval, then continues as new ``HOPS`` times while it waits.

    The last run waits for ``release`` (a signal), then runs the call.
    """

    config = AgentConfig(model="test-model", tools=[pay], context_budget=None)

    @workflow.signal
    def release(self) -> None:
        self.data["released"] = True

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        if not self.begin(input):
            reply = await self.think()
            for call in reply.tool_calls:
                self.request_approval(call)
        if self.lifecycle.generation < HOPS:
            await workflow.sleep(timedelta(milliseconds=300))
            self.continue_as_new()
        await workflow.wait_condition(lambda: bool(self.data.get("released")))
        assistant = next(m for m in reversed(self.conversation.messages) if m.tool_calls)
        await self.act(assistant.tool_calls)
        answer = await self.think()
        return self.finish(answer.content or "")


@workflow.defn
class CarefulTrader(AgentWorkflow):
    """Trader's tools (``sell`` says only ``requires_approval=True``) under an agent-wide
    two-approver policy."""

    config = AgentConfig(
        model="test-model",
        tools=TRADER_TOOLS,
        approval_policy=ApprovalPolicy(quorum=2, forbid_requester=False),
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)
