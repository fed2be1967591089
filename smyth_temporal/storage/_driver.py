"""``ContentAddressedFileDriver``: Temporal payloads as files named by their hash."""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
from collections.abc import Sequence
from pathlib import Path

from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    PayloadCodec,
    StorageDriver,
    StorageDriverClaim,
    StorageDriverRetrieveContext,
    StorageDriverStoreContext,
)

from smyth_temporal._files import private_dir, write_atomically
from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.storage._chunked import DEFAULT_CACHE_BYTES, ChunkedLayout
from smyth_temporal.storage._namespaces import record_namespace

__all__ = ["DRIVER_NAME", "ContentAddressedFileDriver"]

DRIVER_NAME = "smyth.fs"
"""The name references in history carry; the driver that reads them must have it."""

_CLAIM_KEY = "sha256"
_DIGEST = re.compile(r"^[0-9a-f]{64}$")


class ContentAddressedFileDriver(StorageDriver):
    """Stores each distinct payload once, as a file named by its SHA-256.

    A payload above ``ExternalStorage.payload_size_threshold`` is serialized, hashed
    and written to ``<root>/<first two hex digits>/<sha256>``; history keeps only a
    reference (about 210 bytes) carrying the digest. The same bytes stored again, by
    another step, run or process, reuse the file. A write goes to a temporary file in
    the same directory, is synced, then renamed into place, so concurrent writers
    (threads or processes) and crashes never leave a partial file under a digest.
    File I/O runs in a thread, off the event loop. On read the bytes are checked
    against the digest.

    Chunked layout (the default, ``chunked=True``): a payload with content-defined cut
    points (a conversation, a tool result) is stored as chunks and tree nodes, and its
    reference names the tree's root. Consecutive turns of a conversation share their
    chunks, so the store grows with the new messages instead of with the whole
    conversation each turn. Other payloads, and every reference written before, are
    stored and read whole as they always were. With ``codec`` (``SmythPlugin`` sets the
    encryption codec), each chunk is sealed on its own, so the store still holds
    ciphertext only.

    Every client and worker that sees these references must read the same ``root``
    (one machine, or a shared volume); across machines use an object store such as
    temporalio's S3 driver.

    ```python
    storage = ExternalStorage(
        drivers=[ContentAddressedFileDriver("/var/lib/smyth/payloads")],
        payload_size_threshold=2048,
    )
    client = await Client.connect("localhost:7233", plugins=[SmythPlugin(payload_storage=storage)])
    ```

    Added in 0.2.0. Changed in 0.5.0: the chunked layout, ``chunked``, ``codec``.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        name: str = DRIVER_NAME,
        chunked: bool = True,
        codec: PayloadCodec | None = None,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
    ) -> None:
        """Create the driver; nothing is touched on disk until the first store.

        Args:
            root: The store's directory (made absolute now, so a later ``chdir`` does
                not move it).
            name: The driver's name in references. Change it only to register several
                file drivers in one ``ExternalStorage``.
            chunked: Store payloads with cut points as shared chunks (see above);
                ``False`` stores every payload whole (the layout before 0.5.0). Either
                way, both layouts are read.
            codec: The data converter's encryption codec, so chunks are sealed one by
                one (``SmythPlugin`` passes it; see ``with_codec``).
            cache_bytes: Chunk bytes kept in memory to read conversations back.
        """
        self._root = Path(root).expanduser().absolute()
        self._name = name
        self._root_ready = False
        self._chunked = chunked
        self._codec = codec
        self._cache_bytes = cache_bytes
        self._layout = ChunkedLayout(self, codec, cache_bytes=cache_bytes)
        self._namespaces: set[str] = set()

    @property
    def root(self) -> Path:
        """The store's directory.

        Added in 0.2.0.
        """
        return self._root

    def name(self) -> str:
        """The name references in history carry (``smyth.fs`` by default).

        Added in 0.2.0.
        """
        return self._name

    @property
    def codec(self) -> PayloadCodec | None:
        """The codec chunks are sealed with, if any.

        Added in 0.5.0.
        """
        return self._codec

    def with_codec(self, codec: PayloadCodec | None) -> ContentAddressedFileDriver:
        """This driver (same store, name and layout) sealing chunks with ``codec``.

        Added in 0.5.0.
        """
        return ContentAddressedFileDriver(
            self._root,
            name=self._name,
            chunked=self._chunked,
            codec=codec,
            cache_bytes=self._cache_bytes,
        )

    def path_for(self, digest: str) -> Path:
        """Where the payload with this SHA-256 hex digest lives.

        Raises:
            ValueError: ``digest`` is not 64 lowercase hex digits.

        Added in 0.2.0.
        """
        if not _DIGEST.match(digest):
            raise ValueError(f"not a SHA-256 hex digest: {digest!r}")
        return self._root / digest[:2] / digest

    async def store(
        self, context: StorageDriverStoreContext, payloads: Sequence[Payload]
    ) -> list[StorageDriverClaim]:
        """Write the payloads that are not in the store yet; one claim per payload.

        A claim names the payload's file, or, chunked, its tree's root. The target's
        namespace is recorded in the store first (see ``_namespaces``), so garbage
        collection reads its histories too.

        Added in 0.2.0. Changed in 0.8.0: records the namespace.
        """
        namespace = context.target.namespace if context.target is not None else ""
        if namespace and namespace not in self._namespaces:
            await asyncio.to_thread(record_namespace, self._root, namespace)
            self._namespaces.add(namespace)
        digests: list[str] = []
        whole: list[tuple[str, bytes]] = []
        for payload in payloads:
            root = await self._layout.store(context, payload) if self._chunked else None
            if root is None:  # no cut points (or chunks off): the payload as one file
                blob = payload.SerializeToString(deterministic=True)
                root = hashlib.sha256(blob).hexdigest()
                whole.append((root, blob))
            digests.append(root)
        if whole:
            await asyncio.to_thread(self._write_all, whole)
        return [StorageDriverClaim(claim_data={_CLAIM_KEY: digest}) for digest in digests]

    async def retrieve(
        self, context: StorageDriverRetrieveContext, claims: Sequence[StorageDriverClaim]
    ) -> list[Payload]:
        """Read the claimed payloads back, checking each against its digest.

        Raises:
            ConfigurationError: A file is missing: this process does not see the store
                the payload was written to.
            ValueError: A claim without a valid digest, or a file whose bytes do not
                match its digest (corrupted).

        Added in 0.2.0.
        """
        digests = [self._digest(claim) for claim in claims]
        return [await self._layout.read(digest) for digest in digests]

    def _digest(self, claim: StorageDriverClaim) -> str:
        digest = claim.claim_data.get(_CLAIM_KEY, "")
        if not _DIGEST.match(digest):
            raise ValueError(
                f"payload reference for driver {self._name!r} has no valid "
                f"{_CLAIM_KEY!r} digest: {dict(claim.claim_data)!r}"
            )
        return digest

    def _write_all(self, items: list[tuple[str, bytes]]) -> None:
        for digest, blob in items:
            self.write_object(digest, blob)

    def write_object(self, digest: str, blob: bytes) -> None:
        """Store ``blob`` under ``digest`` unless it is there (blocking).

        Added in 0.5.0.
        """
        if not self._root_ready:
            # Owner-only, whatever the umask: the store holds conversations.
            private_dir(self._root)
            self._root_ready = True
        self._write(self._checked(self.path_for(digest)), blob)

    def has_object(self, digest: str) -> bool:
        """Whether ``digest`` is stored; if so its time is refreshed, as storing it would.

        Added in 0.5.0.
        """
        path = self._checked(self.path_for(digest))
        try:
            os.utime(path)
        except FileNotFoundError:
            return False
        return True

    def read_object(self, digest: str) -> bytes:
        """The bytes stored under ``digest``, checked against it (blocking).

        Raises:
            ConfigurationError: The file is missing.
            ValueError: The bytes do not match the digest.

        Added in 0.5.0.
        """
        return self._read(digest)

    def _checked(self, path: Path) -> Path:
        """``path``, after making sure no symlink leads it out of the store."""
        for part in (path.parent, path):
            if part.is_symlink():
                raise ValueError(
                    f"{part} is a symlink: the payload store refuses links, which could "
                    "lead reads and writes outside it"
                )
        return path

    @staticmethod
    def _write(path: Path, blob: bytes) -> None:
        try:
            if path.stat().st_size == len(blob):
                # Already stored. Refresh the time so that garbage collection sees the
                # file as in use. The refresh is the proof it is still there: gc moves
                # a file away before its last look at the time, so a file gone between
                # the stat and here is written again, never assumed stored.
                try:
                    os.utime(path)
                except FileNotFoundError:
                    raise
                except OSError:
                    pass  # not ours to touch (a read-only share): it is there
                return
        except FileNotFoundError:
            pass
        # Missing, or truncated by a crash of a writer that skipped the sync: (re)write.
        path.parent.mkdir(exist_ok=True, mode=0o700)
        # The reference goes into history once this returns: the bytes must be on disk
        # first, or a machine crash could leave history pointing at a hole.
        write_atomically(path, blob)

    def _read(self, digest: str) -> bytes:
        path = self._checked(self.path_for(digest))
        try:
            blob = path.read_bytes()
        except FileNotFoundError:
            raise ConfigurationError(
                f"externally stored payload {path} is missing. The payload store must be "
                "shared by every worker and client of the namespace: run them with the "
                "same SMYTH_PAYLOAD_PATH (one machine or a shared volume), use an object "
                "store across machines (temporalio's S3 driver through "
                "SmythPlugin(payload_storage=...)), and never delete files that runs "
                "still in history refer to"
            ) from None
        actual = hashlib.sha256(blob).hexdigest()
        if actual != digest:
            raise ValueError(
                f"externally stored payload {path} is corrupted: its SHA-256 is {actual}, "
                f"not the {digest} its reference names. Restore the file from a backup "
                "(or from another worker's store) to let the run continue"
            )
        return blob
