"""Memory records and the requests that cross the activity boundary (pure data).

Memory is knowledge shared across runs; the run's execution state stays in Temporal
history. Workflow code imports only this module of the memory package.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Self

from pydantic import BaseModel, Field, model_validator

from smyth_temporal.types.agent import ForkOrigin

__all__ = [
    "MEMORY_ACTIVITY_FORGET",
    "MEMORY_ACTIVITY_LIST",
    "MEMORY_ACTIVITY_RECALL",
    "MEMORY_ACTIVITY_REMEMBER",
    "MEMORY_ACTIVITY_SUPERSEDE",
    "MEMORY_ACTIVITY_UNDO_RUN",
    "ForgetRequest",
    "ForgetResult",
    "LineagePoint",
    "ListRequest",
    "MemoryHit",
    "MemoryRecord",
    "MemoryScope",
    "MemoryView",
    "Provenance",
    "ReadScope",
    "RecallRequest",
    "RememberRequest",
    "SupersedeRequest",
    "UndoRunRequest",
    "memory_id",
]

MEMORY_ACTIVITY_REMEMBER = "smyth.memory.remember"
MEMORY_ACTIVITY_RECALL = "smyth.memory.recall"
MEMORY_ACTIVITY_FORGET = "smyth.memory.forget"
MEMORY_ACTIVITY_SUPERSEDE = "smyth.memory.supersede"
MEMORY_ACTIVITY_UNDO_RUN = "smyth.memory.undo_run"
MEMORY_ACTIVITY_LIST = "smyth.memory.list"

_ID_NAMESPACE = uuid.UUID("6b1f2a56-3c1e-4f7e-9a57-2d4a8c9e0b11")


class MemoryScope(BaseModel):
    """Where a memory lives: every read and write is confined to one scope.

    The tenant comes from the agent's input, never from the model or a tool.
    """

    tenant: str = Field(min_length=1, pattern=r"^[^\x1f]+$")
    """Whose memory it is."""
    namespace: str = Field(min_length=1, pattern=r"^[^\x1f]+$")
    """Which body of knowledge; agents given the same namespace share it."""


class Provenance(BaseModel):
    """Which agent run wrote a memory, and when in the run."""

    agent: str = ""
    """The agent's workflow type name."""
    workflow_id: str = ""
    """The agent's workflow id."""
    run_id: str = ""
    """The run id (changes at continue-as-new)."""
    step: int = 0
    """The agent step."""
    branch: str = ""
    """The fork that wrote it (its workflow id), empty for an ordinary run: a fork's
    memories are its own view (see ``MemoryView``). Added in 0.9.0."""


class LineagePoint(BaseModel):
    """One ancestor of a fork: whose memories up to which step the fork inherits.

    Added in 0.9.0.
    """

    workflow_id: str
    """The ancestor's workflow id."""
    branch: str = ""
    """The branch its memories carry: its workflow id if it is a fork itself, else empty."""
    step: int
    """The step the descendant branched off after: later memories of it are not seen."""


class MemoryView(BaseModel):
    """Which memories a run sees: shared memory, its ancestors' up to the fork, its own.

    An ordinary run (``branch`` empty, no lineage) sees every memory without a branch.
    A fork sees the memories without a branch except those its root ancestor wrote after
    the fork step, the memories of each forked ancestor's branch up to the step it was
    forked at, and its own branch. No run outside a fork's descendants sees its branch.

    Added in 0.9.0.
    """

    branch: str = ""
    """The run's own branch (a fork's workflow id), or empty."""
    lineage: list[LineagePoint] = Field(default_factory=list)
    """The ancestors, nearest first."""

    @classmethod
    def of_fork(cls, workflow_id: str, origin: ForkOrigin) -> MemoryView:
        """The view of the fork ``workflow_id`` that branched off at ``origin``.

        Each ancestor's branch is its workflow id when it is a fork itself (it has a
        parent), empty for the root. Added in 0.10.0.
        """
        lineage: list[LineagePoint] = []
        point: ForkOrigin | None = origin
        while point is not None:
            branch = point.workflow_id if point.parent is not None else ""
            lineage.append(
                LineagePoint(workflow_id=point.workflow_id, branch=branch, step=point.step)
            )
            point = point.parent
        return cls(branch=workflow_id, lineage=lineage)

    def sees(self, provenance: Provenance) -> bool:
        """Whether a memory written with ``provenance`` is in this view.

        The rule the store filter implements, as a pure function (for tests and docs).
        """
        if provenance.branch and provenance.branch == self.branch:
            return True
        ancestors = [p for p in self.lineage if p.branch == provenance.branch]
        if provenance.branch:
            return any(provenance.step <= p.step for p in ancestors)
        return not any(
            p.workflow_id == provenance.workflow_id and provenance.step > p.step for p in ancestors
        )


class MemoryRecord(BaseModel):
    """One memory.

    Added in 0.1.0.
    """

    id: str
    """Derived from scope, kind and text (see ``memory_id``): a retry, a replay or an
    exact duplicate lands on the same id."""
    text: str
    """What is remembered."""
    kind: str = "fact"
    """``fact``, ``episode``, ``preference``, ``note``, ``transcript``, or your own."""
    scope: MemoryScope
    """Tenant and namespace."""
    provenance: Provenance = Field(default_factory=Provenance)
    """Who wrote it."""
    created_at: datetime
    """When it was first written."""
    expires_at: datetime | None = None
    """After this it is no longer recalled (kept until forgotten)."""
    superseded_by: str | None = None
    """The id of the memory that replaced it (kept for audit, no longer recalled)."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free-form data."""


class MemoryHit(BaseModel):
    """A recalled memory and how well it matches the query."""

    record: MemoryRecord
    """The memory."""
    score: float
    """Similarity to the query (cosine; higher is closer)."""


def memory_id(scope: MemoryScope, kind: str, text: str, branch: str = "") -> str:
    """The id of a memory: the same scope, kind, text and branch always give the same id.

    That is what makes ``remember`` idempotent across activity retries and replays,
    and keeps exact duplicates from being stored twice. A fork's branch is part of the
    key (ordinary ids are unchanged): otherwise a fork writing a fact its original
    writes later would take the id first, and the original's write would be lost in a
    branch it never sees.
    """
    parts = (scope.tenant, scope.namespace, kind, " ".join(text.split()))
    key = "\x1f".join((*parts, branch) if branch else parts)
    return str(uuid.uuid5(_ID_NAMESPACE, key))


class RememberRequest(BaseModel):
    """Store memories (``smyth.memory.remember``)."""

    scope: MemoryScope
    texts: list[str]
    kind: str = "fact"
    provenance: Provenance = Field(default_factory=Provenance)
    created_at: datetime
    """Workflow time of the write, so a retry stores the same record."""
    expires_at: datetime | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class ReadScope(BaseModel):
    """Where a read looks: one scope, or every namespace of one tenant.

    Agents always read their own scope; administrators (``smyth memory search``
    without a namespace) may read every namespace of a tenant, never across tenants.

    Added in 0.3.0.
    """

    scope: MemoryScope | None = None
    """The tenant and namespace to read."""
    tenant: str | None = Field(default=None, min_length=1)
    """Without ``scope``: read every namespace of this tenant."""

    @model_validator(mode="after")
    def _one_place(self) -> Self:
        if (self.scope is None) == (self.tenant is None):
            raise ValueError("name a scope, or a tenant to read every namespace of")
        return self


class RecallRequest(ReadScope):
    """Search memories (``smyth.memory.recall``)."""

    query: str
    k: int = Field(default=5, ge=1, le=100)
    kinds: list[str] | None = None
    """Only these kinds."""
    agent: str | None = None
    """Only memories written by this agent."""
    include_expired: bool = False
    include_superseded: bool = False
    now: datetime
    """What counts as now for expiry (workflow time, for determinism of the request)."""
    view: MemoryView | None = None
    """A fork's view; ``None``: an ordinary run's (no fork's memories). Added in 0.9.0."""


class ListRequest(ReadScope):
    """List memories, newest first (``smyth.memory.list``)."""

    kinds: list[str] | None = None
    workflow_id: str | None = None
    limit: int = Field(default=50, ge=1, le=10_000)
    include_superseded: bool = True


class ForgetRequest(BaseModel):
    """Delete memories by id, or every memory a filter matches (``smyth.memory.forget``)."""

    scope: MemoryScope
    ids: list[str] | None = None
    kinds: list[str] | None = None
    view: MemoryView | None = None
    """A fork's view: only the fork's own memories are deleted. Added in 0.9.0."""


class ForgetResult(BaseModel):
    """How many memories an operation removed or changed."""

    count: int


class SupersedeRequest(BaseModel):
    """Replace a memory with a newer one (``smyth.memory.supersede``)."""

    scope: MemoryScope
    old_id: str
    text: str
    kind: str | None = None
    """Default: the old memory's kind."""
    provenance: Provenance = Field(default_factory=Provenance)
    created_at: datetime
    view: MemoryView | None = None
    """A fork's view: only a memory of the fork's own is superseded. Added in 0.9.0."""


class UndoRunRequest(BaseModel):
    """Remove every memory one workflow wrote (``smyth.memory.undo_run``)."""

    scope: MemoryScope | None = None
    """Only in this scope; ``None``: every scope of ``tenant``."""
    tenant: str
    workflow_id: str
    run_id: str | None = None
    """Only this run of the workflow."""
    after_step: int | None = Field(default=None, ge=0)
    """Only memories written after this step (a rewind's). Added in 0.10.0."""
