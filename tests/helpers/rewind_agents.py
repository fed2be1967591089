"""Agents of the rewind tests (a module of their own: the sandbox imports it)."""

from __future__ import annotations

from temporalio import workflow

from smyth_temporal import AgentConfig, AgentInput, AgentResult, AgentWorkflow, tool
from tests.helpers.agents import get_quote, record
from tests.helpers.context_agents import place_order


@tool(effect="side_effect")
async def send_email(to: str, text: str) -> str:
    """Send an e-mail (a side effect a reset cannot undo).

    Args:
        to: The recipient.
        text: The message.
    """
    record("send_email", to=to, text=text)
    return f"sent to {to}"


@workflow.defn
class Rewindable(AgentWorkflow):
    """Quotes, e-mails and memory: what a rewind goes back over."""

    config = AgentConfig(
        model="test-model",
        tools=[get_quote, send_email],
        memory_namespace="research",
        memory_episodes=False,
        max_steps=8,
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class Mailer(AgentWorkflow):
    """Quotes, e-mails and orders (approved first), without memory."""

    config = AgentConfig(
        model="test-model", tools=[get_quote, send_email, place_order], max_steps=8
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)
