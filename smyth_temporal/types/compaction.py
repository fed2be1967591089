"""The lineage record of one compaction (pure data, carried in agent state)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

__all__ = ["Compaction"]


class Compaction(BaseModel):
    """The lineage of one summary: what it replaced and where the originals went.

    Added in 0.2.0.
    """

    id: str
    """``cmp-<n>``: the n-th compaction of the agent (counted across continue-as-new)."""
    first_step: int | None
    """The earliest agent step among the replaced messages (``None``: only prompts)."""
    last_step: int | None
    """The latest agent step among the replaced messages."""
    message_count: int
    """How many messages the summary replaced (an earlier summary counts as one)."""
    folded: list[str] = Field(default_factory=list)
    """Ids of earlier compactions whose summaries this one folds in."""
    namespace: str
    """The memory namespace the originals were archived to (kind ``transcript``)."""
    archived: list[str] = Field(default_factory=list)
    """Ids of the transcript memories that hold the replaced messages."""
    at_step: int
    """The agent step at which the compaction ran."""
    created_at: datetime
    """When it ran (workflow time)."""
    tokens_before: int
    """Estimated prompt tokens before the compaction."""
    tokens_after: int
    """Estimated prompt tokens after it."""
    fallback: bool = False
    """The summarizer failed and a placeholder pointing at the archive stands in."""
    error: str | None = None
    """Why the summarizer failed, when it did."""
