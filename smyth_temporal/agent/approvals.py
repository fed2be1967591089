"""Human approvals: requests, decisions, and the rules that check a decision.

Pure workflow-side code: the agent records an ``ApprovalRequest`` when the model calls
a gated tool, and a person (or a script) answers with an ``ApprovalDecision`` through
a signal or an update. ``check_decision`` is the one place that decides whether a
decision is acceptable; the update's validator and the signal handler both use it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, Field
from temporalio.common import SearchAttributeKey

from smyth_temporal.tools._tool import OnTimeout

__all__ = [
    "DEFAULT_APPROVAL_TIMEOUT",
    "PENDING_APPROVALS_ATTRIBUTE",
    "PENDING_APPROVALS_MEMO",
    "SEARCH_ATTRIBUTES",
    "STATUS_ATTRIBUTE",
    "ApprovalDecision",
    "ApprovalOutcome",
    "ApprovalRequest",
    "ApprovalStatus",
    "InvalidDecision",
    "arguments_sha256",
    "check_decision",
]

ApprovalStatus = Literal["pending", "approved", "rejected", "expired"]
"""Where an approval request is."""

STATUS_ATTRIBUTE = SearchAttributeKey.for_keyword("SmythStatus")
"""Search attribute with the agent's status while approvals are involved."""

PENDING_APPROVALS_ATTRIBUTE = SearchAttributeKey.for_int("SmythPendingApprovals")
"""Search attribute with the number of pending approval requests, to find waiting
agents across all runs (``SmythPendingApprovals > 0``)."""

PENDING_APPROVALS_MEMO = "smyth_pending_approvals"
"""Memo key under which an agent publishes its pending ``ApprovalRequest``s (with its
tenant), so they can be listed from visibility alone, even while no worker runs."""

SEARCH_ATTRIBUTES: tuple[SearchAttributeKey[Any], ...] = (
    STATUS_ATTRIBUTE,
    PENDING_APPROVALS_ATTRIBUTE,
)
"""The search attributes a cluster must have registered for approvals to be listed."""

DEFAULT_APPROVAL_TIMEOUT = timedelta(days=7)
"""How long an approval request waits for a decision when nothing else is said."""


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


class ApprovalRequest(BaseModel):
    """A gated tool call waiting for (or past) a decision: the audit record.

    Added in 0.1.0.
    """

    id: str
    """Stable id of the request within the agent run."""
    tool: str
    """The tool's name."""
    call_id: str
    """The model's id for the call."""
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


class ApprovalOutcome(BaseModel):
    """What the ``decide`` update answers: the request as it stands after the decision.

    Added in 0.1.0.
    """

    request: ApprovalRequest
    """The decided request."""


class InvalidDecision(ValueError):
    """A decision that cannot be applied; the message says why, for the person deciding."""


def check_decision(
    decision: ApprovalDecision,
    requests: Mapping[str, ApprovalRequest],
    validate_arguments: Callable[[str, Mapping[str, Any]], dict[str, Any]],
) -> ApprovalRequest:
    """Find the request a decision is for, and check that it can be applied.

    Args:
        decision: The decision.
        requests: Every request of the run, by id.
        validate_arguments: Validates edited arguments for a tool name (raises
            ``ValueError`` with a readable message when they do not fit).

    Returns:
        The pending request the decision applies to.

    Raises:
        InvalidDecision: Unknown or already decided request, a hash that does not
            match, edited arguments that do not fit, or an ambiguous decision.
    """
    pending = [r for r in requests.values() if r.status == "pending"]
    if decision.request_id is None:
        if not pending:
            raise InvalidDecision("no approval request is pending")
        if len(pending) > 1:
            ids = ", ".join(r.id for r in pending)
            raise InvalidDecision(f"{len(pending)} requests are pending ({ids}): name one")
        request = pending[0]
    else:
        found = requests.get(decision.request_id)
        if found is None:
            known = ", ".join(r.id for r in pending) or "none pending"
            raise InvalidDecision(f"unknown approval request {decision.request_id!r} ({known})")
        request = found
    if request.status != "pending":
        by = request.decision.by if request.decision else "nobody"
        raise InvalidDecision(f"request {request.id} is already {request.status} (by {by})")
    if decision.arguments_sha256 and decision.arguments_sha256 != request.arguments_sha256:
        raise InvalidDecision(
            f"request {request.id}: arguments_sha256 does not match the requested arguments "
            f"({request.arguments_sha256}); they are not what the approver saw"
        )
    if decision.arguments is not None:
        if not decision.approved:
            raise InvalidDecision("edited arguments only make sense with an approval")
        try:
            validate_arguments(request.tool, decision.arguments)
        except ValueError as exc:
            raise InvalidDecision(
                f"request {request.id}: edited arguments rejected: {exc}"
            ) from None
    return request
