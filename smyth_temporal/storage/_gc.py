"""The payload store's files: how many, how big, and removing the ones nothing needs."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

__all__ = ["GcReport", "StoreStats", "collect_garbage", "store_files", "store_stats"]

_SHARD = re.compile(r"^[0-9a-f]{2}$")
_FILE = re.compile(r"^[0-9a-f]{64}$")
_TEMPORARY = re.compile(r"^\..*\.tmp$")


@dataclass(frozen=True)
class StoreStats:
    """What is in a store.

    Added in 0.4.0.
    """

    files: int
    """Stored payloads."""
    bytes: int
    """Their total size."""


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
    """Files a retained history or schedule refers to."""
    kept_recent: int = 0
    """Unreferenced files younger than the threshold (possibly about to be referenced)."""


def store_files(root: Path) -> Iterator[tuple[str, Path]]:
    """Every stored payload's digest and path (``<root>/<2 hex>/<64 hex>``); links skipped."""
    if not root.is_dir():
        return
    for shard in sorted(root.iterdir()):
        if not _SHARD.match(shard.name) or shard.is_symlink() or not shard.is_dir():
            continue
        for file in sorted(shard.iterdir()):
            if (
                _FILE.match(file.name)
                and file.name.startswith(shard.name)
                and not file.is_symlink()
            ):
                yield file.name, file


def store_stats(root: Path) -> StoreStats:
    """How many payloads the store holds, and their size.

    Added in 0.4.0.
    """
    sizes = [path.stat().st_size for _, path in store_files(root)]
    return StoreStats(files=len(sizes), bytes=sum(sizes))


def collect_garbage(
    root: Path, referenced: set[str], older_than: timedelta, *, dry_run: bool = False
) -> GcReport:
    """Remove the files no reference needs and nobody wrote or stored again lately.

    A file goes only if both hold: its digest is not in ``referenced`` (every digest
    the retained histories and schedules refer to) and it was last written or stored
    again more than ``older_than`` ago. The age protects a payload written by an
    activity whose result is not in history yet. Leftover temporary files of crashed
    writers older than the threshold go too.

    Added in 0.4.0.
    """
    report = GcReport()
    cutoff = time.time() - older_than.total_seconds()
    for digest, path in store_files(root):
        info = path.stat()
        if digest in referenced:
            report.kept_referenced += 1
        elif info.st_mtime > cutoff:
            report.kept_recent += 1
        else:
            report.removed.append(digest)
            report.freed_bytes += info.st_size
            if not dry_run:
                path.unlink(missing_ok=True)
    if not dry_run:
        for shard in root.glob("??"):
            for stale in shard.iterdir() if shard.is_dir() and not shard.is_symlink() else ():
                if _TEMPORARY.match(stale.name) and stale.stat().st_mtime <= cutoff:
                    stale.unlink(missing_ok=True)
            if shard.is_dir() and not shard.is_symlink() and not any(shard.iterdir()):
                os.rmdir(shard)
    return report
