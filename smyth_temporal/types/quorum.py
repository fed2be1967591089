"""Counting decisions on a request made under a policy: the quorum state machine (pure).

``Quorum`` judges one decision at a time against an ``ApprovalRule``: who may decide
(the roles, widened by each escalation step that applied), who may not (the key that
started the run, when the rule says so), and when the request is settled (``quorum``
distinct approvers; one rejection, or ``quorum`` of them). The run, the clients and
the gateway use the same object, so a decision one of them refuses is refused by all,
with the same words.

Invariants (tested with Hypothesis in ``tests/invariants/test_quorum.py``): the same
approver counts once; a request is never approved with fewer than ``quorum`` distinct
eligible approvers; a role not allowed at the time never counts; the requester never
counts when forbidden; with ``reject_on_any`` any counted rejection rejects.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from smyth_temporal.types.approvals import ApprovalDecision, ApprovalRequest, ApprovalRule

__all__ = ["Quorum", "QuorumOutcome"]

QuorumOutcome = Literal["pending", "approved", "rejected"]
"""Where the counted decisions leave a request."""


@dataclass(frozen=True)
class Quorum:
    """The decisions counted on one request, and the rule that counts them.

    Added in 0.9.0.
    """

    rule: ApprovalRule
    """The request's rule."""
    requester: str | None = None
    """The key that started the run (``None``: runs without keys)."""
    escalated: int = 0
    """How many escalation steps have applied."""
    votes: tuple[ApprovalDecision, ...] = ()
    """The decisions counted so far, in order."""

    @classmethod
    def of(cls, request: ApprovalRequest) -> Quorum | None:
        """The quorum of ``request``; ``None`` for a request without a policy."""
        if request.policy is None:
            return None
        return cls(
            rule=request.policy,
            requester=request.requested_by,
            escalated=len(request.escalated_at),
            votes=tuple(request.votes),
        )

    @property
    def roles(self) -> tuple[str, ...]:
        """The roles that may decide now: the rule's, then each applied step's."""
        roles = list(self.rule.roles)
        for step in self.rule.escalation[: self.escalated]:
            roles += [r for r in step.roles if r not in roles]
        return tuple(roles)

    @property
    def approvers(self) -> tuple[str, ...]:
        """Who approved, in order."""
        return tuple(v.by for v in self.votes if v.approved)

    @property
    def rejecters(self) -> tuple[str, ...]:
        """Who rejected, in order."""
        return tuple(v.by for v in self.votes if not v.approved)

    @property
    def progress(self) -> str:
        """``"1 of 2"``: approvals counted of those needed."""
        return f"{len(self.approvers)} of {self.rule.quorum}"

    @property
    def outcome(self) -> QuorumOutcome:
        """Where the counted decisions leave the request."""
        rejections = len(self.rejecters)
        if rejections and (self.rule.reject_on_any or rejections >= self.rule.quorum):
            return "rejected"
        if len(self.approvers) >= self.rule.quorum:
            return "approved"
        return "pending"

    def refusal(self, decision: ApprovalDecision) -> str | None:
        """Why ``decision`` may not count; ``None`` if it may.

        A decision without a role comes from trusted local use (no keys): its role is
        not checked. Edited arguments need a quorum of one, as every approver must
        approve the same arguments.
        """
        if self.outcome != "pending":
            return f"it is already {self.outcome} ({self.progress})"
        if decision.role is not None and decision.role not in self.roles:
            allowed = ", ".join(self.roles)
            return f"role {decision.role!r} may not decide it (roles that may: {allowed})"
        forbidden = self.requester if self.rule.forbid_requester else None
        if forbidden is not None and decision.by == forbidden:
            return f"{decision.by!r} started the run and may not decide its own request"
        if decision.by in {v.by for v in self.votes}:
            earlier = "approved" if decision.by in self.approvers else "rejected"
            return (
                f"{decision.by!r} already {earlier} it; each approver counts once ({self.progress})"
            )
        if decision.arguments is not None and self.rule.quorum > 1:
            return f"edited arguments need a quorum of 1, not {self.rule.quorum}"
        return None

    def add(self, decision: ApprovalDecision) -> Quorum:
        """The quorum with ``decision`` counted (it must have no ``refusal``).

        Raises:
            ValueError: ``refusal`` refuses the decision.
        """
        problem = self.refusal(decision)
        if problem is not None:
            raise ValueError(problem)
        return replace(self, votes=(*self.votes, decision))

    def escalate(self) -> Quorum:
        """The quorum after the next escalation step (if one is left)."""
        return replace(self, escalated=min(self.escalated + 1, len(self.rule.escalation)))
