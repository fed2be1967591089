"""Garbage collection's state in the store: its mark, its clock and its trash.

Everything lives under ``<root>/gc/`` (never a two-hex-digit name, so the store's
inventory ignores it):

- ``mark.json``: what the last ``smyth storage gc`` found unreferenced, and when it
  started looking (``GcMark``). The next one removes only those objects, and only if
  they are still unreferenced then and nobody stored or reused them meanwhile.
- ``clock``: touched to read the time *of the store's file system*, which is what
  file times are compared with (a shared volume's clock may differ from ours).
- ``trash/``: where a file goes before its last check; a crash leaves it there, and
  the next run puts it back (``restore_trash``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from smyth_temporal._files import private_dir, write_atomically

__all__ = ["GcMark", "read_mark", "restore_trash", "store_clock", "trash_dir", "write_mark"]

_DIR = "gc"
_VERSION = 1


@dataclass(frozen=True)
class GcMark:
    """The objects one garbage collection found unreferenced, for the next to remove.

    Added in 0.8.0.
    """

    marked_at: float
    """The store's clock when that collection started reading histories: an object
    stored or reused since then has a later time and is kept."""
    candidates: frozenset[str]
    """Digests that no history referred to, and nothing had stored lately."""
    namespaces: tuple[str, ...] = ()
    """The namespaces whose histories were read."""


def _gc_dir(root: Path) -> Path:
    folder = private_dir(root) / _DIR
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def store_clock(root: Path) -> float:
    """The time now by the file system of the store at ``root`` (seconds since the epoch)."""
    clock = _gc_dir(root) / "clock"
    clock.touch(mode=0o600)
    os.utime(clock)  # touch() on an existing file may keep its time on some systems
    return clock.stat().st_mtime


def read_mark(root: Path) -> GcMark | None:
    """The mark the last collection left, or ``None`` (none, or one this version cannot read)."""
    try:
        data = json.loads((root / _DIR / "mark.json").read_text())
        if data.get("version") != _VERSION:
            return None
        return GcMark(
            marked_at=float(data["marked_at"]),
            candidates=frozenset(str(d) for d in data["candidates"]),
            namespaces=tuple(str(n) for n in data.get("namespaces", ())),
        )
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError, AttributeError):
        return None  # unreadable: starting over only delays removal, never hastens it


def write_mark(root: Path, mark: GcMark | None) -> None:
    """Replace the mark (atomically), or remove it with ``None``."""
    path = _gc_dir(root) / "mark.json"
    if mark is None:
        path.unlink(missing_ok=True)
        return
    body = json.dumps(
        {
            "version": _VERSION,
            "marked_at": mark.marked_at,
            "namespaces": list(mark.namespaces),
            "candidates": sorted(mark.candidates),
        }
    )
    write_atomically(path, body.encode())


def trash_dir(root: Path) -> Path:
    """Where files wait for their last check before removal."""
    folder = _gc_dir(root) / "trash"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def restore_trash(root: Path) -> int:
    """Put back what a crashed collection left in the trash; how many files came back.

    Restoring is always safe: the store is content-addressed, so a file that was
    written again meanwhile has the same bytes, and one nobody needs is collected
    next time.
    """
    folder = root / _DIR / "trash"
    if not folder.is_dir():
        return 0
    restored = 0
    for entry in folder.iterdir():
        target = root / entry.name[:2] / entry.name
        if len(entry.name) != 64 or target.exists():
            entry.unlink(missing_ok=True)
            continue
        target.parent.mkdir(mode=0o700, exist_ok=True)
        os.replace(entry, target)
        restored += 1
    return restored
