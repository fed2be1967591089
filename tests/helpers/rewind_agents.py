"""Agents of the rewind tests (a module of their own: the sandbox imports it)."""

from __future__ import annotations

import asyncio

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


GATES: dict[str, asyncio.Event] = {}
"""``wire_money`` sets ``started`` and waits for ``done`` (a test opens it)."""


@tool(effect="side_effect")
async def wire_money(amount: int) -> str:
    """Wire money; it takes until the test lets it finish.

    Args:
        amount: How much.
    """
    GATES.setdefault("started", asyncio.Event()).set()
    await GATES.setdefault("done", asyncio.Event()).wait()
    return f"wired {amount}"


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
        model="test-model", tools=[get_quote, send_email, place_order, wire_money], max_steps=8
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)
