"""``MemoryManager``: remember, recall, forget, supersede, undo a run (worker side).

Every operation is confined to a scope (tenant and namespace) that the caller names
and the SDK injects from the agent's input; a filter on the tenant goes into every
read, and every write or delete checks the tenant of what it touches.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from smyth_temporal.memory._embed import Embedder
from smyth_temporal.memory._store import (
    NEVER,
    Condition,
    IsEmpty,
    Match,
    MatchAny,
    MemoryStore,
    Range,
    StoredPoint,
    StoreFilter,
)
from smyth_temporal.types.memory import (
    ForgetRequest,
    ListRequest,
    MemoryHit,
    MemoryRecord,
    MemoryScope,
    MemoryView,
    Provenance,
    ReadScope,
    RecallRequest,
    RememberRequest,
    SupersedeRequest,
    UndoRunRequest,
    memory_id,
)

__all__ = ["MemoryManager", "view_filter"]


class MemoryManager:
    """Memory operations over one ``MemoryStore`` and one ``Embedder``.

    Added in 0.1.0.
    """

    def __init__(
        self, store: MemoryStore, embedder: Embedder, *, environment: str | None = None
    ) -> None:
        """Create the manager.

        Args:
            store: Where memories live.
            embedder: What turns text into vectors.
            environment: An environment (``SMYTH_ENV``) whose memories must stay apart
                from every other's on a shared Qdrant: it names the collection.
        """
        self.store = store
        self.embedder = embedder
        slug = re.sub(r"[^A-Za-z0-9]+", "-", embedder.name).strip("-").lower()
        scope = f"{environment}__" if environment else ""
        self.collection = f"smyth_memory__{scope}{slug}__{embedder.dimension}"
        """One collection per environment, embedder and dimension: vectors of two models
        never mix, and environments never meet."""
        self._ready = False
        self._lock = asyncio.Lock()

    async def _collection(self) -> str:
        if not self._ready:
            async with self._lock:
                if not self._ready:
                    await self.store.ensure_collection(self.collection, self.embedder.dimension)
                    self._ready = True
        return self.collection

    async def remember(self, request: RememberRequest) -> list[MemoryRecord]:
        """Store texts; idempotent, and an exact duplicate in the scope is not stored again.

        Returns:
            The records as stored (an existing duplicate as it was first written).
        """
        collection = await self._collection()
        wanted: dict[str, MemoryRecord] = {}
        for text in request.texts:
            record = MemoryRecord(
                id=memory_id(request.scope, request.kind, text, request.provenance.branch),
                text=text,
                kind=request.kind,
                scope=request.scope,
                provenance=request.provenance,
                created_at=request.created_at,
                expires_at=request.expires_at,
                metadata=request.metadata,
            )
            wanted.setdefault(record.id, record)
        existing = {
            p.id: _to_record(p) for p in await self.store.retrieve(collection, list(wanted))
        }
        # Never overwrite: the first write keeps its provenance (so undoing a later run
        # that repeated a fact does not delete the fact an earlier run learned).
        new = [r for r in wanted.values() if r.id not in existing]
        if new:
            vectors = await self.embedder.embed([r.text for r in new])
            await self.store.upsert(
                collection,
                [StoredPoint(r.id, _to_payload(r), v) for r, v in zip(new, vectors, strict=True)],
            )
        return [existing.get(record_id) or record for record_id, record in wanted.items()]

    async def recall(self, request: RecallRequest) -> list[MemoryHit]:
        """The memories of the scope (or tenant) closest to the query, best first."""
        collection = await self._collection()
        must: list[Condition] = list(_read_conditions(request))
        if request.kinds:
            must.append(MatchAny("kind", tuple(request.kinds)))
        if request.agent:
            must.append(Match("agent", request.agent))
        if not request.include_expired:
            must.append(Range("expires_at_ts", gt=request.now.timestamp()))
        if not request.include_superseded:
            must.append(Match("superseded", False))
        must.append(view_filter(request.view or MemoryView()))
        [vector] = await self.embedder.embed([request.query])
        found = await self.store.search(
            collection, vector, StoreFilter(must=tuple(must)), request.k
        )
        return [MemoryHit(record=_to_record(point), score=score) for point, score in found]

    async def list(self, request: ListRequest) -> list[MemoryRecord]:
        """The memories of the scope (or tenant), newest first."""
        collection = await self._collection()
        must: list[Condition] = list(_read_conditions(request))
        if request.kinds:
            must.append(MatchAny("kind", tuple(request.kinds)))
        if request.workflow_id:
            must.append(Match("workflow_id", request.workflow_id))
        if not request.include_superseded:
            must.append(Match("superseded", False))
        points = await self.store.scroll(collection, StoreFilter(must=tuple(must)))
        records = sorted((_to_record(p) for p in points), key=_newest_first)
        return records[: request.limit]

    async def forget(self, request: ForgetRequest) -> int:
        """Delete memories of the scope by id or by kind; returns how many."""
        collection = await self._collection()
        if request.ids is not None:
            points = await self.store.retrieve(collection, _possible_ids(request.ids))
            # Ids are guessable (derived from content); the scope check is what keeps
            # one tenant from deleting another's memories.
            doomed = [p.id for p in points if _owned(p, request.scope, request.view)]
        else:
            must: list[Condition] = list(_scope_conditions(request.scope))
            if request.kinds:
                must.append(MatchAny("kind", tuple(request.kinds)))
            if request.view is not None:
                must.append(Match("branch", request.view.branch))
            doomed = [p.id for p in await self.store.scroll(collection, StoreFilter(tuple(must)))]
        if doomed:
            await self.store.delete(collection, doomed)
        return len(doomed)

    async def supersede(self, request: SupersedeRequest) -> MemoryRecord:
        """Store a newer memory and mark the old one superseded by it (kept for audit).

        Raises:
            KeyError: No memory with ``old_id`` in the scope.
        """
        collection = await self._collection()
        old = [
            p
            for p in await self.store.retrieve(collection, _possible_ids([request.old_id]))
            if _owned(p, request.scope, request.view)
        ]
        if not old:
            raise KeyError(
                f"no memory {request.old_id} in {request.scope.namespace!r}"
                + (
                    " of this fork's own (a fork changes only what it wrote)"
                    if request.view
                    else ""
                )
            )
        previous = _to_record(old[0])
        [record] = await self.remember(
            RememberRequest(
                scope=request.scope,
                texts=[request.text],
                kind=request.kind or previous.kind,
                provenance=request.provenance,
                created_at=request.created_at,
            )
        )
        if record.id != previous.id:
            await self.store.set_payload(
                collection, [previous.id], {"superseded": True, "superseded_by": record.id}
            )
        return record

    async def undo_run(self, request: UndoRunRequest) -> int:
        """Delete every memory a workflow (or one of its runs) wrote; returns how many."""
        collection = await self._collection()
        must: list[Condition] = [
            Match("tenant", request.tenant),
            Match("workflow_id", request.workflow_id),
        ]
        if request.scope is not None:
            must = [*_scope_conditions(request.scope), Match("workflow_id", request.workflow_id)]
        if request.run_id:
            must.append(Match("run_id", request.run_id))
        if request.after_step is not None:
            must.append(Range("step", gt=request.after_step))
        doomed = [p.id for p in await self.store.scroll(collection, StoreFilter(tuple(must)))]
        if doomed:
            await self.store.delete(collection, doomed)
        return len(doomed)

    async def close(self) -> None:
        """Close the store."""
        await self.store.close()


def view_filter(view: MemoryView) -> StoreFilter:
    """``MemoryView.sees`` as a store filter, so the store itself leaves the rest out.

    Memories of ordinary runs carry no ``branch`` field (those written before branches
    existed match the same way).
    """
    branches = tuple({view.branch, *(p.branch for p in view.lineage)} - {""})
    seen: tuple[Condition, ...] = (IsEmpty("branch"),)
    if branches:
        seen += (MatchAny("branch", branches),)
    hidden: list[Condition] = []
    for point in view.lineage:
        # The ancestor's later writes: what it learned after the fork step.
        later = Range("step", gt=point.step)
        if point.branch:
            hidden.append(StoreFilter(must=(Match("branch", point.branch), later)))
        else:
            hidden.append(
                StoreFilter(
                    must=(IsEmpty("branch"), Match("workflow_id", point.workflow_id), later)
                )
            )
    return StoreFilter(should=seen, must_not=tuple(hidden))


def _scope_key(scope: MemoryScope) -> str:
    return f"{scope.tenant}\x1f{scope.namespace}"


def _scope_conditions(scope: MemoryScope) -> tuple[Condition, ...]:
    # The scope key narrows the search; the tenant condition is defence in depth.
    return (Match("scope", _scope_key(scope)), Match("tenant", scope.tenant))


def _read_conditions(request: ReadScope) -> tuple[Condition, ...]:
    if request.scope is not None:
        return _scope_conditions(request.scope)
    return (Match("tenant", str(request.tenant)),)


def _in_scope(point: StoredPoint, scope: MemoryScope) -> bool:
    return (
        point.payload.get("tenant") == scope.tenant
        and point.payload.get("namespace") == scope.namespace
    )


def _owned(point: StoredPoint, scope: MemoryScope, view: MemoryView | None) -> bool:
    # A fork deletes or supersedes only its own branch's memories: the ones it inherits
    # are its ancestors' (and shared), and its changes must stay invisible to them.
    in_branch = view is None or point.payload.get("branch") == view.branch
    return in_branch and _in_scope(point, scope)


def _newest_first(record: MemoryRecord) -> tuple[float, str]:
    return (-record.created_at.timestamp(), record.id)


def _to_payload(record: MemoryRecord) -> dict[str, Any]:
    return {
        "text": record.text,
        "kind": record.kind,
        "scope": _scope_key(record.scope),
        "tenant": record.scope.tenant,
        "namespace": record.scope.namespace,
        "agent": record.provenance.agent,
        "workflow_id": record.provenance.workflow_id,
        "run_id": record.provenance.run_id,
        "step": record.provenance.step,
        # Only a fork's memories have a branch: the filter matches the rest by absence.
        **({"branch": record.provenance.branch} if record.provenance.branch else {}),
        "created_at_ts": record.created_at.timestamp(),
        "expires_at_ts": record.expires_at.timestamp() if record.expires_at else NEVER,
        "superseded": record.superseded_by is not None,
        "superseded_by": record.superseded_by,
        "metadata": record.metadata,
    }


def _to_record(point: StoredPoint) -> MemoryRecord:
    payload = point.payload
    expires = float(payload.get("expires_at_ts", NEVER))
    return MemoryRecord(
        id=point.id,
        text=str(payload["text"]),
        kind=str(payload.get("kind", "fact")),
        scope=MemoryScope(tenant=payload["tenant"], namespace=payload["namespace"]),
        provenance=Provenance(
            agent=payload.get("agent", ""),
            workflow_id=payload.get("workflow_id", ""),
            run_id=payload.get("run_id", ""),
            step=int(payload.get("step", 0)),
            branch=str(payload.get("branch") or ""),
        ),
        created_at=datetime.fromtimestamp(float(payload["created_at_ts"]), UTC),
        expires_at=None if expires >= NEVER else datetime.fromtimestamp(expires, UTC),
        superseded_by=payload.get("superseded_by"),
        metadata=dict(payload.get("metadata") or {}),
    )


def _possible_ids(ids: Sequence[str]) -> list[str]:
    """The ids that could name a memory: UUIDs (every memory id is one).

    Anything else (a model's made-up id, a fuzzer's ``0``) names no memory, so it is
    left out rather than sent to the store, which refuses to parse it; the activity
    would then fail on every retry and the caller wait for ever.
    """
    possible: list[str] = []
    for memory in ids:
        try:
            uuid.UUID(memory)
        except (ValueError, TypeError):
            continue
        possible.append(memory)
    return possible
