"""The chunked layout: a payload stored as a tree of shared, content-addressed chunks.

``ContentAddressedFileDriver`` hands each payload here first. A payload with
content-defined cut points (``_chunks.split``: a conversation, a tool result) becomes
chunk files and tree nodes (``_tree``), and its reference names the root node; one
without is stored whole, as before. Turn after turn, a conversation's chunks and most
of its nodes already exist, so a turn writes only what is new.

Encryption: temporalio runs the codec before the store, so a payload arrives sealed
as one ciphertext that nothing could share. With the codec (``SmythPlugin`` hands it
to the driver), the payload is opened here, and every chunk is sealed on its own with
the same codec; its synthetic nonce makes equal chunks equal ciphertexts, so they are
still stored once, and the store holds ciphertext only. A root records the namespace
its chunks were sealed for; reading opens them for that namespace and seals the
reassembled payload for it again, so the converter's codec still refuses a payload
read from another namespace.

Chunks and nodes, verified against their digests when read, are cached in memory: a
worker that wrote a conversation's chunks reads them back without touching the disk.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from typing import Protocol

from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    PayloadCodec,
    StorageDriverStoreContext,
    WithSerializationContext,
    WorkflowSerializationContext,
)

from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.security import refusal
from smyth_temporal.storage._cache import LruCache
from smyth_temporal.storage._chunks import split
from smyth_temporal.storage._tree import (
    CHUNK_ENCODING,
    NODE_ENCODING,
    Node,
    build_tree,
    chunk_blob,
    chunk_payload,
    parse_node,
)

__all__ = ["DEFAULT_CACHE_BYTES", "ChunkedLayout", "ObjectFiles"]

DEFAULT_CACHE_BYTES = 64 * 1024 * 1024
"""Chunk bytes a driver keeps in memory for reading them back."""

_NODE_CACHE_ENTRIES = 16_384
_SEALED_CACHE_ENTRIES = 65_536
_RESERVED = frozenset({NODE_ENCODING, CHUNK_ENCODING})


class ObjectFiles(Protocol):
    """The store's files, as the driver keeps them (blocking calls: run them in a thread)."""

    def read_object(self, digest: str) -> bytes:
        """The bytes under ``digest``, checked against it."""
        ...

    def write_object(self, digest: str, blob: bytes) -> None:
        """Write ``blob`` under ``digest`` unless it is there already (then touch it)."""
        ...

    def has_object(self, digest: str) -> bool:
        """Whether ``digest`` is stored (and, if so, touch it)."""
        ...


class ChunkedLayout:
    """Stores and reads chunked payloads over a driver's files."""

    def __init__(
        self,
        files: ObjectFiles,
        codec: PayloadCodec | None = None,
        *,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
    ) -> None:
        """Create the layout.

        Args:
            files: Where objects are read and written.
            codec: The encryption codec: payloads arrive sealed with it and their chunks
                are sealed with it. ``None``: chunks are stored as they are.
            cache_bytes: Chunk bytes kept in memory for reads.
        """
        self._files = files
        self._codec = codec
        self._pieces: LruCache[str, bytes] = LruCache(cache_bytes, len)
        self._nodes: LruCache[str, Node] = LruCache(_NODE_CACHE_ENTRIES)
        # (namespace, SHA-256 of a chunk's plaintext) -> digest of its sealed file.
        self._sealed: LruCache[tuple[str, bytes], str] = LruCache(_SEALED_CACHE_ENTRIES)
        self._bound: dict[str, PayloadCodec] = {}

    async def store(self, context: StorageDriverStoreContext, payload: Payload) -> str | None:
        """Store ``payload`` chunked; its root's digest, or ``None`` to store it whole.

        Raises:
            ValueError: The payload uses an encoding reserved for the store's own files.
        """
        namespace = context.target.namespace if context.target is not None else ""
        sealer = self._sealer(namespace)
        opened = payload if self._codec is None else (await self._codec.decode([payload]))[0]
        if opened.metadata.get("encoding") in _RESERVED:
            raise ValueError(
                f"payload encoding {opened.metadata['encoding']!r} is reserved for the "
                "payload store's own files"
            )
        pieces = await asyncio.to_thread(_pieces_of, opened)
        if pieces is None:
            return None
        if sealer is None:
            digests, blobs = await asyncio.to_thread(_plain_blobs, pieces)
        else:
            digests, blobs = await self._seal(sealer, namespace, pieces)
        for digest, piece in zip(digests, pieces, strict=True):
            self._pieces.put(digest, piece)
        leaves = [(d, len(p)) for d, p in zip(digests, pieces, strict=True)]
        tree, missing = await asyncio.to_thread(
            self._build_and_write, leaves, blobs, sealer is not None, namespace
        )
        if missing:
            # Chunks sealed earlier (their digests cached) whose files are gone: seal again.
            if sealer is None:
                raise AssertionError("plain chunks always have their bytes")
            wanted = {digest: pieces[digests.index(digest)] for digest in missing}
            again, resealed = await self._seal(sealer, namespace, list(wanted.values()), False)
            if again != list(wanted):  # a codec that does not seal deterministically
                self._sealed = LruCache(_SEALED_CACHE_ENTRIES)
                return await self.store(context, payload)
            await asyncio.to_thread(self._write_tree, tree, {**blobs, **resealed})
        for digest, _, node in tree:
            self._nodes.put(digest, node)
        return tree[-1][0]

    async def read(self, digest: str) -> Payload:
        """The payload stored under ``digest``, whichever the layout.

        Raises:
            ConfigurationError: A file is missing (see the driver), or the chunks are
                sealed and this driver has no codec.
            ValueError: A file does not match its digest, or a tree is malformed.
        """
        node = self._nodes.get(digest)
        if node is None:
            blob = await asyncio.to_thread(self._files.read_object, digest)
            node = parse_node(blob)
            if node is None:
                payload = Payload()
                payload.ParseFromString(blob)
                return payload
        if not node.root:
            raise ValueError(f"payload reference {digest} names an inner tree node, not a root")
        return await self._assemble(node)

    async def _assemble(self, root: Node) -> Payload:
        sealer = None
        if root.sealed:
            sealer = self._sealer(root.namespace)
            if sealer is None:
                raise ConfigurationError(
                    "this stored payload's chunks are encrypted, and this process has no "
                    "encryption key: set SMYTH_ENCRYPTION_KEYS (or SMYTH_ENCRYPTION_KEY_FILE)"
                )
        entries = list(root.children)
        for level in range(root.level, 0, -1):
            nodes = await self._load_nodes(entries)
            if any(node.level != level - 1 for node in nodes):
                raise ValueError("a payload-store tree has a node at the wrong level")
            entries = [child for node in nodes for child in node.children]
        pieces = await self._load_pieces(entries, sealer)
        metadata = Payload.FromString(pieces[0]).metadata
        payload = Payload(metadata=metadata, data=b"".join(pieces[1:]))
        if sealer is not None:
            # Sealed again (for its namespace, if it names one): the converter's codec
            # checks it, and refuses a payload that arrives unsealed.
            [payload] = await sealer.encode([payload])
        return payload

    async def _load_nodes(self, digests: list[str]) -> list[Node]:
        found = {d: n for d in digests if (n := self._nodes.get(d)) is not None}
        absent = [d for d in dict.fromkeys(digests) if d not in found]
        if absent:
            blobs = await asyncio.to_thread(lambda: [self._files.read_object(d) for d in absent])
            for digest, blob in zip(absent, blobs, strict=True):
                node = parse_node(blob)
                if node is None or node.root:
                    raise ValueError(f"stored object {digest} should be an inner tree node")
                found[digest] = node
                self._nodes.put(digest, node)
        return [found[d] for d in digests]

    async def _load_pieces(self, digests: list[str], sealer: PayloadCodec | None) -> list[bytes]:
        found = {d: p for d in digests if (p := self._pieces.get(d)) is not None}
        absent = [d for d in dict.fromkeys(digests) if d not in found]
        if absent:
            blobs = await asyncio.to_thread(lambda: [self._files.read_object(d) for d in absent])
            chunks = [Payload.FromString(blob) for blob in blobs]
            if sealer is not None:
                chunks = await sealer.decode(chunks)
            for digest, chunk in zip(absent, chunks, strict=True):
                refused = refusal(chunk)
                if refused is not None:  # a store file altered, or sealed elsewhere
                    raise refused
                if chunk.metadata.get("encoding") != CHUNK_ENCODING:
                    raise ValueError(f"stored object {digest} should be a chunk")
                found[digest] = chunk.data
                self._pieces.put(digest, chunk.data)
        return [found[d] for d in digests]

    def _sealer(self, namespace: str) -> PayloadCodec | None:
        """The codec bound to ``namespace`` (unbound without one); ``None`` without a codec."""
        codec = self._codec
        if codec is None or not namespace or not isinstance(codec, WithSerializationContext):
            return codec
        bound = self._bound.get(namespace)
        if bound is None:
            context = WorkflowSerializationContext(namespace=namespace, workflow_id="")
            bound = codec.with_context(context)
            self._bound[namespace] = bound
        return bound

    async def _seal(
        self,
        sealer: PayloadCodec,
        namespace: str,
        pieces: Sequence[bytes],
        cached: bool = True,
    ) -> tuple[list[str], dict[str, bytes]]:
        """Digests of the sealed pieces, and the sealed bytes of those sealed now."""
        keys = [(namespace, hashlib.sha256(piece).digest()) for piece in pieces]
        digests = [self._sealed.get(key) if cached else None for key in keys]
        todo = [i for i, digest in enumerate(digests) if digest is None]
        sealed = await sealer.encode([chunk_payload(pieces[i]) for i in todo])
        blobs: dict[str, bytes] = {}
        for i, chunk in zip(todo, sealed, strict=True):
            blob = chunk.SerializeToString(deterministic=True)
            digest = hashlib.sha256(blob).hexdigest()
            digests[i] = digest
            blobs[digest] = blob
            self._sealed.put(keys[i], digest)
        return [d for d in digests if d is not None], blobs

    def _build_and_write(
        self, leaves: list[tuple[str, int]], blobs: dict[str, bytes], sealed: bool, namespace: str
    ) -> tuple[list[tuple[str, bytes, Node]], list[str]]:
        tree = build_tree(leaves, sealed=sealed, namespace=namespace)
        return tree, self._write_tree(tree, blobs)

    def _write_tree(
        self, tree: list[tuple[str, bytes, Node]], blobs: dict[str, bytes]
    ) -> list[str]:
        """Write what is missing, children before parents; the chunks missing without bytes.

        Walks down from the root and skips every subtree whose node is already stored:
        a node is written only after everything below it, so a stored node means a
        whole subtree (garbage collection removes nodes before their children).
        """
        nodes = {digest: (blob, node) for digest, blob, node in tree}
        missing_nodes: list[str] = []
        missing_chunks: dict[str, None] = {}
        pending = [tree[-1][0]]
        while pending:
            digest = pending.pop()
            if digest in missing_nodes or self._files.has_object(digest):
                continue
            missing_nodes.append(digest)
            for child in nodes[digest][1].children:
                if child in nodes:
                    pending.append(child)
                elif child not in missing_chunks and not self._files.has_object(child):
                    missing_chunks[child] = None
        unavailable = [digest for digest in missing_chunks if digest not in blobs]
        if unavailable:
            return unavailable
        for digest in missing_chunks:
            self._files.write_object(digest, blobs[digest])
        for digest in reversed(missing_nodes):
            self._files.write_object(digest, nodes[digest][0])
        return []


def _pieces_of(payload: Payload) -> list[bytes] | None:
    """The payload's metadata then its data's chunks; ``None`` if its data has no cut."""
    pieces = split(payload.data)
    if len(pieces) < 2:
        return None
    metadata = Payload(metadata=payload.metadata).SerializeToString(deterministic=True)
    return [metadata, *pieces]


def _plain_blobs(pieces: list[bytes]) -> tuple[list[str], dict[str, bytes]]:
    """The unsealed chunk files' digests (one per piece), and their bytes by digest."""
    blobs = [chunk_blob(piece) for piece in pieces]
    digests = [hashlib.sha256(blob).hexdigest() for blob in blobs]
    return digests, dict(zip(digests, blobs, strict=True))
