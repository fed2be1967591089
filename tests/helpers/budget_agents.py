"""Agents with money bounds, for the budget tests (their model costs 1.0 a call)."""

from __future__ import annotations

from typing import Any

from temporalio import workflow

from smyth_temporal import AgentConfig, AgentInput, AgentResult, AgentWorkflow
from tests.helpers.agents import get_quote
from tests.helpers.context_agents import place_order

PRICED_MODEL = "priced-model"
"""Priced so that a scripted call (10 input and 10 output tokens) costs exactly 1.0."""

PRICES_TOML = f'["{PRICED_MODEL}"]\ninput = 50000.0\noutput = 50000.0\n'


def priced(**config: Any) -> AgentConfig:
    """An agent config on the priced model with the quote tool (10 steps unless given)."""
    defaults: dict[str, Any] = {
        "model": PRICED_MODEL,
        "tools": [get_quote],
        "max_steps": 10,
        "model_settings": {"max_tokens": 10},
        "search_attributes": False,
    }
    return AgentConfig(**{**defaults, **config})


@workflow.defn
class Spender(AgentWorkflow):
    """Quotes again and again; stops at 2.5 spent."""

    config = priced(max_cost=2.5)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class Intern(AgentWorkflow):
    """No bound of its own: only what its boss leaves it."""

    config = priced()

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class Boss(AgentWorkflow):
    """Hands work to an Intern; 3.5 for the two of them."""

    config = priced(subagents=[Intern], max_cost=3.5)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class Shopper(AgentWorkflow):
    """No bound of its own: its tenant's budget decides."""

    config = priced(max_steps=4)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class AskingSpender(AgentWorkflow):
    """Stops at 1.5 spent unless a person lets it spend more."""

    config = priced(max_cost=1.5, on_over_budget="ask")

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class Hopper(AgentWorkflow):
    """Continues as new after every step; only its tenant's budget stops it."""

    config = priced(continue_as_new_after_steps=1)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class PatientSpender(AgentWorkflow):
    """Asks to go on past 1.5 spent, places gated orders, continues as new every 3 steps."""

    config = priced(
        tools=[get_quote, place_order],
        max_cost=1.5,
        on_over_budget="ask",
        continue_as_new_after_steps=3,
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


ROUTED_PRICES_TOML = '["scripted"]\ninput = 50000.0\noutput = 50000.0\n'
"""Prices the model the scripted model answers as, not the one ``Routed`` asks for."""


@workflow.defn
class Routed(AgentWorkflow):
    """Asks for a model with no price (a router); the answer names one with a price."""

    config = priced(model="auto-router", max_steps=4)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)
