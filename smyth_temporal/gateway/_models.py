"""The gateway's own request and response bodies (the SDK's wire types are reused as is).

Request bodies forbid unknown fields: a ``tenant`` (or ``by``) in a body is refused,
never silently ignored, because both come from the caller's key.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from smyth_temporal.clients import PendingApproval, ScheduleSummary
from smyth_temporal.security import Permission, Role
from smyth_temporal.types.memory import MemoryHit, MemoryRecord
from smyth_temporal.types.rewind import RewoundCall
from smyth_temporal.types.sessions import WhileBusy

__all__ = [
    "ApprovalList",
    "Decision",
    "ForgetResult",
    "ForkRequest",
    "Identity",
    "InterruptRequest",
    "MemoryHits",
    "MemoryList",
    "MessageAccepted",
    "MessageRequest",
    "RewindDone",
    "RewindRequest",
    "RunCreated",
    "RunList",
    "RunSummary",
    "ScheduleList",
    "StartRequest",
]

_SHA256 = r"^[0-9a-f]{64}$"


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StartRequest(_Body):
    """Start an agent run (``POST /v1/agents/{agent}/runs``)."""

    prompt: str = Field(min_length=1)
    """The task, as the user's first message."""
    session_id: str | None = None
    """Groups runs of one conversation or job, if the caller has such a notion."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free-form data for the agent's own code."""


class RunCreated(BaseModel):
    """A run that was started."""

    workflow_id: str
    """Names the run in every other route."""
    run_id: str | None
    """Temporal's id of the first run of the chain."""
    agent: str
    """The agent's workflow type name."""
    tenant: str
    """Whose run it is (the caller's key's tenant)."""


class ForkRequest(_Body):
    """Fork a run at a step (``POST /v1/runs/{id}/fork``). Added in 0.10.0."""

    at_step: int = Field(ge=0)
    """The step to fork after (0: before the first model turn)."""
    prompt: str | None = Field(default=None, min_length=1)
    """Added as a user message before the fork's first turn."""
    model: str | None = Field(default=None, min_length=1, max_length=200)
    """Run the fork's turns on this model."""
    id: str | None = Field(default=None, min_length=1, max_length=255)
    """The fork's workflow id (default: ``<id>-fork-<random>``)."""


class RewindRequest(_Body):
    """Take a run back to a step (``POST /v1/runs/{id}/rewind``). Added in 0.10.0."""

    to_step: int = Field(ge=0)
    """The step to go back to; the run goes on with the next (0: before the first turn)."""
    prompt: str | None = Field(default=None, min_length=1)
    """Added as a user message before step ``to_step + 1``."""


class RewindDone(BaseModel):
    """What a rewind did (``POST /v1/runs/{id}/rewind``). Added in 0.10.0."""

    workflow_id: str
    """The rewound run's workflow id (the same as before)."""
    run_id: str
    """The new run, which goes on from step ``to_step + 1``."""
    abandoned_run_id: str
    """The run whose steps after ``to_step`` were abandoned (its history stays)."""
    to_step: int
    """The step the run went back to."""
    side_effects: list[RewoundCall]
    """Tool calls after ``to_step`` that the reset could not undo (a tool's ``reconcile``
    hook is asked about each when the run calls it again)."""
    voided_approvals: list[str]
    """Approval requests decided after ``to_step``: void in the new run."""


class MessageRequest(_Body):
    """A message for a session (``POST /v1/agents/{agent}/sessions/{session}/messages``)."""

    text: str = Field(min_length=1)
    """What the user says."""
    while_busy: WhileBusy | None = None
    """What the session does if it is answering another message (default: the
    agent's ``AgentConfig.while_busy``)."""
    wait: bool = True
    """Wait for the reply; ``false`` posts the message and answers 202 at once."""


class MessageAccepted(BaseModel):
    """A message posted without waiting for the reply."""

    workflow_id: str
    """The session's workflow id."""


class InterruptRequest(_Body):
    """Stop a run's current turn (``POST /v1/runs/{id}/interrupt``)."""

    reason: str | None = None
    """Why; the model is told at its next turn."""


class Decision(_Body):
    """A decision on an approval request (``POST /v1/runs/{id}/approvals/{request}``).

    Approving needs ``arguments_sha256``, the hash of the arguments shown to the
    person (``ApprovalRequest.arguments_sha256``): the agent refuses the decision if
    the request's arguments are not those, so nobody approves what they did not see.
    """

    approved: bool
    """Approve (the tool runs) or reject (it does not)."""
    comment: str | None = None
    """Why; a rejection's comment is shown to the model."""
    arguments_sha256: str | None = Field(default=None, pattern=_SHA256)
    """The request's ``arguments_sha256`` as the approver saw it (required to approve)."""
    arguments: dict[str, Any] | None = None
    """Edited arguments to run the tool with instead (validated by the agent)."""

    @model_validator(mode="after")
    def _pinned(self) -> Self:
        if self.approved and self.arguments_sha256 is None:
            raise ValueError(
                "approving needs arguments_sha256: the hash of the arguments you approve"
            )
        if not self.approved and self.arguments is not None:
            raise ValueError("edited arguments come with an approval, not a rejection")
        return self


class ApprovalList(BaseModel):
    """The caller's tenant's pending approval requests, oldest first (within a page)."""

    approvals: list[PendingApproval]
    next_page_token: str | None = None
    """Send it as ``page_token`` for the next page; absent on the last one."""


class Identity(BaseModel):
    """Who the caller's key says it is (``GET /v1/whoami``)."""

    name: str
    """The key's name: recorded as who decided, interrupted or sent."""
    tenant: str
    """The only tenant the key reaches."""
    role: Role
    """The key's role."""
    permissions: list[Permission]
    """What the role permits: ``read``, ``operate``, ``approve``, ``admin``."""


class MemoryHits(BaseModel):
    """Memories closest to a query, best first."""

    hits: list[MemoryHit]


class MemoryList(BaseModel):
    """Memories, newest first."""

    memories: list[MemoryRecord]


class ForgetResult(BaseModel):
    """How many memories were deleted."""

    count: int


class ScheduleList(BaseModel):
    """The caller's tenant's agent schedules, by id."""

    schedules: list[ScheduleSummary]


class RunSummary(BaseModel):
    """One agent run of the caller's tenant, as Temporal's visibility lists it."""

    workflow_id: str
    """Names the run in every other route."""
    agent: str
    """The agent's workflow type name."""
    status: str
    """Temporal's status of the run: ``running``, ``completed``, ``failed``, ..."""
    agent_status: str | None = None
    """The agent's own status (``awaiting_approval``, ...) where it publishes it."""
    pending_approvals: int = 0
    """Approval requests waiting for a decision."""
    started_at: datetime | None = None
    """When the run started."""
    closed_at: datetime | None = None
    """When the run ended, if it has."""


class RunList(BaseModel):
    """The caller's tenant's most recent agent runs, newest first."""

    runs: list[RunSummary]
    next_page_token: str | None = None
    """Send it as ``page_token`` for the next page; absent on the last one."""
