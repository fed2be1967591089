"""The payload store's files: how many, how big, and removing the ones nothing needs."""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from smyth_temporal.storage._inventory import StoreInventory, read_inventory, store_files
from smyth_temporal.storage._mark import GcMark, restore_trash, trash_dir, write_mark

__all__ = [
    "GcReport",
    "Progress",
    "StoreStats",
    "collect_garbage",
    "mark_and_sweep",
    "store_files",
    "store_stats",
]

Progress = Callable[[str, int, int | None], None]
"""Told (what is being done, how many done, out of how many or ``None``)."""

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
    """What ``collect_garbage`` or ``mark_and_sweep`` did (or, dry, would do).

    Added in 0.4.0. Changed in 0.8.0: marking, and what a sweep put back.
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
    kept_reused: int = 0
    """Files of the mark that were stored or reused since (and what they reach)."""
    put_back: int = 0
    """Files reused at the very moment they were being removed, put back."""
    marked: list[str] = field(default_factory=list)
    """Digests left in the new mark, for the next collection to remove."""
    marked_bytes: int = 0
    """Their total size."""


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
    """Remove, in one pass, the files no reference needs and nobody stored or reused lately.

    A file is kept if a reference needs it: its digest is in ``referenced`` (every
    digest the retained histories and schedules refer to), or a referenced tree
    (chunked payload) reaches it. It is kept too if it, or a tree node that reaches
    it, was last written or stored again less than ``older_than`` ago. Everything
    else goes, as ``sweep`` removes it. ``smyth storage gc`` uses ``mark_and_sweep``
    instead, which removes only what two collections a grace period apart found
    unused.

    Added in 0.4.0. Changed in 0.5.0: the chunked layout's trees. Changed in 0.8.0:
    removal re-checks each file (see ``sweep``).
    """
    inventory = read_inventory(root)
    cutoff = time.time() - older_than.total_seconds()
    mark = GcMark(marked_at=cutoff, candidates=frozenset(inventory.files))
    return sweep(root, inventory, referenced, mark, cutoff, dry_run=dry_run)


def mark_and_sweep(
    root: Path,
    referenced: set[str],
    *,
    started_at: float,
    older_than: timedelta,
    previous: GcMark | None,
    namespaces: Iterable[str] = (),
    dry_run: bool = False,
    progress: Progress | None = None,
) -> GcReport:
    """Remove what ``previous`` marked and is still unused, then mark what is unused now.

    Args:
        root: The store.
        referenced: Every digest the histories and schedules of every namespace the
            store serves refer to, read after ``started_at``.
        started_at: The store's clock (``store_clock``) before the histories were read.
        older_than: Files written or reused this recently are neither removed nor marked.
        previous: The last collection's mark, if it is old enough to act on (the
            caller waits out the grace period); ``None`` only marks.
        namespaces: The namespaces read, recorded in the new mark.
        dry_run: Say what would be removed and marked; change nothing.
        progress: Told how reading the store and removing files advance.

    Added in 0.8.0.
    """
    cutoff = started_at - older_than.total_seconds()
    if not dry_run:
        restore_trash(root)  # what a crashed run left half-removed
    inventory = read_inventory(root, progress=progress)
    if previous is not None:
        report = sweep(
            root, inventory, referenced, previous, cutoff, dry_run=dry_run, progress=progress
        )
        inventory = read_inventory(root, progress=progress) if not dry_run else inventory
    else:
        report = GcReport()
    gone = set(report.removed)
    files = {d: f for d, f in inventory.files.items() if d not in gone}
    young = [d for d, f in files.items() if f.mtime > cutoff]
    keep = inventory.reachable(referenced) | inventory.reachable(young)
    report.marked = sorted(d for d in files if d not in keep)
    report.marked_bytes = sum(files[d].size for d in report.marked)
    if previous is None:
        report.kept_referenced = len(inventory.reachable(referenced))
        report.kept_recent = len(keep) - report.kept_referenced
    if not dry_run:
        write_mark(
            root,
            GcMark(
                marked_at=started_at,
                candidates=frozenset(report.marked),
                namespaces=tuple(namespaces),
            ),
        )
    return report


def sweep(
    root: Path,
    inventory: StoreInventory,
    referenced: set[str],
    mark: GcMark,
    cutoff: float,
    *,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> GcReport:
    """Remove the marked files that are still unreferenced and unused since the mark.

    Kept: whatever ``referenced`` reaches; files that are not in the mark (written
    since, or needed when it was made); marked files whose time is at or after
    ``mark.marked_at`` or after ``cutoff`` (stored or reused since: a writer touches
    every object it reuses, a tree node standing for its subtree); and everything
    the kept files' trees reach. Tree nodes go before the chunks below them (a stored
    node always means a whole subtree, which writers rely on).

    A writer may reuse a file in the instant between the last look and the removal.
    So a file is first moved to the trash, which makes any later reuse see it missing
    and write it again; then its time is read once more, and if it was reused before
    the move, it is put back with everything its tree reaches.

    Added in 0.8.0.
    """
    report = GcReport()
    if not dry_run:
        restore_trash(root)
    since = min(mark.marked_at, cutoff)
    files = inventory.files
    needed = inventory.reachable(referenced)
    young = [d for d, f in files.items() if f.mtime > cutoff]
    reused = [d for d in mark.candidates if d in files and files[d].mtime >= mark.marked_at]
    unmarked = [d for d in files if d not in mark.candidates]
    recent = inventory.reachable(young) - needed
    keep = needed | recent | inventory.reachable(reused) | inventory.reachable(unmarked)
    report.kept_referenced = len(needed)
    report.kept_recent = len(recent)
    report.kept_reused = len(inventory.reachable(reused) - needed - recent)
    garbage = [d for d in files if d not in keep]
    # Parents before children (a node's level is one more than its children's), so a
    # crash halfway never leaves a node whose subtree is incomplete.
    garbage.sort(key=lambda d: -1 - inventory.nodes[d].level if d in inventory.nodes else 0)
    trash = trash_dir(root) if not dry_run and garbage else None
    for done, digest in enumerate(garbage):
        if progress is not None:
            progress("removing", done, len(garbage))
        if digest in keep:
            continue  # below a node that was put back
        stored = files[digest]
        if trash is not None and not _remove(stored.path, trash / digest, since):
            report.put_back += 1
            keep |= inventory.reachable([digest])
            continue
        report.removed.append(digest)
        report.freed_bytes += stored.size
    if not dry_run:
        _remove_leftovers(root, cutoff)
    return report


def _remove(path: Path, trashed: Path, since: float) -> bool:
    """Remove ``path`` unless it was touched after ``since``; whether it was removed."""
    try:
        os.replace(path, trashed)
    except FileNotFoundError:
        return True  # removed meanwhile (another collection)
    if trashed.stat().st_mtime >= since:
        # Reused after its last look: a writer now relies on it. (Written again
        # meanwhile? Same digest, same bytes.)
        os.replace(trashed, path)
        return False
    trashed.unlink()
    return True


def _remove_leftovers(root: Path, cutoff: float) -> None:
    """Temporary files of crashed writers older than ``cutoff``, and empty shards."""
    for shard in root.glob("??"):
        for stale in shard.iterdir() if shard.is_dir() and not shard.is_symlink() else ():
            if _TEMPORARY.match(stale.name) and stale.stat().st_mtime <= cutoff:
                stale.unlink(missing_ok=True)
        if shard.is_dir() and not shard.is_symlink() and not any(shard.iterdir()):
            with contextlib.suppress(OSError):  # a writer just put a file there
                os.rmdir(shard)
