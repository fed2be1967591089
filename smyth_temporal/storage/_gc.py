"""The payload store's files: how many, how big, and removing the ones nothing needs."""

from __future__ import annotations

import os
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from smyth_temporal.storage._inventory import read_inventory, store_files

__all__ = ["GcReport", "StoreStats", "collect_garbage", "store_files", "store_stats"]

_TEMPORARY = re.compile(r"^\..*\.tmp$")


@dataclass(frozen=True)
class StoreStats:
    """What is in a store.

    Added in 0.4.0. Changed in 0.5.0: the chunked layout's counts.
    """

    files: int
    """Stored objects (whole payloads, chunks and tree nodes)."""
    bytes: int
    """Their total size."""
    disk_bytes: int = 0
    """What they take on disk (whole blocks)."""
    whole: int = 0
    """Payloads stored whole (the layout before 0.5.0, and payloads without cut points)."""
    whole_bytes: int = 0
    """Their size."""
    roots: int = 0
    """Chunked payloads (tree roots: what references point at)."""
    nodes: int = 0
    """Inner tree nodes."""
    chunks: int = 0
    """Chunk files."""
    chunk_bytes: int = 0
    """Their size."""
    shared_chunks: int = 0
    """Chunks that more than one chunked payload contains."""
    max_chunk_refs: int = 0
    """The most chunked payloads any one chunk is part of."""
    logical_bytes: int = 0
    """What the payloads would take stored whole: whole payloads and every root's size."""

    @property
    def dedup_ratio(self) -> float:
        """Logical bytes per stored byte (1.0 for an empty store)."""
        return self.logical_bytes / self.bytes if self.bytes else 1.0


@dataclass
class GcReport:
    """What ``collect_garbage`` did (or, dry, would do).

    Added in 0.4.0.
    """

    removed: list[str] = field(default_factory=list)
    """Digests of the files removed."""
    freed_bytes: int = 0
    """Their total size."""
    kept_referenced: int = 0
    """Files a retained history or schedule refers to, or that a referenced tree reaches."""
    kept_recent: int = 0
    """Unreferenced files younger than the threshold (possibly about to be referenced),
    and what their trees reach."""


def store_stats(root: Path) -> StoreStats:
    """How many objects the store holds, their size, and how much chunks are shared.

    Added in 0.4.0. Changed in 0.5.0: chunk, node and reference counts.
    """
    inventory = read_inventory(root)
    roots = {d: n for d, n in inventory.nodes.items() if n.root}
    refs: Counter[str] = Counter()
    for digest in roots:
        refs.update(inventory.reachable([digest]))
    in_trees = set(refs)
    chunks = [d for d in in_trees if d not in inventory.nodes]
    whole = [d for d in inventory.files if d not in in_trees and d not in inventory.nodes]
    files = inventory.files.values()
    return StoreStats(
        files=len(inventory.files),
        bytes=sum(f.size for f in files),
        disk_bytes=sum(f.disk for f in files),
        whole=len(whole),
        whole_bytes=sum(inventory.files[d].size for d in whole),
        roots=len(roots),
        nodes=len(inventory.nodes) - len(roots),
        chunks=len(chunks),
        chunk_bytes=sum(inventory.files[d].size for d in chunks),
        shared_chunks=sum(1 for d in chunks if refs[d] > 1),
        max_chunk_refs=max((refs[d] for d in chunks), default=0),
        logical_bytes=sum(inventory.files[d].size for d in whole)
        + sum(n.size for n in roots.values()),
    )


def collect_garbage(
    root: Path, referenced: set[str], older_than: timedelta, *, dry_run: bool = False
) -> GcReport:
    """Remove the files no reference needs and nobody wrote or stored again lately.

    A file is kept if a reference needs it: its digest is in ``referenced`` (every
    digest the retained histories and schedules refer to), or a referenced tree
    (chunked payload) reaches it. It is kept too if it, or a tree node that reaches
    it, was last written or stored again less than ``older_than`` ago: that protects
    a payload written by an activity whose result is not in history yet, with its
    chunks. Everything else goes, tree nodes before the chunks below them (a stored
    node always means a whole subtree, which writers rely on). Leftover temporary
    files of crashed writers older than the threshold go too.

    Added in 0.4.0. Changed in 0.5.0: the chunked layout's trees.
    """
    report = GcReport()
    cutoff = time.time() - older_than.total_seconds()
    inventory = read_inventory(root)
    needed = inventory.reachable(referenced)
    young = [d for d, f in inventory.files.items() if f.mtime > cutoff]
    recent = inventory.reachable(young) - needed
    report.kept_referenced = len(needed)
    report.kept_recent = len(recent)
    garbage = [d for d in inventory.files if d not in needed and d not in recent]
    # Parents before children (a node's level is one more than its children's), so a
    # crash halfway never leaves a node whose subtree is incomplete.
    garbage.sort(key=lambda d: -1 - inventory.nodes[d].level if d in inventory.nodes else 0)
    for digest in garbage:
        stored = inventory.files[digest]
        report.removed.append(digest)
        report.freed_bytes += stored.size
        if not dry_run:
            stored.path.unlink(missing_ok=True)
    if not dry_run:
        for shard in root.glob("??"):
            for stale in shard.iterdir() if shard.is_dir() and not shard.is_symlink() else ():
                if _TEMPORARY.match(stale.name) and stale.stat().st_mtime <= cutoff:
                    stale.unlink(missing_ok=True)
            if shard.is_dir() and not shard.is_symlink() and not any(shard.iterdir()):
                os.rmdir(shard)
    return report
