"""``SealedStore``: memories encrypted at rest, whatever the backend."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from google.protobuf.message import DecodeError
from temporalio.api.common.v1 import Payload

from smyth_temporal.exceptions import PayloadDecryptionError
from smyth_temporal.memory._store import INDEXED_FIELDS, MemoryStore, StoredPoint, StoreFilter

if TYPE_CHECKING:
    from smyth_temporal.security import EncryptionCodec

__all__ = ["SEALED_FIELD", "SealedStore"]

SEALED_FIELD = "sealed"
"""The payload field that holds every sealed field of a point."""


class SealedStore:
    """A ``MemoryStore`` whose points keep their content encrypted (AES-256-GCM).

    Every payload field that is not a filter key (``INDEXED_FIELDS``: tenant,
    namespace, agent, kind, workflow and run ids, branch, step, timestamps, ``superseded``) is
    sealed into one field with the same codec and keys as Temporal payloads; reads
    open it again. Filters and vector search work as before, since both use only
    what stays plain. The vectors cannot be encrypted (search needs them), and an
    embedding reveals approximate meaning to whoever can read the store: keep the
    store as private as the keys. Points written before a key was set read as they
    are. ``default_memory()`` wraps its store when ``SMYTH_ENCRYPTION_KEYS`` is set::

        MemoryManager(SealedStore(QdrantServerStore.from_env(), codec), embedder)

    Added in 0.4.0.
    """

    def __init__(self, inner: MemoryStore, codec: EncryptionCodec) -> None:
        self.inner = inner
        self._codec = codec

    def _seal(self, point: StoredPoint) -> StoredPoint:
        plain = {k: v for k, v in point.payload.items() if k in INDEXED_FIELDS}
        secret = {k: v for k, v in point.payload.items() if k not in INDEXED_FIELDS}
        content = Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(secret).encode())
        sealed = self._codec.seal(content).SerializeToString(deterministic=True)
        plain[SEALED_FIELD] = base64.b64encode(sealed).decode()
        return StoredPoint(id=point.id, payload=plain, vector=point.vector)

    def _open(self, point: StoredPoint) -> StoredPoint:
        if SEALED_FIELD not in point.payload:
            return point  # written before a key was set
        payload = dict(point.payload)
        try:
            box = Payload.FromString(base64.b64decode(payload.pop(SEALED_FIELD), validate=True))
        except (binascii.Error, ValueError, DecodeError):
            raise PayloadDecryptionError(
                f"memory {point.id} has a sealed field that is not a sealed payload (altered)"
            ) from None
        opened: dict[str, Any] = json.loads(self._codec.open(box).data)
        return StoredPoint(id=point.id, payload={**opened, **payload}, vector=point.vector)

    async def ensure_collection(self, name: str, dimension: int) -> None:
        """See ``MemoryStore``."""
        await self.inner.ensure_collection(name, dimension)

    async def upsert(self, collection: str, points: Sequence[StoredPoint]) -> None:
        """See ``MemoryStore``; the content is sealed first."""
        await self.inner.upsert(collection, [self._seal(p) for p in points])

    async def retrieve(self, collection: str, ids: Sequence[str]) -> list[StoredPoint]:
        """See ``MemoryStore``; the content is opened.

        Raises:
            PayloadDecryptionError: A point was altered, or its key is missing.
        """
        return [self._open(p) for p in await self.inner.retrieve(collection, ids)]

    async def search(
        self, collection: str, vector: Sequence[float], filter: StoreFilter, limit: int
    ) -> list[tuple[StoredPoint, float]]:
        """See ``MemoryStore``; the content is opened."""
        found = await self.inner.search(collection, vector, filter, limit)
        return [(self._open(p), score) for p, score in found]

    async def scroll(
        self, collection: str, filter: StoreFilter, limit: int | None = None
    ) -> list[StoredPoint]:
        """See ``MemoryStore``; the content is opened."""
        return [self._open(p) for p in await self.inner.scroll(collection, filter, limit)]

    async def delete(self, collection: str, ids: Sequence[str]) -> None:
        """See ``MemoryStore``."""
        await self.inner.delete(collection, ids)

    async def set_payload(
        self, collection: str, ids: Sequence[str], payload: dict[str, Any]
    ) -> None:
        """See ``MemoryStore``: bookkeeping (``superseded``, ids) is merged as it is."""
        await self.inner.set_payload(collection, ids, payload)

    async def close(self) -> None:
        """See ``MemoryStore``."""
        await self.inner.close()
