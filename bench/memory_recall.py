"""Memory store throughput and recall latency, embedded (Qdrant Edge) and local mode.

From the repository root::

    .venv/bin/python -m bench.memory_recall [--sizes 10000 100000] [--queries 500]

For each size, an ``EdgeStore`` in a temporary directory is filled with 384-dimensional
random unit vectors and payloads shaped like ``MemoryManager``'s (tenant among 10,
namespace among 5, kind among 4, ``expires_at_ts`` mostly ``NEVER``, ``superseded``
mostly false), through the store's own API:

- upsert throughput: points per second over batches of ``--batch`` points, and the
  longest the event loop went without running while they were written (a ticker task
  that wakes every millisecond notices);
- recall latency: ``search`` top-5 with the filter ``MemoryManager.recall`` builds
  (scope key + tenant + not expired + not superseded), random scope and query vector,
  p50 / p95 / p99 over ``--queries`` queries; the same with the scope given as two
  conditions (tenant + namespace, without the scope key); and no filter at all;
- then ``optimize`` (HNSW build; Qdrant Edge has no background optimizer) and the
  same queries again.

Then the same at ``--server-size`` points for ``QdrantServerStore(location=":memory:")``
(qdrant-client's pure-Python local mode), with ``--server-queries`` queries: it is
far slower, and only there to compare.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench._common import percentile
from smyth_temporal.memory import EdgeStore, QdrantServerStore
from smyth_temporal.memory._manager import _scope_conditions, _scope_key
from smyth_temporal.memory._store import (
    NEVER,
    Condition,
    Match,
    MemoryStore,
    Range,
    StoredPoint,
    StoreFilter,
)
from smyth_temporal.types.memory import MemoryScope

DIM = 384
TENANTS = 10
NAMESPACES = 5
KINDS = ("fact", "episode", "preference", "note")
NOW = 1_750_000_000.0
COLLECTION = "bench_memory__384"


@dataclass
class Result:
    backend: str
    size: int
    upsert_points_per_s: float
    loop_stall_max_ms: float
    rows: list[tuple[str, list[float]]]
    optimize_s: float | None = None


def unit_vectors(rng: np.random.Generator, n: int) -> np.ndarray[Any, np.dtype[np.float32]]:
    vectors = rng.standard_normal((n, DIM), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def payload(rng: np.random.Generator, n: int) -> dict[str, Any]:
    roll = rng.random()
    expires = NEVER if roll < 0.9 else (NOW - 3600.0 if roll < 0.95 else NOW + 86_400.0)
    superseded = bool(rng.random() < 0.05)
    scope = random_scope(rng)
    return {
        "text": f"memory {n}: the quarterly numbers of account {n % 997} were revised upward",
        "kind": KINDS[int(rng.integers(len(KINDS)))],
        "scope": _scope_key(scope),
        "tenant": scope.tenant,
        "namespace": scope.namespace,
        "agent": f"agent-{n % 7}",
        "workflow_id": f"wf-{n % 1000}",
        "run_id": f"run-{n % 3000}",
        "step": n % 50,
        "created_at_ts": NOW - float(n),
        "expires_at_ts": expires,
        "superseded": superseded,
        "superseded_by": str(uuid.UUID(int=n + 1)) if superseded else None,
        "metadata": {},
    }


def random_scope(rng: np.random.Generator) -> MemoryScope:
    return MemoryScope(
        tenant=f"tenant-{int(rng.integers(TENANTS))}",
        namespace=f"ns-{int(rng.integers(NAMESPACES))}",
    )


def recall_filter(rng: np.random.Generator, scope_key: bool) -> StoreFilter:
    """What ``MemoryManager.recall`` asks for (``scope_key``), or the scope as two fields."""
    scope = random_scope(rng)
    conditions: tuple[Condition, ...] = (
        _scope_conditions(scope)
        if scope_key
        else (Match("tenant", scope.tenant), Match("namespace", scope.namespace))
    )
    return StoreFilter(
        must=(*conditions, Range("expires_at_ts", gt=NOW), Match("superseded", False))
    )


async def loop_stalls(during: Callable[[], Awaitable[None]]) -> float:
    """Run ``during`` while a ticker measures the longest gap between its wake-ups (ms)."""
    stalls: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        while not done.is_set():
            start = time.perf_counter()
            await asyncio.sleep(0.001)
            stalls.append(time.perf_counter() - start - 0.001)

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.01)
    try:
        await during()
    finally:
        done.set()
        await task
    return max(stalls, default=0.0) * 1000


async def fill(store: MemoryStore, size: int, batch: int, seed: int) -> tuple[float, float]:
    """Upsert ``size`` points; returns (points per second, longest loop stall in ms)."""
    rng = np.random.default_rng(seed)
    await store.ensure_collection(COLLECTION, DIM)
    spent = 0.0
    stall = 0.0
    for start in range(0, size, batch):
        count = min(batch, size - start)
        vectors = unit_vectors(rng, count).tolist()
        points = [
            StoredPoint(str(uuid.UUID(int=start + i + 1)), payload(rng, start + i), vectors[i])
            for i in range(count)
        ]
        began = time.perf_counter()

        async def write(points: list[StoredPoint] = points) -> None:
            await store.upsert(COLLECTION, points)

        stall = max(stall, await loop_stalls(write))
        spent += time.perf_counter() - began
    return size / spent, stall


async def latencies(
    store: MemoryStore, queries: int, filtered: bool | None, seed: int
) -> list[float]:
    """``filtered``: the recall filter (True), the two-field one (False), none (None)."""
    rng = np.random.default_rng(seed)
    vectors = unit_vectors(rng, queries).tolist()
    filters = [
        StoreFilter() if filtered is None else recall_filter(rng, filtered) for _ in range(queries)
    ]
    await store.search(COLLECTION, vectors[0], filters[0], 5)  # warm-up
    out = []
    for vector, flt in zip(vectors, filters, strict=True):
        began = time.perf_counter()
        hits = await store.search(COLLECTION, vector, flt, 5)
        out.append(time.perf_counter() - began)
        if filtered is not None:
            assert all(not p.payload["superseded"] for p, _ in hits)
    return out


async def query_rows(store: MemoryStore, queries: int, label: str) -> list[tuple[str, list[float]]]:
    return [
        (f"recall top-5{label}", await latencies(store, queries, True, 11)),
        (f"  same, tenant + namespace{label}", await latencies(store, queries, False, 11)),
        (f"top-5, no filter{label}", await latencies(store, queries, None, 12)),
    ]


async def bench_edge(size: int, queries: int, batch: int, optimize: bool) -> Result:
    with tempfile.TemporaryDirectory(prefix="smyth-bench-") as tmp:
        store = EdgeStore(Path(tmp))
        try:
            rate, stall = await fill(store, size, batch, seed=size)
            rows = await query_rows(store, queries, "")
            optimize_s = None
            if optimize:
                began = time.perf_counter()
                await store.optimize(COLLECTION)
                optimize_s = time.perf_counter() - began
                rows += await query_rows(store, queries, ", after optimize")
        finally:
            await store.close()
    return Result("EdgeStore (Qdrant Edge)", size, rate, stall, rows, optimize_s)


async def bench_local(size: int, queries: int, batch: int) -> Result:
    store = QdrantServerStore(location=":memory:")
    try:
        rate, stall = await fill(store, size, batch, seed=size)
        rows = await query_rows(store, queries, "")
    finally:
        await store.close()
    return Result('QdrantServerStore(":memory:") (local mode)', size, rate, stall, rows)


def report(result: Result) -> None:
    print(f"\n{result.backend}, {result.size:,} points of {DIM} dimensions")
    print(
        f"  upsert: {result.upsert_points_per_s:,.0f} points/s;"
        f" longest event-loop stall while writing: {result.loop_stall_max_ms:.1f} ms"
    )
    if result.optimize_s is not None:
        print(f"  optimize (HNSW build): {result.optimize_s:.1f} s")
    for label, values in result.rows:
        ms = [v * 1000 for v in values]
        print(
            f"  {label:<44} n={len(ms):4d}  mean {statistics.fmean(ms):7.2f}  "
            f"p50 {percentile(ms, 0.5):7.2f}  p95 {percentile(ms, 0.95):7.2f}  "
            f"p99 {percentile(ms, 0.99):7.2f} ms"
        )


async def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--batch", type=int, default=1000, help="points per upsert call")
    parser.add_argument("--no-optimize", action="store_true", help="skip optimize")
    parser.add_argument("--server-size", type=int, default=10_000, help="0 skips local mode")
    parser.add_argument("--server-queries", type=int, default=50)
    args = parser.parse_args(argv)
    # Local mode says it ignores payload indexes, once per index; we know.
    warnings.filterwarnings("ignore", "Payload indexes have no effect", UserWarning)

    print(f"Python {sys.version.split()[0]}, numpy {np.__version__}")
    for size in args.sizes:
        report(await bench_edge(size, args.queries, args.batch, not args.no_optimize))
        gc.collect()
    if args.server_size:
        report(await bench_local(args.server_size, args.server_queries, args.batch))


if __name__ == "__main__":
    asyncio.run(main())
