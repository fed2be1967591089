"""Invariant: gc never removes a payload referenced, young, or stored since the last mark.

Hypothesis plays random sequences of what happens to a payload store: conversations
and whole payloads stored (again), references appearing in and leaving history, time
passing, and ``smyth storage gc`` runs (each one sweeps the previous mark and marks
anew). After every gc run, every referenced payload, every payload stored less than
``--older-than`` ago, and every payload stored (or stored again) since the previous
run, must read back whole from disk.

Time is virtual: after each operation, the files it touched get the virtual clock's
time, and gc runs at the virtual time, so days pass in microseconds.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from unittest import mock

from hypothesis import example, given
from hypothesis import strategies as st
from temporalio.api.common.v1 import Payload
from temporalio.converter import StorageDriverClaim

from smyth_temporal.storage import ContentAddressedFileDriver, mark_and_sweep, read_mark
from smyth_temporal.storage._inventory import read_inventory
from tests.storage.test_chunked_store import RETRIEVE, STORE, request_payload

OLDER_THAN = timedelta(days=1)
HOUR = 3600.0

# Conversations that share prefixes (their chunks and inner nodes), and whole payloads.
PAYLOADS = [
    request_payload(34),
    request_payload(35),
    Payload(metadata={"encoding": b"binary/plain"}, data=b"whole one " * 300),
]

store_op = st.tuples(st.just("store"), st.integers(0, len(PAYLOADS) - 1), st.booleans())
drop_op = st.tuples(st.just("drop"), st.integers(0, len(PAYLOADS) - 1), st.just(False))
# Time passes (hours), then gc runs: each run sweeps the last mark and marks anew.
gc_op = st.tuples(st.just("gc"), st.sampled_from([1, 25, 49]), st.just(False))
operations = st.lists(st.one_of(store_op, gc_op, store_op, gc_op, drop_op), min_size=4, max_size=14)


@dataclass
class World:
    root: Path
    clock: float = field(default_factory=lambda: time.time() - 1000 * 24 * HOUR)
    claims: dict[int, StorageDriverClaim] = field(default_factory=dict)
    referenced: set[int] = field(default_factory=set)
    stored_at: dict[int, float] = field(default_factory=dict)
    marked_at: float | None = None
    """When the last gc run started: what was stored since must survive the next one."""

    def settle(self, since: float) -> None:
        """Files touched since ``since`` (real time) get the virtual clock's time."""
        for stored in read_inventory(self.root).files.values():
            if stored.mtime >= since:
                os.utime(stored.path, (self.clock, self.clock))


async def play(ops: list[tuple[str, int, bool]], root: Path) -> None:
    world = World(root)
    for op, index, reference in ops:
        if op == "store":
            real = time.time() - 1
            [claim] = await ContentAddressedFileDriver(root).store(STORE, [PAYLOADS[index]])
            world.settle(real)
            world.claims[index] = claim
            world.stored_at[index] = world.clock
            if reference:
                world.referenced.add(index)
        elif op == "drop":
            world.referenced.discard(index)
        else:
            world.clock += index * HOUR
            since_mark = {
                i
                for i, at in world.stored_at.items()
                if world.marked_at is not None and at >= world.marked_at
            }
            digests = {world.claims[i].claim_data["sha256"] for i in world.referenced}
            mark_and_sweep(
                root,
                digests,
                started_at=world.clock,
                older_than=OLDER_THAN,
                previous=read_mark(root),
            )
            young = {
                i
                for i, at in world.stored_at.items()
                if at > world.clock - OLDER_THAN.total_seconds()
            }
            world.marked_at = world.clock
            for i in world.referenced | young | since_mark:
                fresh = ContentAddressedFileDriver(root)  # no cache: from disk
                [read] = await fresh.retrieve(RETRIEVE, [world.claims[i]])
                assert read == PAYLOADS[i], f"payload {i} lost by gc after {ops}"


@given(ops=operations)
# Reused between the mark and the sweep, then older than --older-than at the sweep:
# the same payload, and a longer conversation reusing the first one's chunks.
@example(ops=[("store", 2, False), ("gc", 25, False), ("store", 2, False), ("gc", 49, False)])
@example(ops=[("store", 0, False), ("gc", 25, False), ("store", 1, False), ("gc", 49, False)])
def test_gc_never_removes_a_referenced_young_or_reused_payload(
    ops: list[tuple[str, int, bool]],
) -> None:
    # Durability is not what is tested here: skip the driver's fsync, which dominates.
    with tempfile.TemporaryDirectory() as scratch, mock.patch("os.fsync"):
        asyncio.run(play(ops, Path(scratch)))
