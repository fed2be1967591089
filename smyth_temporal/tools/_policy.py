"""``ApprovalPolicy``: who must consent to a gated tool call, how many, and by when.

A policy lives in code, on the tool (``@tool(requires_approval=ApprovalPolicy(...))``),
an agent's MCP overrides (``AgentConfig.mcp_approval``) or an agent's config
(``AgentConfig.approval_policy``). Its ``when`` predicate runs in the workflow; the rest
is recorded on each request as an ``ApprovalRule`` (``rule``), which is what judges
the decisions (``types.quorum.Quorum``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from smyth_temporal.exceptions import ToolDefinitionError
from smyth_temporal.types.approvals import ApprovalRule, EscalationStep
from smyth_temporal.types.tools import OnTimeout

__all__ = ["DEFAULT_APPROVER_ROLES", "ApprovalPolicy", "ApprovalRequirement"]

DEFAULT_APPROVER_ROLES: tuple[str, ...] = ("approver",)
"""Who may decide under a policy that names no roles: keys with the ``approver`` role."""

_NAME = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
_ON_TIMEOUT = ("reject", "approve", "fail")


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
