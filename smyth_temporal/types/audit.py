"""The audit trail of an agent: what it did, read from Temporal's history (pure data)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from smyth_temporal.types.agent import ForkOrigin
from smyth_temporal.types.lineage import ForkRef

__all__ = ["AuditEntry", "AuditKind", "AuditTrail"]

AuditKind = Literal[
    "run_started",
    "model_call",
    "tool_call",
    "mcp_call",
    "memory_write",
    "memory_forget",
    "memory_read",
    "approval_decided",
    "interrupt",
    "message",
    "worker_lost",
    "continued_as_new",
    "reset",
    "rewound",
    "run_finished",
]
"""What an entry records (``reset``, ``rewound``: added in 0.10.0)."""


class AuditEntry(BaseModel):
    """One thing the agent did or was told, with where history says it.

    Added in 0.4.0.
    """

    time: datetime
    """When the server recorded it."""
    run_id: str
    """The run whose history holds it."""
    event_id: int
    """The history event it was read from (the closing one for activities)."""
    kind: AuditKind
    """What it is."""
    fields: dict[str, Any] = Field(default_factory=dict)
    """The details: model and tokens, tool and argument hash, who decided, ...

    A ``model_call`` a fork answered from its parent's recorded turn has
    ``replayed=True`` (and zero tokens: nothing was paid). Added in 0.10.0.
    """


class AuditTrail(BaseModel):
    """Everything an agent's workflow id did, across all its runs, in order.

    Read from the server's history only (and the provenance memory writes carry), so
    nothing in it comes from state the agent could have altered.

    Added in 0.4.0.
    """

    workflow_id: str
    """The agent's workflow id."""
    runs: list[str]
    """Its run ids, first to last (continue-as-new links them)."""
    entries: list[AuditEntry]
    """What happened, oldest first."""
    fork_of: ForkOrigin | None = None
    """The run and step this one was forked from. Added in 0.10.0."""
    forks: list[ForkRef] = Field(default_factory=list)
    """The runs forked from this one, oldest first (from visibility). Added in 0.10.0."""

    def of(self, kind: AuditKind) -> list[AuditEntry]:
        """The entries of one kind."""
        return [entry for entry in self.entries if entry.kind == kind]

    def cache_read_share(self, run_id: str | None = None) -> float:
        """The share of the model calls' input tokens read from the prompt cache.

        Over the model calls of ``run_id``, or of every run; 0 without input tokens.

        Added in 0.10.0.
        """
        calls = [e for e in self.of("model_call") if run_id in (None, e.run_id)]
        total = sum(e.fields.get("input_tokens") or 0 for e in calls)
        cached = sum(e.fields.get("cached_tokens") or 0 for e in calls)
        return cached / total if total else 0.0
