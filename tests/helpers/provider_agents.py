"""The configs that the agents of each provider's tests share, differing only by model.

``anthropic_agents``, ``google_agents`` and ``fallback_agents`` keep one class per agent
(a workflow's type is its class name, and recorded histories name it); what the agents
are (instructions, tools, budgets) is written once here.
"""

from __future__ import annotations

from smyth_temporal import AgentConfig
from tests.helpers.trading import get_quote

RESEARCH = (
    "You are a careful market analyst. Look quotes up with get_quote before answering, "
    "one symbol at a time, and answer in one sentence. "
) * 30
"""Long instructions, as real agents have: the prefix worth caching."""


def analyst(model: str) -> AgentConfig:
    """A quote-reading analyst with long instructions (the cache benches' agent)."""
    return AgentConfig(model=model, instructions=RESEARCH, tools=[get_quote], max_steps=60)


def long_runner(model: str) -> AgentConfig:
    """``analyst`` for long runs: compacts beyond 2,400 tokens, continues as new every 25 turns."""
    return AgentConfig(
        model=model,
        instructions=RESEARCH,
        tools=[get_quote],
        max_steps=200,
        context_budget=2_400,
        continue_as_new_after_steps=25,
    )


def with_fallback(model: str, fallback: str) -> AgentConfig:
    """One sentence answers on ``model``, falling back to ``fallback``."""
    return AgentConfig(
        model=model,
        fallback_models=[fallback],
        instructions="Answer in one sentence.",
        tools=[get_quote],
    )


def in_small_window(model: str) -> AgentConfig:
    """The default budget (32k), far above the test models' windows: only the window's
    refusal can make it compact."""
    return AgentConfig(
        model=model, instructions="Quote the symbols one at a time.", tools=[get_quote]
    )
