"""Human approvals as data: requests, decisions, and the hash that pins arguments.

An agent records an ``ApprovalRequest`` when the model calls a gated tool; a person
(or a script) answers with an ``ApprovalDecision`` through a signal or an update. A
request made under an ``ApprovalPolicy`` carries the policy's recorded part
(``ApprovalRule``: roles, quorum, escalation) and the decisions counted so far, so the
run and every interface judge a decision by the same data (``types.quorum``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from smyth_temporal.types.tools import OnTimeout

__all__ = [
    "APPROVAL_SIGNAL",
    "APPROVAL_UPDATE",
    "REVIEWER_ACTIVITY_PREFIX",
    "ApprovalDecision",
    "ApprovalOutcome",
    "ApprovalRequest",
    "ApprovalReview",
    "ApprovalRule",
    "ApprovalStatus",
    "EscalationStep",
    "ReviewRequest",
    "ReviewVerdict",
    "arguments_sha256",
]

APPROVAL_SIGNAL = "approval_decision"
"""Signal carrying an ``ApprovalDecision`` (fire-and-forget; invalid ones are logged)."""

APPROVAL_UPDATE = "decide_approval"
"""Update carrying an ``ApprovalDecision``; answers ``ApprovalOutcome`` or rejects it."""

ApprovalStatus = Literal["pending", "approved", "rejected", "expired"]
"""Where an approval request is."""

REVIEWER_ACTIVITY_PREFIX = "smyth.reviewer."
"""An automatic reviewer runs as the activity ``smyth.reviewer.<name>``. Added in 0.9.0."""

ReviewVerdict = Literal["approve", "reject", "escalate", "abstain"]
"""What an automatic reviewer says about a request.

- ``approve``: run it (applied only where the policy says ``auto_approve=True``);
- ``reject``: do not run it (applied at once);
- ``escalate``: apply the policy's next escalation step now;
- ``abstain``: leave it to the people.
"""


def arguments_sha256(arguments: Mapping[str, Any]) -> str:
    """SHA-256 of the arguments' canonical JSON (sorted keys, no spaces, UTF-8).

    An approver who pins this hash approves exactly the arguments they saw.

    Added in 0.1.0.
    """
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


class ApprovalDecision(BaseModel):
    """A person's (or a script's) answer to an approval request.

    Added in 0.1.0.
    """

    request_id: str | None = None
    """The request decided; may be left out when exactly one request is pending."""
    approved: bool
    """Approve (the tool runs) or reject (it does not)."""
    by: str = Field(min_length=1)
    """Who decided (a name, an email, ``script:nightly``)."""
    comment: str | None = None
    """Why; a rejection's comment is shown to the model."""
    arguments_sha256: str | None = None
    """If given, must equal the request's hash: the approver saw these arguments."""
    arguments: dict[str, Any] | None = None
    """Edited arguments to run the tool with instead (validated against its schema)."""
    role: str | None = None
    """The decider's role, as the interface authenticated it (its API key's role);
    ``None`` without keys (trusted local use: roles are not checked). Added in 0.9.0."""


class EscalationStep(BaseModel):
    """One step of an approval policy's escalation: after a while, widen who may decide.

    Added in 0.9.0.
    """

    model_config = ConfigDict(frozen=True)

    after: timedelta = Field(gt=timedelta(0))
    """How long after the request this step applies (a durable timer in the run)."""
    roles: tuple[str, ...] = ()
    """Roles that may decide from this step on, besides the policy's own."""
    notify: tuple[str, ...] = ()
    """Notification channels told about the request at this step (names the worker
    resolves; URLs and credentials never enter history)."""


class ApprovalRule(BaseModel):
    """The recorded part of an ``ApprovalPolicy``: what judges the decisions on a request.

    Travels on the request (history, checkpoint, memo), so a decision is judged the
    same way by the run, after continue-as-new, and by every interface. The policy's
    ``when`` predicate and reviewer function stay in code.

    Added in 0.9.0.
    """

    model_config = ConfigDict(frozen=True)

    roles: tuple[str, ...] = ("approver",)
    """Roles that may decide (a key's role; not checked for decisions without keys)."""
    quorum: int = Field(default=1, ge=1)
    """Distinct approvers needed before the call runs."""
    forbid_requester: bool = True
    """The key that started the run may not decide (when runs carry who started them)."""
    reject_on_any: bool = True
    """One rejection rejects the request; otherwise ``quorum`` rejections do."""
    escalation: tuple[EscalationStep, ...] = ()
    """Steps that widen the roles (and notify) while nobody decides, in time order."""
    notify: tuple[str, ...] = ()
    """Notification channels told when the request is made."""
    reviewer: str | None = None
    """The automatic reviewer's name, if the policy has one."""
    auto_approve: bool = False
    """Whether the reviewer may approve (otherwise it may only reject or escalate)."""


class ApprovalReview(BaseModel):
    """An automatic reviewer's verdict on a request, and why (recorded on the request).

    Added in 0.9.0.
    """

    verdict: ReviewVerdict
    """What the reviewer says."""
    reason: str = ""
    """Why, in its words (shown to the model with a rejection)."""
    by: str = ""
    """``reviewer:<name>`` (set by the run)."""
    reviewed_at: datetime | None = None
    """When the run took the verdict (workflow time)."""
    applied: bool = False
    """Whether the verdict changed the request (an ``approve`` without ``auto_approve``,
    or an ``escalate`` with no step left, did not)."""


class ApprovalRequest(BaseModel):
    """A gated tool call waiting for (or past) a decision: the audit record.

    Added in 0.1.0.
    """

    id: str
    """Stable id of the request within the agent run."""
    tool: str
    """The tool's name."""
    call_id: str
    """The call's id in the run (``ToolCall.id``; changed in 0.8.0: given by the workflow)."""
    step: int
    """The agent step that requested the call."""
    arguments: dict[str, Any]
    """The validated arguments the model asked for."""
    arguments_sha256: str
    """SHA-256 of ``arguments``' canonical JSON."""
    reason: str | None = None
    """What the model said in the turn it made the call."""
    requested_at: datetime
    """When the request was made (workflow time)."""
    deadline: datetime
    """When ``on_timeout`` applies if nobody has decided."""
    on_timeout: OnTimeout = "reject"
    """What happens at the deadline."""
    status: ApprovalStatus = "pending"
    """Where the request is."""
    decision: ApprovalDecision | None = None
    """The decision, once made (for ``expired``: the policy applied, by ``system:timeout``)."""
    decided_at: datetime | None = None
    """When the decision was applied (workflow time)."""
    executed_arguments_sha256: str | None = None
    """Hash of the arguments the tool actually ran with (differs after an edit)."""
    policy: ApprovalRule | None = None
    """The policy's recorded rule; ``None``: one decision by anyone who may approve
    (``requires_approval=True``, and every request made before 0.9.0). Added in 0.9.0."""
    requested_by: str | None = None
    """The key that started the run (``AgentInput.started_by``), kept from deciding when
    the policy forbids it. Added in 0.9.0."""
    votes: list[ApprovalDecision] = Field(default_factory=list)
    """Decisions counted towards the quorum so far, one per approver, in order (the
    final one included). Added in 0.9.0."""
    escalated_at: list[datetime] = Field(default_factory=list)
    """When each escalation step applied (workflow time), in order. Added in 0.9.0."""
    review: ApprovalReview | None = None
    """The automatic reviewer's verdict, once it gave one. Added in 0.9.0."""


class ReviewRequest(BaseModel):
    """What an automatic reviewer's activity is handed.

    Added in 0.9.0.
    """

    reviewer: str
    """The reviewer's name."""
    workflow_id: str
    """The run's workflow id."""
    agent: str
    """The agent's workflow type name."""
    request: ApprovalRequest
    """The request to review (its tool, arguments and what the model said)."""


class ApprovalOutcome(BaseModel):
    """What the ``decide`` update answers: the request as it stands after the decision.

    Added in 0.1.0.
    """

    request: ApprovalRequest
    """The decided request."""
