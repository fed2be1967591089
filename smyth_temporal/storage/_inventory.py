"""What a payload store holds: its files, which are tree nodes, and what each node reaches."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from smyth_temporal.storage._tree import NODE_PREFIX, Node, parse_node

__all__ = ["StoreInventory", "StoredFile", "read_inventory", "store_files"]

_SHARD = re.compile(r"^[0-9a-f]{2}$")
_FILE = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class StoredFile:
    """One file of the store."""

    path: Path
    size: int
    disk: int
    """Bytes allocated on disk (whole blocks)."""
    mtime: float


@dataclass
class StoreInventory:
    """Every file of a store by digest, and the tree nodes among them."""

    files: dict[str, StoredFile] = field(default_factory=dict)
    nodes: dict[str, Node] = field(default_factory=dict)

    def reachable(self, starts: Iterable[str]) -> set[str]:
        """``starts`` (those stored) and everything their trees reach."""
        seen: set[str] = set()
        pending = [digest for digest in starts if digest in self.files]
        while pending:
            digest = pending.pop()
            if digest in seen:
                continue
            seen.add(digest)
            node = self.nodes.get(digest)
            if node is not None:
                pending.extend(c for c in node.children if c in self.files and c not in seen)
        return seen


def store_files(root: Path) -> Iterator[tuple[str, Path]]:
    """Every stored object's digest and path (``<root>/<2 hex>/<64 hex>``); links skipped."""
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


def read_inventory(
    root: Path, *, progress: Callable[[str, int, int | None], None] | None = None
) -> StoreInventory:
    """Every file of the store at ``root``, reading the tree nodes among them.

    Only a file's first bytes are read to tell a node; nodes are read whole (they are
    small: digests only). A node that cannot be parsed counts as a plain file.
    ``progress`` is told ("reading the store", files so far, ``None``) now and then.
    """
    inventory = StoreInventory()
    for count, (digest, path) in enumerate(store_files(root)):
        if progress is not None and count % 1024 == 0:
            progress("reading the store", count, None)
        try:
            info = path.stat()
            with path.open("rb") as file:
                head = file.read(len(NODE_PREFIX))
                blob = head + file.read() if head == NODE_PREFIX else b""
        except FileNotFoundError:
            continue  # removed meanwhile
        inventory.files[digest] = StoredFile(
            path, info.st_size, info.st_blocks * 512, info.st_mtime
        )
        if blob:
            try:
                node = parse_node(blob)
            except ValueError:
                node = None
            if node is not None:
                inventory.nodes[digest] = node
    return inventory
