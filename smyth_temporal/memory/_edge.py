"""``EdgeStore``: memory in Qdrant Edge, the Qdrant engine inside the worker process.

One shard directory per collection under the store's path (``<path>/<collection>/``),
reopened across process restarts.

How the engine behaves, as measured with qdrant-edge-py 0.9.0 (and why the code below
is shaped the way it is):

- Every call holds the GIL from start to end (queries, updates, ``flush``, and
  ``optimize``, which builds the HNSW graph and takes minutes at 100,000 points).
  Running a call in a thread does not free the event loop, it only adds a thread
  hop, so calls run inline. A filtered top-5 query takes well under a millisecond
  at 10,000 points. Writing is dearer: converting a memory's payload into the
  bindings costs about 45 us (more than the write itself), 1,000 memories about
  100 ms, so upserts go in chunks of ``WRITE_CHUNK`` points, and scrolls in pages,
  with a yield to the event loop between them.
- An update is in the write-ahead log (a memory-mapped file) when ``update`` returns:
  it survives the process being SIGKILLed and is replayed on the next load.
  ``flush`` makes the segments and the log durable on disk (``msync``/``fsync``), so
  only it protects against losing the machine; it also lets the log be truncated.
  Flushing holds the GIL for time that grows with what was written since the last
  flush (about 250 ms after 35,000 points), so writes flush when the last flush is
  older than ``flush_interval`` or ``FLUSH_AFTER_POINTS`` points ago, whichever
  comes first; ``close`` always flushes.
- Only one process may open a shard: the second fails to lock the log.
- ``MatchValue(True)`` becomes the integer 1 in the bindings (``bool`` is an ``int``
  to Python) and then matches no boolean payload; a ``numpy.bool_`` is kept a bool.
- Setting the payload of a list of ids that includes a missing one fails after
  changing the others; selecting the points with a ``HasIdCondition`` filter skips
  the missing ones instead.
- There is no background optimizer: points stay in appendable segments, searched
  without HNSW, until ``optimize`` runs. Filtered recall stays fast without it
  because the payload indexes select the candidates (see ``bench/README.md``).
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import numpy as np
import qdrant_edge as qe

from smyth_temporal._files import private_dir
from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.memory._store import (
    INDEXED_FIELDS,
    Condition,
    IsEmpty,
    Match,
    MatchAny,
    MemoryStore,
    Range,
    StoredPoint,
    StoreFilter,
)

__all__ = ["EdgeStore"]

WRITE_CHUNK = 64
"""Points per ``update`` call: about 5 ms of held GIL for memories of 384 dimensions."""

SCROLL_PAGE = 256
"""Records per ``scroll`` call."""

DEFAULT_FLUSH_INTERVAL = 5.0
"""Seconds a write may stay only in the write-ahead log (the Qdrant server's default)."""

FLUSH_AFTER_POINTS = 2000
"""Points written since the last flush that trigger one. Bounds a flush's stall: about
15 ms at 20,000 points stored, 40 ms at 100,000 (a flush after one write: about 5 ms)."""

_CONFIG_FILE = "edge_config.json"
"""Written by ``EdgeShard.create``: its presence means the directory holds a shard."""

_COLLECTION_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}")

_SCHEMA_TYPES: dict[str, qe.PayloadSchemaType] = {
    "keyword": qe.PayloadSchemaType.Keyword,
    "integer": qe.PayloadSchemaType.Integer,
    "float": qe.PayloadSchemaType.Float,
    "bool": qe.PayloadSchemaType.Bool,
    "datetime": qe.PayloadSchemaType.Datetime,
    "uuid": qe.PayloadSchemaType.Uuid,
}


class EdgeStore(MemoryStore):
    """A ``MemoryStore`` in Qdrant Edge: the embedded default, no server to run.

    Safe to call concurrently from one event loop, and from several threads: every
    engine call is serialized by a lock. One process at a time may use a path; for
    several workers use a Qdrant server (``QdrantServerStore``).

    Added in 0.1.0.
    """

    def __init__(self, path: Path, *, flush_interval: float = DEFAULT_FLUSH_INTERVAL) -> None:
        """Open nothing yet: shards are opened (or created) on first use.

        Args:
            path: The directory that holds one shard directory per collection.
            flush_interval: A write also flushes the shard to disk when the last flush
                is older than this many seconds. ``0`` flushes after every write
                (durable against power loss, at about 5 ms per write); a SIGKILLed
                process loses no acknowledged write either way.
        """
        self.path = Path(path)
        self.flush_interval = flush_interval
        self._lock = threading.Lock()
        self._shards: dict[str, qe.EdgeShard] = {}
        self._dimensions: dict[str, int] = {}
        self._flushed_at: dict[str, float] = {}
        self._unflushed: dict[str, int] = {}

    async def ensure_collection(self, name: str, dimension: int) -> None:
        """Create the collection's shard, or open the existing one.

        Cosine distance, payload indexes on ``INDEXED_FIELDS`` (added to an existing
        shard that lacks some).

        Raises:
            ConfigurationError: The collection exists with another dimension, or its
                shard is open in another process.
        """
        config = qe.EdgeConfig(
            vectors=qe.EdgeVectorParams(size=dimension, distance=qe.Distance.Cosine)
        )
        with self._lock:
            known = self._dimensions.get(name)
            if known is not None and known != dimension:
                raise ConfigurationError(
                    f"collection {name!r} has dimension {known}, not {dimension}"
                )
            shard = self._shards.get(name)
            if shard is not None and known is None:
                # Opened by another call before this one, without the config: open it
                # again with it, so the engine checks the dimension.
                del self._shards[name]
                _flush_and_close(shard)
                shard = None
            if shard is None:
                # Owner-only, whatever the umask: memories hold what agents learned.
                private_dir(self.path)
                directory = self._directory(name)
                if (directory / _CONFIG_FILE).exists():
                    # With the config, loading checks it against the stored segments.
                    shard = self._open(name, lambda: qe.EdgeShard.load(str(directory), config))
                else:
                    directory.mkdir(exist_ok=True, mode=0o700)
                    shard = self._open(name, lambda: qe.EdgeShard.create(str(directory), config))
            self._dimensions[name] = dimension
            # Also on an existing shard: one made by an older version may lack an index.
            present = set(shard.info().payload_schema)
            for field, kind in INDEXED_FIELDS.items():
                if field not in present:
                    shard.update(qe.UpdateOperation.create_field_index(field, _index(field, kind)))

    async def upsert(self, collection: str, points: Sequence[StoredPoint]) -> None:
        """Insert or replace points, in chunks that keep the event loop responsive."""
        for start in range(0, len(points), WRITE_CHUNK):
            if start:
                await asyncio.sleep(0)
            chunk = [_to_edge_point(p) for p in points[start : start + WRITE_CHUNK]]
            with self._shard(collection) as shard:
                shard.update(qe.UpdateOperation.upsert_points(chunk))
                self._after_write(collection, shard, len(chunk))

    async def retrieve(self, collection: str, ids: Sequence[str]) -> list[StoredPoint]:
        """The points with these ids that exist (payload only)."""
        if not ids:
            return []
        with self._shard(collection) as shard:
            records = shard.retrieve(list(ids), with_payload=True, with_vector=False)
        return [StoredPoint(str(r.id), dict(r.payload or {})) for r in records]

    async def search(
        self, collection: str, vector: Sequence[float], filter: StoreFilter, limit: int
    ) -> list[tuple[StoredPoint, float]]:
        """The ``limit`` nearest points that match ``filter``, best first."""
        request = qe.QueryRequest(
            query=qe.Query.Nearest(list(vector)),
            filter=_to_edge_filter(filter),
            limit=limit,
            with_payload=True,
            with_vector=False,
        )
        with self._shard(collection) as shard:
            found = shard.query(request)
        return [(StoredPoint(str(p.id), dict(p.payload or {})), p.score) for p in found]

    async def scroll(
        self, collection: str, filter: StoreFilter, limit: int | None = None
    ) -> list[StoredPoint]:
        """Every point that matches ``filter``, in id order (up to ``limit``)."""
        edge_filter = _to_edge_filter(filter)
        points: list[StoredPoint] = []
        offset: qe.PointId | None = None
        while limit is None or len(points) < limit:
            page = SCROLL_PAGE if limit is None else min(SCROLL_PAGE, limit - len(points))
            request = qe.ScrollRequest(
                offset=offset,
                limit=page,
                filter=edge_filter,
                with_payload=True,
                with_vector=False,
            )
            with self._shard(collection) as shard:
                records, offset = shard.scroll(request)
            points.extend(StoredPoint(str(r.id), dict(r.payload or {})) for r in records)
            if offset is None:
                break
            await asyncio.sleep(0)
        return points

    async def delete(self, collection: str, ids: Sequence[str]) -> None:
        """Delete points by id (missing ids are ignored)."""
        if not ids:
            return
        with self._shard(collection) as shard:
            shard.update(qe.UpdateOperation.delete_points(list(ids)))
            self._after_write(collection, shard, len(ids))

    async def set_payload(
        self, collection: str, ids: Sequence[str], payload: dict[str, Any]
    ) -> None:
        """Merge ``payload`` into these points' payloads (missing ids are ignored)."""
        if not ids:
            return
        # By filter, not by id list: with an id list a missing id fails the operation
        # after the other points have changed.
        selected: set[qe.PointId] = set(ids)
        selection = qe.Filter(must=[qe.HasIdCondition(selected)])
        with self._shard(collection) as shard:
            shard.update(qe.UpdateOperation.set_payload_by_filter(selection, payload))
            self._after_write(collection, shard, len(ids))

    async def flush(self) -> None:
        """Make every write so far durable on disk (writes flush on their own too)."""
        with self._lock:
            for name, shard in self._shards.items():
                self._flush(name, shard)

    async def optimize(self, collection: str) -> bool:
        """Merge segments, drop deleted points and build the HNSW index.

        Blocks the whole process (GIL included) until done: on 2 cores 4 to 7 s at
        10,000 points of 384 dimensions, 3 to 4 minutes at 100,000. For maintenance
        with the workers stopped, never on a worker's event loop; scoped recall is
        fast without it (see ``bench/README.md``).

        Returns:
            Whether anything was optimized.
        """
        with self._shard(collection) as shard:
            changed = shard.optimize()
            self._flush(collection, shard)
        return changed

    async def close(self) -> None:
        """Flush and close every open shard. A later call opens them again."""
        with self._lock:
            shards, self._shards = self._shards, {}
            self._flushed_at.clear()
            self._unflushed.clear()
            errors: list[Exception] = []
            for shard in shards.values():
                try:
                    _flush_and_close(shard)
                except Exception as error:  # close the others before reporting it
                    errors.append(error)
            if errors:
                raise errors[0]

    # Everything below runs with ``self._lock`` held.

    @contextmanager
    def _shard(self, name: str) -> Iterator[qe.EdgeShard]:
        """Hold the lock and yield the open shard, opening it from disk if need be.

        Raises:
            ValueError: No such collection (``ensure_collection`` creates it).
        """
        with self._lock:
            shard = self._shards.get(name)
            if shard is None:
                directory = self._directory(name)
                if not (directory / _CONFIG_FILE).exists():
                    raise ValueError(f"collection {name!r} does not exist in {self.path}")
                shard = self._open(name, lambda: qe.EdgeShard.load(str(directory)))
            yield shard

    def _open(self, name: str, opener: Callable[[], qe.EdgeShard]) -> qe.EdgeShard:
        try:
            shard = opener()
        except Exception as error:
            if "WouldBlock" in str(error):
                raise ConfigurationError(
                    f"the memory store {self._directory(name)} is already open (in another"
                    " process, or another EdgeStore); Qdrant Edge allows one opener at a"
                    " time (set QDRANT_URL to share a Qdrant server)"
                ) from error
            if "incompatible" in str(error).lower():
                raise ConfigurationError(
                    f"collection {name!r} exists with another configuration: {error}"
                ) from error
            raise
        self._shards[name] = shard
        self._flushed_at[name] = time.monotonic()
        self._unflushed[name] = 0
        return shard

    def _after_write(self, name: str, shard: qe.EdgeShard, points: int) -> None:
        self._unflushed[name] = self._unflushed.get(name, 0) + points
        due = time.monotonic() - self._flushed_at.get(name, 0.0) >= self.flush_interval
        if due or self._unflushed[name] >= FLUSH_AFTER_POINTS:
            self._flush(name, shard)

    def _flush(self, name: str, shard: qe.EdgeShard) -> None:
        shard.flush()
        self._flushed_at[name] = time.monotonic()
        self._unflushed[name] = 0

    def _directory(self, name: str) -> Path:
        # The name becomes a directory: keep it one plain path component.
        if not _COLLECTION_NAME.fullmatch(name):
            raise ValueError(f"invalid collection name {name!r}")
        return self.path / name


def _flush_and_close(shard: qe.EdgeShard) -> None:
    try:
        shard.flush()
    finally:
        shard.close()


def _index(field: str, kind: str) -> qe.PayloadSchemaType | qe.KeywordIndexParams:
    if field == "tenant":
        # Qdrant's multitenancy layout: points of one tenant are stored together.
        return qe.KeywordIndexParams(is_tenant=True)
    return _SCHEMA_TYPES[kind]


def _to_edge_point(point: StoredPoint) -> qe.Point:
    return qe.Point(point.id, point.vector_list(), point.payload)


def _to_edge_filter(filter: StoreFilter) -> qe.Filter | None:
    if not filter.must and not filter.must_not and not filter.should:
        return None
    return _to_edge_nested(filter)


def _to_edge_nested(filter: StoreFilter) -> qe.Filter:
    return qe.Filter(
        must=[_to_edge_condition(c) for c in filter.must] or None,
        must_not=[_to_edge_condition(c) for c in filter.must_not] or None,
        should=[_to_edge_condition(c) for c in filter.should] or None,
    )


def _to_edge_condition(
    condition: Condition,
) -> qe.FieldCondition | qe.IsEmptyCondition | qe.Filter:
    if isinstance(condition, StoreFilter):
        return _to_edge_nested(condition)
    if isinstance(condition, IsEmpty):
        return qe.IsEmptyCondition(condition.key)
    if isinstance(condition, Match):
        value = condition.value
        if isinstance(value, bool):
            # The bindings read a Python bool as an integer (see the module
            # docstring); numpy's bool is not an int, so it stays a bool.
            value = cast(bool, np.bool_(value))
        return qe.FieldCondition(condition.key, match=qe.MatchValue(value))
    if isinstance(condition, MatchAny):
        return qe.FieldCondition(condition.key, match=qe.MatchAny(list(condition.values)))
    if isinstance(condition, Range):
        return qe.FieldCondition(
            condition.key,
            range=qe.RangeFloat(
                gt=condition.gt, gte=condition.gte, lt=condition.lt, lte=condition.lte
            ),
        )
    raise TypeError(f"unsupported condition {condition!r}")
