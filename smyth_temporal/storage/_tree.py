"""The chunked layout's tree nodes: which chunks, in which order, make a payload.

A chunked payload is a tree. Its leaves are chunk files (see ``_chunks``); its nodes
list the SHA-256 digests of their children. Nodes are grouped by content, like a
prolly tree: a child ends a node when the digests of it and the two children before it
say so (about one child in ``FANOUT``), or when the node is full. (Not its digest
alone: a chunk that recurs every turn, such as the opening of every tool message,
would then end a node every turn if its digest said so.) Two conversations that share a prefix
therefore share every node that lies entirely inside it, and a new turn writes only
the nodes along the tree's right edge and a small root: the store grows with the new
messages, not with the whole conversation again.

Every file in the store stays a serialized ``Payload``. A node's encoding is
``binary/smyth-tree``; its data is a fixed header (version, flags, level, the size of
the bytes below it, the namespace the root's chunks were sealed for) and then 32-byte
digests. Nodes hold no content, so they are never encrypted: garbage collection reads
them without keys.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass

from temporalio.api.common.v1 import Payload

__all__ = [
    "CHUNK_ENCODING",
    "FANOUT",
    "NODE_ENCODING",
    "NODE_PREFIX",
    "Node",
    "build_tree",
    "chunk_payload",
    "parse_node",
]

NODE_ENCODING = b"binary/smyth-tree"
"""The encoding of a tree node's payload."""

CHUNK_ENCODING = b"binary/smyth-chunk"
"""The encoding of a chunk's payload (inside the seal when encryption is on)."""

FANOUT = 32
"""Children per node on average; a node holds at most ``4 * FANOUT``, a root ``2 * FANOUT``."""

_MAX_CHILDREN = 4 * FANOUT
_MAX_ROOT_CHILDREN = 2 * FANOUT
_BOUNDARY_BELOW = 256 // FANOUT  # a child whose window hash starts below this ends a node
_WINDOW = 3  # children whose digests decide a boundary: this one and those before it
_VERSION = 1
_ROOT = 1
_SEALED = 2
_HEADER = struct.Struct(">BBBQH")  # version, flags, level, size, namespace length
_DIGEST_BYTES = 32

NODE_PREFIX = Payload(metadata={"encoding": NODE_ENCODING}).SerializeToString(deterministic=True)
"""How every node file starts (a payload's metadata is serialized before its data)."""

_CHUNK_PREFIX = Payload(metadata={"encoding": CHUNK_ENCODING}).SerializeToString(deterministic=True)
_DATA_TAG = b"\x12"  # Payload.data: field 2, length-delimited


@dataclass(frozen=True)
class Node:
    """One tree node, parsed."""

    level: int
    """0: the children are chunks; otherwise nodes of the level below."""
    size: int
    """Bytes of content below this node (for a root: the payload's size)."""
    children: tuple[str, ...]
    """The children's SHA-256 hex digests, in order."""
    root: bool = False
    """Whether a history reference points here (the top of one payload's tree)."""
    sealed: bool = False
    """Whether the chunks below are sealed with the encryption codec."""
    namespace: str = ""
    """The namespace the chunks were sealed for (roots only; empty if none)."""

    def to_blob(self) -> bytes:
        """The node file's bytes."""
        namespace = self.namespace.encode()
        flags = (_ROOT if self.root else 0) | (_SEALED if self.sealed else 0)
        header = _HEADER.pack(_VERSION, flags, self.level, self.size, len(namespace))
        body = header + namespace + bytes.fromhex("".join(self.children))
        return _serialized(NODE_PREFIX, body)


def chunk_payload(piece: bytes) -> Payload:
    """The payload a chunk is stored as (sealed first when encryption is on)."""
    return Payload(metadata={"encoding": CHUNK_ENCODING}, data=piece)


def chunk_blob(piece: bytes) -> bytes:
    """``chunk_payload(piece)`` serialized, without building the message."""
    return _serialized(_CHUNK_PREFIX, piece)


def _serialized(prefix: bytes, data: bytes) -> bytes:
    """A payload's deterministic serialization: its metadata (``prefix``), then ``data``."""
    return b"".join((prefix, _DATA_TAG, _varint(len(data)), data))


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def parse_node(blob: bytes) -> Node | None:
    """The node a store file holds, or ``None`` if it holds a payload or chunk.

    Raises:
        ValueError: The file says it is a node but its data is malformed.
    """
    if not blob.startswith(NODE_PREFIX):
        return None
    payload = Payload.FromString(blob)
    if payload.metadata.get("encoding") != NODE_ENCODING:
        return None
    data = payload.data
    if len(data) < _HEADER.size:
        raise ValueError("a payload-store tree node is truncated")
    version, flags, level, size, namespace_length = _HEADER.unpack_from(data)
    start = _HEADER.size + namespace_length
    digests = data[start:]
    if version != _VERSION or len(digests) % _DIGEST_BYTES or len(data) < start:
        raise ValueError(f"unreadable payload-store tree node (version {version})")
    return Node(
        level=level,
        size=size,
        children=tuple(
            digests[i : i + _DIGEST_BYTES].hex() for i in range(0, len(digests), _DIGEST_BYTES)
        ),
        root=bool(flags & _ROOT),
        sealed=bool(flags & _SEALED),
        namespace=data[_HEADER.size : start].decode(),
    )


def build_tree(
    leaves: list[tuple[str, int]], *, sealed: bool, namespace: str
) -> list[tuple[str, bytes, Node]]:
    """The nodes over ``leaves`` (digest, size), the root last; each with digest and blob.

    Nodes of one level are grouped by content (see the module docstring) until at most
    ``2 * FANOUT`` remain; the root lists those.
    """
    made: list[tuple[str, bytes, Node]] = []
    level = 0
    current = leaves
    while len(current) > _MAX_ROOT_CHILDREN:
        grouped: list[tuple[str, int]] = []
        group: list[tuple[str, int]] = []
        for index, (digest, size) in enumerate(current):
            group.append((digest, size))
            last = index == len(current) - 1
            window = "".join(d for d, _ in current[max(0, index - _WINDOW + 1) : index + 1])
            ends = hashlib.sha256(window.encode()).digest()[0] < _BOUNDARY_BELOW
            if last or len(group) == _MAX_CHILDREN or ends:
                node = Node(
                    level=level,
                    size=sum(s for _, s in group),
                    children=tuple(d for d, _ in group),
                )
                blob = node.to_blob()
                node_digest = hashlib.sha256(blob).hexdigest()
                made.append((node_digest, blob, node))
                grouped.append((node_digest, node.size))
                group = []
        current = grouped
        level += 1
    root = Node(
        level=level,
        size=sum(s for _, s in current),
        children=tuple(d for d, _ in current),
        root=True,
        sealed=sealed,
        namespace=namespace,
    )
    blob = root.to_blob()
    made.append((hashlib.sha256(blob).hexdigest(), blob, root))
    return made
