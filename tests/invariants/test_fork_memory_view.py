"""A fork's memory view, against an oracle written from the rule itself.

A run R sees a memory written by workflow W at step S iff W is R, or W is an ancestor
of R and S is at most the step R's line branched off W, or W is an ordinary run that
is no ancestor of R (shared memory stays shared). A fork's memories are seen by nobody
else. Checked for the pure ``MemoryView.sees`` and for what a store (Qdrant Edge, and
qdrant-client's local mode for the server store's filter translation) returns to a
recall with the view's filter.
"""

from __future__ import annotations

import asyncio
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from smyth_temporal.memory import EdgeStore, HashEmbedder, MemoryManager, QdrantServerStore
from smyth_temporal.memory._store import MemoryStore
from smyth_temporal.types.agent import ForkOrigin
from smyth_temporal.types.memory import (
    MemoryScope,
    MemoryView,
    Provenance,
    RecallRequest,
    RememberRequest,
)

ORDINARY = ("O", "X")
"""O is the root every fork descends from; X an unrelated ordinary run."""
SCOPE = MemoryScope(tenant="t", namespace="n")
NOW = datetime(2026, 1, 1, tzinfo=UTC)


@st.composite
def family(draw: st.DrawFn) -> dict[str, tuple[str, int]]:
    """Forks and their (parent, step): F1 of O, F2 of F1 (at or after F1's start), G of O."""
    n1 = draw(st.integers(0, 4))
    return {
        "F1": ("O", n1),
        "F2": ("F1", draw(st.integers(n1, 8))),
        "G": ("O", draw(st.integers(0, 4))),
    }


def ancestors(run: str, parents: dict[str, tuple[str, int]]) -> dict[str, int]:
    """Each ancestor of ``run`` and the step ``run``'s line branched off it."""
    found: dict[str, int] = {}
    while run in parents:
        run, step = parents[run]
        found[run] = step
    return found


def oracle(writer: str, step: int, reader: str, parents: dict[str, tuple[str, int]]) -> bool:
    if writer == reader:
        return True
    lineage = ancestors(reader, parents)
    if writer in lineage:
        return step <= lineage[writer]
    return writer in ORDINARY


def origin(run: str, parents: dict[str, tuple[str, int]]) -> ForkOrigin | None:
    if run not in parents:
        return None
    parent, step = parents[run]
    return ForkOrigin(workflow_id=parent, run_id="r", step=step, parent=origin(parent, parents))


def view_of(run: str, parents: dict[str, tuple[str, int]]) -> MemoryView | None:
    """What ``AgentMemory.view`` gives the run (``None``: an ordinary run)."""
    fork_of = origin(run, parents)
    return None if fork_of is None else MemoryView.of_fork(run, fork_of)


def provenance(writer: str, step: int, parents: dict[str, tuple[str, int]]) -> Provenance:
    return Provenance(
        workflow_id=writer, run_id="r", step=step, branch="" if writer in ORDINARY else writer
    )


RUNS = st.sampled_from(["O", "X", "F1", "F2", "G"])


@st.composite
def writes(draw: st.DrawFn, parents: dict[str, tuple[str, int]]) -> list[tuple[str, int]]:
    """Memories as runs really write them: a fork only at steps after its fork step."""
    found = []
    for _ in range(draw(st.integers(1, 12))):
        writer = draw(RUNS)
        start = parents[writer][1] + 1 if writer in parents else 0
        found.append((writer, draw(st.integers(start, start + 6))))
    return found


@given(family(), RUNS, RUNS, st.integers(0, 12))
def test_a_view_sees_exactly_what_the_lineage_rule_allows(
    parents: dict[str, tuple[str, int]], reader: str, writer: str, step: int
) -> None:
    view = view_of(reader, parents) or MemoryView()
    assert view.sees(provenance(writer, step, parents)) == oracle(writer, step, reader, parents)


@given(st.data())
def test_a_recall_returns_from_the_store_exactly_the_views_memories(data: st.DataObject) -> None:
    parents = data.draw(family())
    written = data.draw(writes(parents))
    reader = data.draw(RUNS)
    backend = data.draw(st.sampled_from(["edge", "local"]))

    async def recalled() -> set[str]:
        with tempfile.TemporaryDirectory() as path:
            store: MemoryStore = (
                EdgeStore(Path(path) / "memory")
                if backend == "edge"
                else QdrantServerStore(location=":memory:")
            )
            manager = MemoryManager(store, HashEmbedder(16))
            try:
                for i, (writer, step) in enumerate(written):
                    await manager.remember(
                        RememberRequest(
                            scope=SCOPE,
                            texts=[f"memory {i}"],
                            provenance=provenance(writer, step, parents),
                            created_at=NOW,
                        )
                    )
                hits = await manager.recall(
                    RecallRequest(
                        scope=SCOPE, query="memory", k=100, now=NOW, view=view_of(reader, parents)
                    )
                )
            finally:
                await manager.close()
        return {h.record.text for h in hits}

    expected = {
        f"memory {i}"
        for i, (writer, step) in enumerate(written)
        if oracle(writer, step, reader, parents)
    }
    assert asyncio.run(recalled()) == expected
