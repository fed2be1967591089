"""Reconcile hooks: asking a side-effect tool whether a call already happened.

Pure, workflow-safe data. A side-effect call can be lost between acting and telling:
a rewind abandons the history of a call that completed (the reset cannot undo it),
and a worker that dies mid-call leaves the call's outcome unknown. A tool that can
look its own effects up declares ``@tool(reconcile=fn)``; ``fn(idempotency_key,
arguments)`` answers with a ``Reconciled``:

- ``Reconciled.done(result)``: the call happened; ``result`` stands for its result and
  the tool does not run again;
- ``Reconciled.not_done()``: it did not happen; the tool runs (once);
- ``Reconciled.unknown(reason)``: the hook cannot tell; a person decides (an approval
  request whose reason says the outcome is unknown): approve runs it, reject skips it.

The hook runs on a worker, as the activity ``smyth.reconcile.<tool>`` after a rewind,
and inside the tool's own activity when Temporal retries an attempt that may have
acted (see ``smyth_temporal.activities.tools``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from smyth_temporal.exceptions import ToolDefinitionError
from smyth_temporal.types.tools import ToolEffect

__all__ = [
    "RECONCILE_PATCH",
    "RECONCILE_UNKNOWN",
    "ReconcileFunction",
    "Reconciled",
    "check_reconcile",
    "reconcile_activity_name",
]

RECONCILE_PATCH = "smyth-reconcile"
"""The ``workflow.patched`` id of the reconcile path (0.10.0).

Asked only when a call meets it: a call that matches a rewound side effect, or a tool
activity that failed because reconcile could not tell its outcome. Runs that never
did replay as recorded.
"""

RECONCILE_UNKNOWN = "ReconcileUnknown"
"""The ``ApplicationError`` type a tool activity fails with (non-retryably) when its
retry asked reconcile and the answer was ``unknown``: the workflow asks a person."""

ReconcileFunction = Callable[[str, Mapping[str, Any]], "Reconciled | Awaitable[Reconciled]"]
"""``fn(idempotency_key, arguments)``: ``async def`` or plain ``def`` (run in a thread);
``arguments`` are the call's validated arguments in JSON form."""


def reconcile_activity_name(tool: str) -> str:
    """The activity type that runs ``tool``'s reconcile hook: ``smyth.reconcile.<tool>``."""
    return f"smyth.reconcile.{tool}"


class Reconciled(BaseModel):
    """What a reconcile hook found out about an earlier call; build it with a classmethod.

    Added in 0.10.0.
    """

    model_config = ConfigDict(frozen=True)

    outcome: Literal["done", "not_done", "unknown"]
    """``done``: it happened; ``not_done``: it did not; ``unknown``: the hook cannot tell."""
    result: Any = None
    """For ``done``: what stands for the call's result (the model sees it, rendered as
    a tool's result is). Crossing back to the workflow it is that rendered text."""
    reason: str | None = None
    """For ``unknown``: why the hook cannot tell (the approver reads it)."""

    @classmethod
    def done(cls, result: Any = None) -> Reconciled:
        """The call already happened; ``result`` is reused as its result."""
        return cls(outcome="done", result=result)

    @classmethod
    def not_done(cls) -> Reconciled:
        """The call did not happen: run the tool."""
        return cls(outcome="not_done")

    @classmethod
    def unknown(cls, reason: str) -> Reconciled:
        """The hook cannot tell: ask a person (``reason`` tells them why)."""
        return cls(outcome="unknown", reason=reason)


def check_reconcile(reconcile: ReconcileFunction | None, effect: ToolEffect) -> None:
    """Refuse a hook that is not a function, or on a tool that is not ``side_effect``.

    Raises:
        ToolDefinitionError: It is either.
    """
    # Only a call that may not be repeated has an outcome worth asking about: the
    # others are re-run safely, and a hook there would hide a misclassified tool.
    if reconcile is None:
        return
    if not callable(reconcile):
        raise ToolDefinitionError(
            f"@tool(reconcile=...) takes a function (idempotency_key, arguments), not {reconcile!r}"
        )
    if effect != "side_effect":
        raise ToolDefinitionError(
            f"@tool(reconcile=...) is for side_effect tools only, not {effect!r}: a "
            "read_only or idempotent call is safely run again instead"
        )
