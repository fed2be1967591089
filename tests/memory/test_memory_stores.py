"""The two Qdrant backends behave the same: congruence tests over one scenario.

One scenario of writes (inserts, overwrites of the same ids, payload merges, deletes)
and reads (filtered searches, scrolls, retrieves) runs against Qdrant Edge and
against qdrant-client's local mode (and a real server when ``QDRANT_URL`` is set).
Each transcript is checked against a small reference model written here in Python,
and the backends' transcripts against each other: ids and order exactly, payloads
exactly, scores within 1e-4.
"""

from __future__ import annotations

import asyncio
import math
import os
import random
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.memory import (
    EdgeStore,
    HashEmbedder,
    MemoryManager,
    MemoryStore,
    QdrantServerStore,
    _edge,
    _qdrant,
)
from smyth_temporal.memory._store import (
    INDEXED_FIELDS,
    NEVER,
    Condition,
    Match,
    MatchAny,
    Range,
    StoredPoint,
    StoreFilter,
)
from smyth_temporal.types.memory import (
    ForgetRequest,
    ListRequest,
    MemoryScope,
    RecallRequest,
    RememberRequest,
    SupersedeRequest,
)

pytestmark = pytest.mark.filterwarnings(
    # qdrant-client's local mode warns that it ignores payload indexes; we know.
    "ignore:Payload indexes have no effect:UserWarning"
)

DIM = 8
NOW = 1_750_000_000.0
COLLECTION = "smyth_memory__test__8"
REPO = Path(__file__).resolve().parents[2]

# ---------------------------------------------------------------------------
# The scenario and its reference model
# ---------------------------------------------------------------------------


def _vector(rng: random.Random) -> list[float]:
    return [rng.gauss(0.0, 1.0) for _ in range(DIM)]


def _id(n: int) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"smyth-test-point-{n}"))


def _initial_points() -> list[StoredPoint]:
    rng = random.Random(20240501)
    tenants = ("acme", "globex")
    namespaces = ("research", "ops")
    kinds = ("fact", "episode", "preference", "note")
    points = []
    for n in range(40):
        payload: dict[str, Any] = {
            "text": f"memory {n}",
            "tenant": tenants[n % 2],
            "namespace": namespaces[(n // 2) % 2],
            "kind": kinds[n % 4 if n % 7 else 1],
            "agent": f"agent-{n % 3}",
            "workflow_id": f"wf-{n % 5}",
            "run_id": f"run-{n % 10}",
            "step": n,
            "created_at_ts": NOW - 1000.0 * n,
            "expires_at_ts": NEVER,
            "superseded": False,
            "superseded_by": None,
            "metadata": {"n": n, "tags": ["a", "b"][: n % 3], "nested": {"x": n / 4}},
        }
        if n % 6 == 0:
            payload["expires_at_ts"] = NOW - 10.0  # expired
        if n % 9 == 0:
            payload["expires_at_ts"] = NOW + 3600.0  # expires later
        if n % 8 == 3:
            payload["superseded"] = True
            payload["superseded_by"] = _id(n + 1)
        if n % 11 == 5:
            del payload["expires_at_ts"]  # a field missing altogether
        # The same field holds an int for some points, a bool for others: Qdrant keeps
        # them apart (1 does not match True), and so must both backends.
        payload["flag"] = (n % 2 == 0) if n % 3 else n % 2
        points.append(StoredPoint(_id(n), payload, _vector(rng)))
    return points


def _overwrites() -> list[StoredPoint]:
    """New vectors and whole new payloads for existing ids (keys dropped, values changed)."""
    rng = random.Random(7)
    out = []
    for n in (1, 2, 17):
        payload = {
            "text": f"memory {n}, revised",
            "tenant": "acme",
            "namespace": "research",
            "kind": "fact",
            "created_at_ts": NOW + n,
            "expires_at_ts": NEVER,
            "superseded": False,
        }
        out.append(StoredPoint(_id(n), payload, _vector(rng)))
    return out


SET_PAYLOAD_IDS = [_id(4), _id(10), _id(999)]  # 999 never exists
SET_PAYLOAD = {"superseded": True, "superseded_by": _id(5), "metadata": {"merged": True}}
DELETE_IDS = [_id(3), _id(8), _id(998)]  # 998 never exists

RECALL = (
    Match("tenant", "acme"),
    Match("namespace", "research"),
    Range("expires_at_ts", gt=NOW),
    Match("superseded", False),
)

FILTERS: dict[str, StoreFilter] = {
    "none": StoreFilter(),
    "scope": StoreFilter(must=(Match("tenant", "acme"), Match("namespace", "research"))),
    "recall": StoreFilter(must=RECALL),
    "recall_kinds": StoreFilter(must=(*RECALL, MatchAny("kind", ("fact", "note")))),
    "superseded_only": StoreFilter(must=(Match("superseded", True),)),
    "not_superseded": StoreFilter(must_not=(Match("superseded", True),)),
    "kind_not_episode": StoreFilter(
        must=(Match("tenant", "globex"),), must_not=(Match("kind", "episode"),)
    ),
    "created_window": StoreFilter(
        must=(Range("created_at_ts", gte=NOW - 20_000.0, lte=NOW - 5_000.0),)
    ),
    "created_open": StoreFilter(must=(Range("created_at_ts", gt=NOW - 9_000.0, lt=NOW),)),
    # Points without expires_at_ts match neither a range nor (so) are excluded by not-range.
    "expired": StoreFilter(must=(Range("expires_at_ts", lte=NOW),)),
    "not_expired_by_must_not": StoreFilter(must_not=(Range("expires_at_ts", lte=NOW),)),
    "must_and_must_not_any": StoreFilter(
        must=(MatchAny("agent", ("agent-0", "agent-2")),),
        must_not=(MatchAny("workflow_id", ("wf-1", "wf-3")), Match("tenant", "globex")),
    ),
    "int_step": StoreFilter(must=(Match("step", 12),)),
    "flag_int_1": StoreFilter(must=(Match("flag", 1),)),
    "flag_true": StoreFilter(must=(Match("flag", True),)),
    "flag_false": StoreFilter(must=(Match("flag", False),)),
    "any_empty": StoreFilter(must=(MatchAny("kind", ()),)),
    "not_any_empty": StoreFilter(must_not=(MatchAny("kind", ()),)),
    "missing_key": StoreFilter(must=(Match("no_such_key", "x"),)),
    "not_missing_key": StoreFilter(must_not=(Match("no_such_key", "x"),)),
    "nothing": StoreFilter(must=(Match("tenant", "initech"),)),
}


RETRIEVE_IDS = [_id(n) for n in (0, 1, 3, 4, 10, 17, 998)]  # 3 deleted, 998 never written
SEARCH_LIMITS = (1, 5, 100)
SCROLL_LIMITS: tuple[int | None, ...] = (None, 1, 4, 1000)


def _queries() -> list[list[float]]:
    rng = random.Random(99)
    return [_vector(rng) for _ in range(3)]


@dataclass
class Reference:
    """What the store should hold, as plain Python, and what reads should return."""

    points: dict[str, tuple[list[float], dict[str, Any]]] = field(default_factory=dict)

    def upsert(self, points: list[StoredPoint]) -> None:
        for p in points:
            assert p.vector is not None
            self.points[p.id] = (list(p.vector), dict(p.payload))

    def set_payload(self, ids: list[str], payload: dict[str, Any]) -> None:
        for i in ids:
            if i in self.points:
                self.points[i][1].update(payload)

    def delete(self, ids: list[str]) -> None:
        for i in ids:
            self.points.pop(i, None)

    def matching(self, flt: StoreFilter) -> list[str]:
        return sorted(
            (i for i, (_, payload) in self.points.items() if _passes(payload, flt)),
            key=lambda i: uuid.UUID(i).int,
        )

    def search(self, vector: list[float], flt: StoreFilter, limit: int) -> list[Any]:
        scored = [(i, _cosine(vector, self.points[i][0])) for i in self.matching(flt)]
        scored.sort(key=lambda pair: -pair[1])
        return [[i, self.points[i][1], s] for i, s in scored[:limit]]


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(
        sum(x * x for x in a) * sum(y * y for y in b)
    )


def _same_value(stored: Any, wanted: Any) -> bool:
    # Qdrant keeps bool and integer apart: 1 does not match True.
    return isinstance(stored, bool) == isinstance(wanted, bool) and stored == wanted


def _holds(payload: dict[str, Any], condition: Condition) -> bool:
    value = payload.get(condition.key)
    if isinstance(condition, Match):
        return value is not None and _same_value(value, condition.value)
    if isinstance(condition, MatchAny):
        return any(_same_value(value, v) for v in condition.values)
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False  # a range never matches a missing or non-numeric value
    return (
        (condition.gt is None or value > condition.gt)
        and (condition.gte is None or value >= condition.gte)
        and (condition.lt is None or value < condition.lt)
        and (condition.lte is None or value <= condition.lte)
    )


def _passes(payload: dict[str, Any], flt: StoreFilter) -> bool:
    return all(_holds(payload, c) for c in flt.must) and not any(
        _holds(payload, c) for c in flt.must_not
    )


# A transcript: (step, value) pairs; a search result is a list of [id, payload, score].
Transcript = list[tuple[str, Any]]


async def write_phase(store: MemoryStore, collection: str = COLLECTION) -> Reference:
    """Every kind of write, mirrored in the reference model."""
    ref = Reference()
    await store.ensure_collection(collection, DIM)
    await store.ensure_collection(collection, DIM)  # idempotent
    points = _initial_points()
    await store.upsert(collection, points)
    ref.upsert(points)
    await store.upsert(collection, _overwrites())
    ref.upsert(_overwrites())
    await store.set_payload(collection, SET_PAYLOAD_IDS, SET_PAYLOAD)
    ref.set_payload(SET_PAYLOAD_IDS, SET_PAYLOAD)
    await store.delete(collection, DELETE_IDS)
    ref.delete(DELETE_IDS)
    await store.delete(collection, [])
    await store.set_payload(collection, [], {"ignored": True})
    await store.upsert(collection, [])
    return ref


async def read_phase(store: MemoryStore, collection: str = COLLECTION) -> Transcript:
    """Every kind of read; the transcript is plain data, comparable across backends."""
    out: Transcript = []
    got = sorted(await store.retrieve(collection, RETRIEVE_IDS), key=lambda p: p.id)
    assert all(p.vector is None for p in got), "retrieve returns payload only"
    out.append(("retrieve", [[p.id, p.payload] for p in got]))
    out.append(("retrieve_none", await store.retrieve(collection, [])))
    for q, vector in enumerate(_queries()):
        for name, flt in FILTERS.items():
            for k in SEARCH_LIMITS:
                hits = await store.search(collection, vector, flt, k)
                out.append((f"search q{q} {name} k{k}", [[p.id, p.payload, s] for p, s in hits]))
    for name, flt in FILTERS.items():
        for limit in SCROLL_LIMITS:
            points = await store.scroll(collection, flt, limit)
            assert all(p.vector is None for p in points), "scroll returns payload only"
            out.append((f"scroll {name} {limit}", [[p.id, p.payload] for p in points]))
    return out


def expected_reads(ref: Reference) -> Transcript:
    out: Transcript = []
    present = sorted(i for i in RETRIEVE_IDS if i in ref.points)
    out.append(("retrieve", [[i, ref.points[i][1]] for i in present]))
    out.append(("retrieve_none", []))
    for q, vector in enumerate(_queries()):
        for name, flt in FILTERS.items():
            for k in SEARCH_LIMITS:
                out.append((f"search q{q} {name} k{k}", ref.search(vector, flt, k)))
    for name, flt in FILTERS.items():
        for limit in SCROLL_LIMITS:
            ids = ref.matching(flt)[:limit]
            out.append((f"scroll {name} {limit}", [[i, ref.points[i][1]] for i in ids]))
    return out


def assert_same(actual: Transcript, expected: Transcript, *, label: str) -> None:
    """Ids and order exactly, payloads exactly, scores (third item) within 1e-4."""
    assert [step for step, _ in actual] == [step for step, _ in expected]
    for (step, got), (_, want) in zip(actual, expected, strict=True):
        got_rows = [row[:2] for row in got]
        want_rows = [row[:2] for row in want]
        assert got_rows == want_rows, f"{label}: {step}"
        for got_row, want_row in zip(got, want, strict=True):
            if len(want_row) == 3:
                assert got_row[2] == pytest.approx(want_row[2], abs=1e-4), f"{label}: {step}"


def test_the_scenario_is_not_trivial() -> None:
    """Guard the guard: the filters select something, and not everything."""
    ref = Reference()
    ref.upsert(_initial_points())
    ref.upsert(_overwrites())
    ref.set_payload(SET_PAYLOAD_IDS, SET_PAYLOAD)
    ref.delete(DELETE_IDS)
    sizes = {name: len(ref.matching(flt)) for name, flt in FILTERS.items()}
    total = len(ref.points)
    assert total == 38
    for name in ("any_empty", "missing_key", "nothing"):
        assert sizes[name] == 0
    for name in ("none", "not_any_empty", "not_missing_key"):
        assert sizes[name] == total
    selective = [n for n in FILTERS if n not in ("none", "not_any_empty", "not_missing_key")]
    assert all(sizes[n] < total for n in selective)
    assert sizes["recall"] >= 3 and sizes["recall_kinds"] < sizes["recall"] < sizes["scope"]
    assert sizes["flag_int_1"] > 0 and sizes["flag_true"] > 0 and sizes["flag_false"] > 0
    assert sizes["expired"] + sizes["not_expired_by_must_not"] == total
    # Some points lack expires_at_ts: they are neither expired nor in the gt-now range.
    missing = [i for i, (_, p) in ref.points.items() if "expires_at_ts" not in p]
    assert missing


# ---------------------------------------------------------------------------
# Backends
# ---------------------------------------------------------------------------

StoreFactory = Callable[[], MemoryStore]


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tiny pages and write chunks, so the scenario crosses their boundaries."""
    monkeypatch.setattr(_edge, "SCROLL_PAGE", 3)
    monkeypatch.setattr(_edge, "WRITE_CHUNK", 4)
    monkeypatch.setattr(_qdrant, "SCROLL_PAGE", 3)
    monkeypatch.setattr(_qdrant, "WRITE_BATCH", 4)


@pytest.fixture(params=["edge", "local"])
async def factory(
    request: pytest.FixtureRequest, tmp_path: Path, small_batches: None
) -> AsyncIterator[StoreFactory]:
    """Opens the backend's store (Edge in this test's directory); closes what it opened."""
    opened: list[MemoryStore] = []

    def make() -> MemoryStore:
        if request.param == "edge":
            store: MemoryStore = EdgeStore(tmp_path / "memory")
        else:
            store = QdrantServerStore(location=":memory:")
        opened.append(store)
        return store

    yield make
    for store in opened:
        await store.close()


async def test_backend_matches_the_reference_model(factory: StoreFactory) -> None:
    store = factory()
    ref = await write_phase(store)
    assert_same(await read_phase(store), expected_reads(ref), label="store vs reference")


async def test_backends_agree(tmp_path: Path, small_batches: None) -> None:
    edge = EdgeStore(tmp_path / "memory")
    local = QdrantServerStore(location=":memory:")
    try:
        await write_phase(edge)
        await write_phase(local)
        assert_same(await read_phase(edge), await read_phase(local), label="edge vs local")
    finally:
        await edge.close()
        await local.close()


@pytest.mark.qdrant_server
@pytest.mark.skipif(not os.environ.get("QDRANT_URL"), reason="QDRANT_URL is not set")
async def test_real_server_matches_the_reference_and_edge(
    tmp_path: Path, small_batches: None
) -> None:
    server = QdrantServerStore.from_env()
    edge = EdgeStore(tmp_path / "memory")
    collection = f"smyth_test_{uuid.uuid4().hex}"
    try:
        ref = await write_phase(server, collection)
        await write_phase(edge, collection)
        got = await read_phase(server, collection)
        assert_same(got, expected_reads(ref), label="server vs reference")
        assert_same(got, await read_phase(edge, collection), label="server vs edge")
    finally:
        await server.client.delete_collection(collection)
        await server.close()
        await edge.close()


async def test_ensure_collection_creates_the_payload_indexes(tmp_path: Path) -> None:
    store = EdgeStore(tmp_path / "memory")
    await store.ensure_collection(COLLECTION, DIM)
    with store._shard(COLLECTION) as shard:
        schema = shard.info().payload_schema
    await store.close()
    assert set(schema) == set(INDEXED_FIELDS)
    kinds = {name: str(info.data_type).rsplit(".", 1)[-1].lower() for name, info in schema.items()}
    assert kinds == INDEXED_FIELDS


async def test_a_dimension_mismatch_is_refused(factory: StoreFactory) -> None:
    store = factory()
    await store.ensure_collection(COLLECTION, DIM)
    with pytest.raises(ConfigurationError):
        await store.ensure_collection(COLLECTION, DIM * 2)


async def test_edge_refuses_a_mismatch_found_on_disk(tmp_path: Path) -> None:
    first = EdgeStore(tmp_path / "memory")
    await first.ensure_collection(COLLECTION, DIM)
    await first.close()
    second = EdgeStore(tmp_path / "memory")
    with pytest.raises(ConfigurationError):
        await second.ensure_collection(COLLECTION, DIM * 2)
    # A read before ensure_collection opens the shard without the config: the later
    # ensure_collection still checks it.
    assert await second.scroll(COLLECTION, StoreFilter()) == []
    with pytest.raises(ConfigurationError):
        await second.ensure_collection(COLLECTION, DIM * 2)
    await second.ensure_collection(COLLECTION, DIM)
    await second.close()


# ---------------------------------------------------------------------------
# Edge persistence
# ---------------------------------------------------------------------------


async def test_edge_reads_the_same_after_close_and_reopen(
    tmp_path: Path, small_batches: None
) -> None:
    path = tmp_path / "memory"
    first = EdgeStore(path)
    ref = await write_phase(first)
    before = await read_phase(first)
    await first.close()

    # A new store (as in the next worker process) reads without ensure_collection.
    second = EdgeStore(path)
    after = await read_phase(second)
    await second.ensure_collection(COLLECTION, DIM)
    again = await read_phase(second)
    await second.close()

    expected = expected_reads(ref)
    assert_same(before, expected, label="before close")
    assert_same(after, expected, label="after reopen")
    assert_same(again, expected, label="after reopen and ensure_collection")


async def test_edge_store_is_usable_after_close(tmp_path: Path) -> None:
    store = EdgeStore(tmp_path / "memory")
    ref = await write_phase(store)
    await store.close()
    await store.close()  # twice is fine
    assert len(await store.scroll(COLLECTION, StoreFilter())) == len(ref.points)
    await store.close()


_KILLED_WRITER = """
import asyncio, os, signal, sys
from pathlib import Path
from smyth_temporal.memory._edge import EdgeStore
from tests.memory.test_memory_stores import write_phase

async def main() -> None:
    # No flush on write: only the write-ahead log holds the data when we die.
    store = EdgeStore(Path(sys.argv[1]), flush_interval=3600.0)
    await write_phase(store)
    print("written", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)

asyncio.run(main())
"""


async def test_edge_loses_no_acknowledged_write_when_sigkilled(tmp_path: Path) -> None:
    path = tmp_path / "memory"
    child = subprocess.run(
        [sys.executable, "-c", _KILLED_WRITER, str(path)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert child.stdout.strip() == "written"

    ref = Reference()
    ref.upsert(_initial_points())
    ref.upsert(_overwrites())
    ref.set_payload(SET_PAYLOAD_IDS, SET_PAYLOAD)
    ref.delete(DELETE_IDS)
    store = EdgeStore(path)
    try:
        assert_same(await read_phase(store), expected_reads(ref), label="after SIGKILL")
    finally:
        await store.close()


async def test_flush_after_every_write(tmp_path: Path) -> None:
    store = EdgeStore(tmp_path / "memory", flush_interval=0)
    ref = await write_phase(store)
    await store.flush()
    assert_same(await read_phase(store), expected_reads(ref), label="flush_interval=0")
    await store.close()


async def test_edge_refuses_a_second_opener_of_the_same_path(tmp_path: Path) -> None:
    first = EdgeStore(tmp_path / "memory")
    await first.ensure_collection(COLLECTION, DIM)
    second = EdgeStore(tmp_path / "memory")
    with pytest.raises(ConfigurationError, match="already open"):
        await second.ensure_collection(COLLECTION, DIM)
    await first.close()
    await second.ensure_collection(COLLECTION, DIM)  # free again
    await second.close()


async def test_edge_unknown_collection(tmp_path: Path) -> None:
    store = EdgeStore(tmp_path / "memory")
    with pytest.raises(ValueError, match="does not exist"):
        await store.search("nope", [1.0] * DIM, StoreFilter(), 5)
    for bad in ("../escape", "a/b", "", "."):
        with pytest.raises(ValueError, match="invalid collection name"):
            await store.ensure_collection(bad, DIM)
    assert not (tmp_path / "escape").exists()
    await store.close()


# ---------------------------------------------------------------------------
# Concurrency
# ---------------------------------------------------------------------------


async def test_concurrent_calls_from_one_event_loop(factory: StoreFactory) -> None:
    store = factory()
    await store.ensure_collection(COLLECTION, DIM)
    rng = random.Random(3)
    batches = [
        [
            StoredPoint(_id(1000 + b * 10 + i), {"tenant": f"t{b % 3}", "b": b}, _vector(rng))
            for i in range(10)
        ]
        for b in range(12)
    ]
    query = _vector(rng)
    flt = StoreFilter(must=(Match("tenant", "t1"),))

    async def reader() -> None:
        for _ in range(5):
            hits = await store.search(COLLECTION, query, flt, 5)
            assert all(p.payload["tenant"] == "t1" for p, _ in hits)
            await asyncio.sleep(0)

    calls: list[Awaitable[None]] = [store.upsert(COLLECTION, b) for b in batches]
    calls += [reader() for _ in range(4)]
    await asyncio.gather(*calls)
    assert len(await store.scroll(COLLECTION, StoreFilter())) == 120
    assert len(await store.scroll(COLLECTION, flt)) == 40


# ---------------------------------------------------------------------------
# Configuration of the server store
# ---------------------------------------------------------------------------


def test_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("QDRANT_URL", raising=False)
    with pytest.raises(ConfigurationError):
        QdrantServerStore.from_env()
    monkeypatch.setenv("QDRANT_URL", "https://qdrant.invalid:6333")
    monkeypatch.setenv("QDRANT_API_KEY", "k")
    store = QdrantServerStore.from_env()
    assert store.client.init_options["url"] == "https://qdrant.invalid:6333"
    assert store.client.init_options["api_key"] == "k"


async def test_a_client_passed_in_stays_open() -> None:
    store = QdrantServerStore(location=":memory:")
    shared = QdrantServerStore(client=store.client)
    await shared.ensure_collection(COLLECTION, DIM)
    await shared.close()
    assert await store.client.collection_exists(COLLECTION)  # still usable
    await store.close()
    with pytest.raises(ConfigurationError):
        QdrantServerStore(url="http://x:6333", client=store.client)


async def test_reads_across_a_tenants_namespaces_never_across_tenants(
    factory: StoreFactory,
) -> None:
    manager = MemoryManager(factory(), HashEmbedder(64))
    now = datetime(2026, 11, 22, tzinfo=UTC)
    for tenant, namespace, text in [
        ("acme", "research", "ACME reports earnings on May 3"),
        ("acme", "trading", "ACME earnings call moved to May 4"),
        ("globex", "research", "GLOBEX earnings on May 3"),
    ]:
        await manager.remember(
            RememberRequest(
                scope=MemoryScope(tenant=tenant, namespace=namespace),
                texts=[text],
                created_at=now,
            )
        )

    hits = await manager.recall(RecallRequest(tenant="acme", query="earnings", k=10, now=now))
    listed = await manager.list(ListRequest(tenant="acme"))
    one = await manager.list(ListRequest(scope=MemoryScope(tenant="acme", namespace="trading")))

    assert sorted(h.record.scope.namespace for h in hits) == ["research", "trading"]
    assert {h.record.scope.tenant for h in hits} == {"acme"}
    assert sorted(r.scope.namespace for r in listed) == ["research", "trading"]
    assert [r.scope.namespace for r in one] == ["trading"]
    with pytest.raises(ValueError, match="name a scope, or a tenant"):
        ListRequest()
    with pytest.raises(ValueError, match="name a scope, or a tenant"):
        ListRequest(tenant="acme", scope=MemoryScope(tenant="acme", namespace="x"))


@pytest.mark.parametrize("odd", ["0", "", "call_1_0", "%3B%26", "1" * 64])
async def test_an_id_that_names_no_memory_is_forgotten_as_none_not_retried_for_ever(
    tmp_path: Path, odd: str
) -> None:
    # A model's made-up id or a fuzzer's "0" reached the store, which refused to parse
    # it: the forget activity failed on every retry and the gateway's DELETE hung.
    manager = MemoryManager(EdgeStore(tmp_path / "memory"), HashEmbedder(64))
    scope = MemoryScope(tenant="t1", namespace="research")
    now = datetime.now(UTC)
    [kept] = await manager.remember(RememberRequest(scope=scope, texts=["ACME"], created_at=now))
    try:
        assert await manager.forget(ForgetRequest(scope=scope, ids=[odd])) == 0
        with pytest.raises(KeyError):
            await manager.supersede(
                SupersedeRequest(scope=scope, old_id=odd, text="GLOBEX", created_at=now)
            )
        # A real id beside an odd one is still forgotten.
        assert await manager.forget(ForgetRequest(scope=scope, ids=[odd, kept.id])) == 1
    finally:
        await manager.close()
