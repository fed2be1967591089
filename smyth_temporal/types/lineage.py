"""A run's lineage as data (pure): the runs forked from it and the rewinds it went through.

Its parent is ``ForkOrigin`` (``AgentInput.fork_of``, in ``types.agent``). Neither its
forks nor its rewinds are known to the run itself: the client reads them from Temporal
(forks from visibility, ``SmythForkOf``; rewinds from the run's history, the
``RewindNotice`` signal each rewind's reset sends), so ``AgentState.forks`` and
``AgentState.rewinds`` are filled by ``AgentClient.state(..., lineage=True)``.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from smyth_temporal.types.rewind import RewoundCall

__all__ = ["ForkRef", "RewindRecord"]


class ForkRef(BaseModel):
    """A run forked from another (``AgentClient.fork``), as its parent's lineage lists it.

    Added in 0.10.0.
    """

    workflow_id: str
    """The fork's workflow id."""
    run_id: str
    """The fork's first run."""
    step: int | None = None
    """The parent's step the fork started right after (``None``: its memo is unreadable)."""
    parent_run_id: str | None = None
    """The run of the parent's chain that took the step."""
    status: str
    """The fork's execution status, as Temporal lists it (``running``, ``completed``, ...)."""
    started_at: datetime | None = None
    """When the fork started."""


class RewindRecord(BaseModel):
    """A rewind a run went through (``AgentClient.rewind``), read from its history.

    Added in 0.10.0.
    """

    time: datetime
    """When the rewound run was told (the ``RewindNotice`` signal's event)."""
    to_step: int
    """The step the run went back to; it went on with the next."""
    abandoned_run_id: str
    """The run whose history after ``to_step`` was abandoned (still in Temporal)."""
    run_id: str
    """The run the reset created, which went on."""
    by: str | None = None
    """Who asked for the rewind."""
    side_effects: list[RewoundCall] = Field(default_factory=list)
    """Side-effect calls after ``to_step`` the reset could not undo."""
    voided_approvals: list[str] = Field(default_factory=list)
    """Approval request ids decided after ``to_step``, void after the rewind."""
