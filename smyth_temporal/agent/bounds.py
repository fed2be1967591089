"""A run's bounds: steps, tokens and money, its own and those a parent put on it.

Workflow code; pure reads of the config, the input's ``AgentLimits`` and the usage
counted so far (costs come priced from the model activity, so they replay as
recorded), and, with ``AgentConfig(on_over_budget="ask")``, approvals to spend more.

An approved extension stays in force for the rest of the run's chain: continue-as-new
carries only the recent decided requests, so the checkpoint carries what the approved
extensions it leaves out added (``AgentCheckpoint.over_budget_extension``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from smyth_temporal.agent.approvals import Approvals
from smyth_temporal.agent.loop import Loop
from smyth_temporal.agent.run import Run
from smyth_temporal.tools import Tool, tool
from smyth_temporal.types.agent import AgentLimits, AgentStatus
from smyth_temporal.types.approvals import ApprovalRequest
from smyth_temporal.types.messages import ToolCall

__all__ = ["CONTINUE_OVER_BUDGET", "RunBounds", "carried_extension", "extension"]


@tool(
    name="continue_over_budget",
    effect="side_effect",
    requires_approval=True,
    executor="approval-only",  # never run: approving it is the whole effect
)
async def _continue_over_budget(spent: float, limit: float, extra: float) -> str:
    """Let the run spend ``extra`` more than its limit (it has spent ``spent``).

    Args:
        spent: What the run (sub-agents included) has spent so far.
        limit: Its limit so far.
        extra: How much more it may spend once approved (edit to change it).
    """
    raise NotImplementedError  # pragma: no cover (an approval, not a call)


CONTINUE_OVER_BUDGET: Tool = _continue_over_budget
"""The built-in tool whose approval lets a run spend more (never offered to the model)."""


def extension(request: ApprovalRequest) -> float:
    """What ``request`` adds to a run's ``max_cost`` (0 unless an approved extension).

    An approved ``continue_over_budget`` request adds its ``extra``, the approver's
    edit winning. Added in 0.8.0.
    """
    if request.tool != CONTINUE_OVER_BUDGET.name or request.status != "approved":
        return 0.0
    edited = request.decision.arguments if request.decision else None
    return float((edited or request.arguments)["extra"])


def carried_extension(
    before: float, requests: Iterable[ApprovalRequest], carried: Iterable[ApprovalRequest]
) -> float:
    """What continue-as-new must carry apart from the requests it carries.

    Args:
        before: What the run restored apart from its requests (0 in a chain's first run).
        requests: Every request of the run.
        carried: The requests the next run restores.

    Added in 0.8.0.
    """
    kept = {request.id for request in carried}
    return before + sum(extension(r) for r in requests if r.id not in kept)


class RunBounds:
    """Where a run must stop: ``step_limit``, ``out_of_tokens``, ``over_budget``.

    Args:
        run: The agent's run (config: ``max_steps``, ``max_cost``, ``on_over_budget``;
            the conversation: usage so far, sub-agents' included; the input, once
            there is one: a parent's ``limits``).
        loop: The run's loop (``refused``: why the tenant's budget refused a call).
        approvals: The run's approvals, where extensions are asked for and found again
            (they are carried across continue-as-new with the decided requests).

    Changed in 0.9.0: takes the ``Run``.
    """

    def __init__(self, run: Run, loop: Loop, approvals: Approvals) -> None:
        self._run = run
        self._config = run.config
        self._conversation = run.conversation
        self._loop = loop
        self._approvals = approvals
        approvals.register(CONTINUE_OVER_BUDGET)  # so an approver's edit is checked

    @property
    def _limits(self) -> AgentLimits | None:
        input = self._run.started
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
        """The most the run may spend (``None``: no bound).

        ``AgentConfig.max_cost`` or a parent's, the lower, plus what approvals of
        ``continue_over_budget`` added.
        """
        limits = self._limits
        bounds = [self._config.max_cost, limits.max_cost if limits is not None else None]
        given = [b for b in bounds if b is not None]
        return min(given) + self._extended() if given else None

    @property
    def remaining_cost(self) -> float | None:
        """What is left to spend (``None``: no bound), for a sub-agent's limits."""
        bound = self.max_cost
        return None if bound is None else max(bound - self._conversation.usage.cost, 0.0)

    @property
    def spent(self) -> bool:
        """Whether the run has spent its ``max_cost``."""
        bound = self.max_cost
        return bound is not None and self._conversation.usage.cost >= bound

    @property
    def over_budget(self) -> bool:
        """Whether the run's money is spent, or its tenant's budget refused a call."""
        return self.spent or self._loop.refused is not None

    def stop_status(self) -> AgentStatus:
        """Why a run that ended without an answer stopped.

        ``over_budget`` (money spent, or the tenant's budget refused a call),
        ``interrupted`` (an interrupt stopped the turn) or ``max_steps``. Added in 0.9.0.
        """
        if self.over_budget:
            return "over_budget"
        return "interrupted" if self._loop.interrupted else "max_steps"

    def exhausted(self) -> bool:
        """Whether the run must stop before its next model call (tokens or money)."""
        return self.out_of_tokens or self.over_budget

    async def may_go_on(self) -> bool:
        """Whether the run may take another turn: within its bounds, or let go on by a person."""
        return not self.exhausted() or await self.may_continue()

    async def may_continue(self) -> bool:
        """Ask a person to let the run spend more, if it is configured to; their answer.

        Only a spent ``max_cost`` is asked about (never a tenant's refusal), and only
        with ``on_over_budget="ask"``; the request waits like any approval (deadline,
        ``on_approval_timeout``, interrupts).
        """
        bound = self.max_cost
        if self._config.on_over_budget != "ask" or bound is None or not self.spent:
            return False
        if self._loop.refused is not None:
            return False
        step = self._conversation.step
        extra = self._config.max_cost or bound
        spent = round(self._conversation.usage.cost, 6)
        arguments = {"spent": spent, "limit": round(bound, 6), "extra": extra}
        call = ToolCall(
            id="budget", name=CONTINUE_OVER_BUDGET.name, arguments=json.dumps(arguments)
        )
        reason = (
            f"The run has spent {spent:g} of its limit of {bound:g}; continue for {extra:g} more?"
        )
        request = self._approvals.request(call, CONTINUE_OVER_BUDGET, step=step, reason=reason)
        if request is None or request.status != "pending":
            return False  # asked at this step already: what was granted did not cover a turn
        await self._approvals.wait(request)
        decided: str = request.status  # wait() changed it (a type checker keeps "pending")
        return decided == "approved"

    def _extended(self) -> float:
        """What approved ``continue_over_budget`` requests added (edited amounts win).

        Those of earlier runs that continue-as-new no longer carries are included.
        """
        input = self._run.started
        checkpoint = input.checkpoint if input is not None else None
        before = checkpoint.over_budget_extension if checkpoint is not None else 0.0
        return before + sum(extension(r) for r in self._approvals.requests.values())
