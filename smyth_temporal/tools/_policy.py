"""``ApprovalPolicy``: who must consent to a gated tool call, how many, and by when.

A policy lives in code, on the tool (``@tool(requires_approval=ApprovalPolicy(...))``),
an agent's MCP overrides (``AgentConfig.mcp_approval``) or an agent's config
(``AgentConfig.approval_policy``). Its ``when`` predicate runs in the workflow; the rest
is recorded on each request as an ``ApprovalRule`` (``rule``), which is what judges
the decisions (``types.quorum.Quorum``).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from smyth_temporal.exceptions import ToolDefinitionError
from smyth_temporal.types.approvals import (
    REVIEWER_ACTIVITY_PREFIX,
    ApprovalReview,
    ApprovalRule,
    EscalationStep,
    ReviewRequest,
)
from smyth_temporal.types.tools import OnTimeout

__all__ = [
    "DEFAULT_APPROVER_ROLES",
    "DEFAULT_REVIEW_PROMPT",
    "DEFAULT_REVIEW_TIMEOUT",
    "ApprovalPolicy",
    "ApprovalRequirement",
    "ReviewFunction",
    "Reviewer",
    "policies_reviewers",
]

DEFAULT_APPROVER_ROLES: tuple[str, ...] = ("approver",)
"""Who may decide under a policy that names no roles: keys with the ``approver`` role."""

_NAME = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
_ON_TIMEOUT = ("reject", "approve", "fail")

DEFAULT_REVIEW_TIMEOUT = timedelta(minutes=2)
"""How long one attempt of a reviewer may take."""

DEFAULT_REVIEW_PROMPT = (
    "You review a tool call an AI agent wants to make before a person approves it. "
    'Answer with a JSON object {"verdict": "approve" | "reject" | "escalate" | '
    '"abstain", "reason": "..."}: reject what is clearly wrong or harmful, escalate '
    "what needs a more senior look, abstain when unsure."
)
"""What a model reviewer is told before its own ``prompt`` and the request."""

ReviewFunction = Callable[[ReviewRequest], Awaitable[ApprovalReview] | ApprovalReview]
"""A Python reviewer: takes the request, answers a verdict (``async def`` or plain)."""


@dataclass(frozen=True)
class Reviewer:
    """An automatic reviewer: a Python function, or a model with a prompt.

    It runs as an activity (``smyth.reviewer.<name>``, on the workers that serve the
    agent) as soon as a request appears, racing the people: it may reject or escalate
    at once, and approve only where the policy says ``auto_approve=True``. Its verdict
    is recorded on the request (``ApprovalRequest.review``) and, when it decides, as
    ``by="reviewer:<name>"`` with its reason.

    Added in 0.9.0.
    """

    name: str
    """Stable name (its activity's, and what decisions record)."""
    fn: ReviewFunction | None = None
    """The function, for a Python reviewer."""
    model: str | None = None
    """The model, for a model reviewer (asked through the worker's model provider)."""
    prompt: str = ""
    """What the model reviewer checks for (after ``DEFAULT_REVIEW_PROMPT``)."""
    timeout: timedelta = DEFAULT_REVIEW_TIMEOUT
    """How long one attempt may take."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ToolDefinitionError(
                f"Reviewer name {self.name!r} must be 1-64 letters, digits, '_', '.', '@' or '-'"
            )
        if (self.fn is None) == (self.model is None):
            raise ToolDefinitionError(
                f"Reviewer {self.name!r} takes either a function (fn) or a model, "
                "not both or neither"
            )
        if self.fn is not None and not callable(self.fn):
            raise ToolDefinitionError(f"Reviewer {self.name!r}: fn must be callable")

    @property
    def activity_name(self) -> str:
        """The reviewer's activity type name."""
        return REVIEWER_ACTIVITY_PREFIX + self.name


@dataclass(frozen=True)
class ApprovalPolicy:
    """Who must consent to a gated tool call, how many of them, and what happens if nobody does.

    ``requires_approval=True`` stays what it always was: one decision by anyone who may
    approve, the agent's deadline and timeout policy. A policy says more:

    Example::

        @tool(
            effect="side_effect",
            requires_approval=ApprovalPolicy(
                when=lambda amount, **_: amount > 10_000,
                roles=("finance",),
                quorum=2,
                deadline=timedelta(days=1),
                escalation=[EscalationStep(after=timedelta(hours=1), roles=("admin",))],
            ),
        )
        async def pay(amount: int, to: str) -> str: ...

    Added in 0.9.0.
    """

    when: Callable[..., bool] | None = None
    """Which calls need consent: a predicate over the validated arguments (as keyword
    arguments); ``None``: every call. Runs in the workflow, so it must be deterministic
    (no clock, no I/O, no randomness); one that raises gates the call."""
    roles: Sequence[str] = DEFAULT_APPROVER_ROLES
    """Roles (of API keys) that may decide. Decisions without keys (local use) are not
    checked against them."""
    quorum: int = 1
    """Distinct approvers needed; the same approver twice counts once."""
    forbid_requester: bool = True
    """The key that started the run may not decide (where runs are started with keys)."""
    deadline: timedelta | None = None
    """How long a request waits (default: the tool's ``approval_timeout``, then the
    agent's)."""
    escalation: Sequence[EscalationStep] = ()
    """Steps that widen who may decide (and notify) while nobody does, in time order,
    each before the deadline."""
    on_timeout: OnTimeout | None = None
    """What happens at the deadline: ``reject``, ``approve`` (only when set here, on
    purpose) or ``fail`` (default: the tool's or agent's, except that their ``approve``
    becomes ``reject`` under a policy)."""
    notify: Sequence[str] = ()
    """Notification channels told when a request is made (names the worker resolves)."""
    reject_on_any: bool = True
    """One rejection rejects the request; ``False``: ``quorum`` rejections do."""
    reviewer: Reviewer | None = None
    """An automatic reviewer that races the people (see ``Reviewer``)."""
    auto_approve: bool = False
    """Whether the reviewer's approval decides the request (otherwise it may only reject
    or escalate)."""

    def __post_init__(self) -> None:
        if isinstance(self.roles, str):
            raise ToolDefinitionError("ApprovalPolicy.roles takes a list of role names")
        _names("roles", self.roles)
        if not self.roles:
            raise ToolDefinitionError("ApprovalPolicy.roles must name at least one role")
        if isinstance(self.quorum, bool) or not isinstance(self.quorum, int) or self.quorum < 1:
            raise ToolDefinitionError(
                f"ApprovalPolicy.quorum must be at least 1, not {self.quorum!r}"
            )
        if self.deadline is not None and self.deadline <= timedelta(0):
            raise ToolDefinitionError("ApprovalPolicy.deadline must be positive")
        if self.on_timeout is not None and self.on_timeout not in _ON_TIMEOUT:
            raise ToolDefinitionError(
                f"ApprovalPolicy.on_timeout must be one of {list(_ON_TIMEOUT)}, "
                f"not {self.on_timeout!r}"
            )
        if isinstance(self.notify, str):
            raise ToolDefinitionError("ApprovalPolicy.notify takes a list of channel names")
        _names("notify", self.notify)
        if self.when is not None and not callable(self.when):
            raise ToolDefinitionError("ApprovalPolicy.when must be a predicate (or None)")
        if self.reviewer is not None and not isinstance(self.reviewer, Reviewer):
            raise ToolDefinitionError("ApprovalPolicy.reviewer takes a Reviewer")
        if self.auto_approve and self.reviewer is None:
            raise ToolDefinitionError("ApprovalPolicy.auto_approve needs a reviewer")
        steps = list(self.escalation)
        if any(not isinstance(s, EscalationStep) for s in steps):
            raise ToolDefinitionError("ApprovalPolicy.escalation takes EscalationStep values")
        for step in steps:
            _names("escalation roles", step.roles)
            _names("escalation notify", step.notify)
        afters = [s.after for s in steps]
        if afters != sorted(set(afters)):
            raise ToolDefinitionError(
                "ApprovalPolicy.escalation steps must come in time order, each later than the last"
            )
        if self.deadline is not None and afters and afters[-1] >= self.deadline:
            raise ToolDefinitionError(
                f"ApprovalPolicy.escalation step after {afters[-1]} would come at or after "
                f"the deadline ({self.deadline}) and never apply"
            )

    def gates(self, arguments: Mapping[str, Any]) -> bool:
        """Whether a call with these (bound, keyword) arguments needs consent."""
        return True if self.when is None else bool(self.when(**arguments))

    def rule(self) -> ApprovalRule:
        """The part recorded on each request, which judges its decisions."""
        return ApprovalRule(
            roles=tuple(self.roles),
            quorum=self.quorum,
            forbid_requester=self.forbid_requester,
            reject_on_any=self.reject_on_any,
            escalation=tuple(self.escalation),
            notify=tuple(self.notify),
            reviewer=self.reviewer.name if self.reviewer is not None else None,
            auto_approve=self.auto_approve,
        )

    def timeout_policy(self, default: OnTimeout) -> OnTimeout:
        """What applies at the deadline: the policy's own, else ``default``.

        A policy never approves at the deadline unless it says so itself.
        """
        if self.on_timeout is not None:
            return self.on_timeout
        return "reject" if default == "approve" else default


ApprovalRequirement = bool | Callable[..., bool] | ApprovalPolicy
"""What ``requires_approval`` takes: ``True`` (one approver, every call), a
deterministic predicate over the validated arguments (one approver, the calls it
picks), or an ``ApprovalPolicy``. Changed in 0.9.0: an ``ApprovalPolicy``."""


def _names(what: str, names: Sequence[str]) -> None:
    bad = [n for n in names if not isinstance(n, str) or not _NAME.match(n)]
    if bad:
        raise ToolDefinitionError(
            f"ApprovalPolicy {what}: {bad} are not names "
            "(1-64 letters, digits, '_', '.', '@' or '-')"
        )


def policies_reviewers(policies: Iterable[object]) -> list[Reviewer]:
    """The reviewers of the ``ApprovalPolicy`` values among ``policies``, one per name.

    Raises:
        ToolDefinitionError: Two different reviewers share a name.
    """
    found: dict[str, Reviewer] = {}
    for policy in policies:
        if not isinstance(policy, ApprovalPolicy) or policy.reviewer is None:
            continue
        reviewer = policy.reviewer
        if found.setdefault(reviewer.name, reviewer) != reviewer:
            raise ToolDefinitionError(f"two reviewers are named {reviewer.name!r}")
    return list(found.values())
