"""Human approvals as data: requests, decisions, and the hash that pins arguments.

An agent records an ``ApprovalRequest`` when the model calls a gated tool; a person
(or a script) answers with an ``ApprovalDecision`` through a signal or an update.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from smyth_temporal.types.tools import OnTimeout

__all__ = [
    "APPROVAL_SIGNAL",
    "APPROVAL_UPDATE",
    "ApprovalDecision",
    "ApprovalOutcome",
    "ApprovalRequest",
    "ApprovalStatus",
    "arguments_sha256",
]

APPROVAL_SIGNAL = "approval_decision"
"""Signal carrying an ``ApprovalDecision`` (fire-and-forget; invalid ones are logged)."""

APPROVAL_UPDATE = "decide_approval"
"""Update carrying an ``ApprovalDecision``; answers ``ApprovalOutcome`` or rejects it."""

ApprovalStatus = Literal["pending", "approved", "rejected", "expired"]
"""Where an approval request is."""


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


class ApprovalOutcome(BaseModel):
    """What the ``decide`` update answers: the request as it stands after the decision.

    Added in 0.1.0.
    """

    request: ApprovalRequest
    """The decided request."""
