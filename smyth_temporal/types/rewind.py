"""Rewinds as data (workflow side, pure): what a rewind tells the run it rewound.

A rewind resets a run to the workflow task that ended step N (Temporal's reset) and,
in the same request, signals the new run a ``RewindNotice``. The notice names the
side-effect calls that had completed (or may have acted) after step N: a reset cannot
undo them, so when the rewound run asks for the same call again (same tool, same
arguments) the tool's ``reconcile`` hook is asked whether it already happened, under the
abandoned call's idempotency key.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["REWIND_SIGNAL", "RewindNotice", "RewoundCall"]

REWIND_SIGNAL = "smyth_rewound"
"""Signal carrying a ``RewindNotice``, sent as a post-reset operation of the reset."""


class RewoundCall(BaseModel):
    """A side-effect tool call after the rewind point that the reset could not undo.

    Added in 0.10.0.
    """

    model_config = ConfigDict(frozen=True)

    step: int = Field(ge=1)
    """The step of the abandoned run the call was made in."""
    call_id: str
    """The call's id in the abandoned run."""
    tool: str
    """The tool's name."""
    arguments_sha256: str
    """``arguments_sha256`` of the call's arguments: a new call matches on tool and hash."""
    idempotency_key: str
    """The abandoned call's idempotency key, handed to the tool's ``reconcile`` hook."""
    outcome: Literal["completed", "unknown"]
    """``completed``: its activity returned; ``unknown``: it started and never returned."""
    result: Any = None
    """The completed call's result as recorded, for display; ``None`` when unknown."""


class RewindNotice(BaseModel):
    """What a rewound run is told by the reset that rewound it.

    Added in 0.10.0.
    """

    model_config = ConfigDict(frozen=True)

    to_step: int = Field(ge=0)
    """The step the run went back to; it goes on with step ``to_step + 1``."""
    abandoned_run_id: str
    """The run id whose history after ``to_step`` was abandoned."""
    prompt: str | None = None
    """A user message added before step ``to_step + 1``."""
    side_effects: tuple[RewoundCall, ...] = ()
    """Side-effect calls after ``to_step`` that the reset could not undo."""
    voided_approvals: tuple[str, ...] = ()
    """Approval request ids decided after ``to_step``: void in the rewound run."""
    by: str | None = None
    """Who asked for the rewind (the key's name or principal), for the audit trail."""
    memory_runs: tuple[str, ...] = ()
    """Runs whose long-term memories written after ``to_step`` the rewound run removes
    (``smyth.memory.undo_run`` with ``after_step``) before it recalls anything."""
