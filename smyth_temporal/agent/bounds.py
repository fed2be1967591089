"""A run's bounds: steps, tokens and money, its own and those a parent put on it.

Workflow code; pure reads of the config, the input's ``AgentLimits`` and the usage
counted so far (costs come priced from the model activity, so they replay as
recorded).
"""

from __future__ import annotations

from collections.abc import Callable

from smyth_temporal.agent.config import AgentConfig
from smyth_temporal.agent.conversation import Conversation
from smyth_temporal.types.agent import AgentInput, AgentLimits

__all__ = ["RunBounds"]


class RunBounds:
    """Where a run must stop: ``step_limit``, ``out_of_tokens``, ``over_budget``.

    Args:
        config: The agent's config (``max_steps``, ``max_cost``).
        conversation: Its usage so far (sub-agents' included).
        input: The run's input, once there is one (a parent's ``limits``).
        refused: Why the tenant's budget refused a model call, if it did.
    """

    def __init__(
        self,
        config: AgentConfig,
        conversation: Conversation,
        input: Callable[[], AgentInput | None],
        refused: Callable[[], str | None],
    ) -> None:
        self._config = config
        self._conversation = conversation
        self._input = input
        self._refused = refused

    @property
    def _limits(self) -> AgentLimits | None:
        input = self._input()
        return input.limits if input is not None else None

    @property
    def step_limit(self) -> int:
        """The step count at which the agent stops (``max_steps``, or a parent's bound)."""
        limits = self._limits
        if limits is not None and limits.max_steps is not None:
            return min(self._config.max_steps, limits.max_steps)
        return self._config.max_steps

    @property
    def out_of_tokens(self) -> bool:
        """Whether a parent's token bound (``AgentLimits.max_tokens``) is used up."""
        limits = self._limits
        used = self._conversation.usage.total_tokens
        return bool(limits and limits.max_tokens and used >= limits.max_tokens)

    @property
    def max_cost(self) -> float | None:
        """The most the run may spend: ``AgentConfig.max_cost`` or a parent's, the lower."""
        limits = self._limits
        bounds = [self._config.max_cost, limits.max_cost if limits is not None else None]
        given = [b for b in bounds if b is not None]
        return min(given) if given else None

    @property
    def remaining_cost(self) -> float | None:
        """What is left to spend (``None``: no bound), for a sub-agent's limits."""
        bound = self.max_cost
        return None if bound is None else max(bound - self._conversation.usage.cost, 0.0)

    @property
    def over_budget(self) -> bool:
        """Whether the run's money is spent, or its tenant's budget refused a call."""
        bound = self.max_cost
        spent = bound is not None and self._conversation.usage.cost >= bound
        return spent or self._refused() is not None

    def exhausted(self) -> bool:
        """Whether the run must stop before its next model call (tokens or money)."""
        return self.out_of_tokens or self.over_budget
