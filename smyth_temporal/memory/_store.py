"""The storage interface behind memory, and the filters it understands.

Two real Qdrant backends implement it: Qdrant Edge in-process (the embedded default)
and a Qdrant server through ``qdrant-client``. The filter language is the small
subset of Qdrant's that memory needs, so both translate it one to one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "INDEXED_FIELDS",
    "NEVER",
    "Condition",
    "IsEmpty",
    "Match",
    "MatchAny",
    "MemoryStore",
    "Range",
    "StoreFilter",
    "StoredPoint",
]

NEVER = 1e18
"""``expires_at_ts`` of a memory that never expires: one range condition then says
"not expired", on every backend."""

INDEXED_FIELDS: dict[str, str] = {
    "scope": "keyword",
    "tenant": "keyword",
    "namespace": "keyword",
    "agent": "keyword",
    "kind": "keyword",
    "workflow_id": "keyword",
    "run_id": "keyword",
    "branch": "keyword",
    "step": "integer",
    "expires_at_ts": "float",
    "created_at_ts": "float",
    "superseded": "bool",
}
"""Payload fields every query filters by, with their index type.

``scope`` (tenant and namespace in one keyword) is what makes filtered recall fast on
Qdrant Edge: its search walks the points of the most selective indexed condition, and
one scope is a small share of a collection where one tenant may be a large one.
"""


@dataclass(frozen=True)
class Match:
    """``key`` equals ``value``."""

    key: str
    value: str | int | bool


@dataclass(frozen=True)
class MatchAny:
    """``key`` equals one of ``values``."""

    key: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class Range:
    """``key`` within the given bounds."""

    key: str
    gt: float | None = None
    gte: float | None = None
    lt: float | None = None
    lte: float | None = None


@dataclass(frozen=True)
class IsEmpty:
    """``key`` is absent (or null): how records written before a field existed match.

    Added in 0.9.0.
    """

    key: str


@dataclass(frozen=True)
class StoreFilter:
    """All of ``must``, none of ``must_not``, and at least one of ``should`` if any.

    A filter is itself a condition, so ``must_not=(StoreFilter(must=(a, b)),)`` says
    "not both a and b" (what a fork's memory view needs; Qdrant nests filters alike).

    Changed in 0.9.0: ``should``, and filters nest.
    """

    must: tuple[Condition, ...] = ()
    must_not: tuple[Condition, ...] = ()
    should: tuple[Condition, ...] = ()


Condition = Match | MatchAny | Range | IsEmpty | StoreFilter


@dataclass(frozen=True)
class StoredPoint:
    """A point as stored: id (a UUID string), payload, and the vector when written."""

    id: str
    payload: dict[str, Any]
    vector: Sequence[float] | None = field(default=None, repr=False)

    def vector_list(self) -> list[float]:
        """The vector as a list, as both Qdrant bindings take it.

        Raises:
            ValueError: The point has no vector (only points read back lack one).
        """
        if self.vector is None:
            raise ValueError(f"point {self.id} has no vector")
        return self.vector if isinstance(self.vector, list) else list(self.vector)


@runtime_checkable
class MemoryStore(Protocol):
    """A Qdrant collection store (async).

    Implementations must be safe to call concurrently from one event loop.

    Added in 0.1.0.
    """

    async def ensure_collection(self, name: str, dimension: int) -> None:
        """Create the collection unless it exists.

        Cosine distance, with payload indexes on ``INDEXED_FIELDS``.
        """
        ...

    async def upsert(self, collection: str, points: Sequence[StoredPoint]) -> None:
        """Insert or replace points (every point has a vector)."""
        ...

    async def retrieve(self, collection: str, ids: Sequence[str]) -> list[StoredPoint]:
        """The points with these ids that exist (payload only), in no set order."""
        ...

    async def search(
        self, collection: str, vector: Sequence[float], filter: StoreFilter, limit: int
    ) -> list[tuple[StoredPoint, float]]:
        """The ``limit`` nearest points that match ``filter``, best first, with scores."""
        ...

    async def scroll(
        self, collection: str, filter: StoreFilter, limit: int | None = None
    ) -> list[StoredPoint]:
        """Every point that matches ``filter`` (up to ``limit``; payload only)."""
        ...

    async def delete(self, collection: str, ids: Sequence[str]) -> None:
        """Delete points by id (missing ids are ignored)."""
        ...

    async def set_payload(
        self, collection: str, ids: Sequence[str], payload: dict[str, Any]
    ) -> None:
        """Merge ``payload`` into these points' payloads."""
        ...

    async def close(self) -> None:
        """Release files and connections."""
        ...
