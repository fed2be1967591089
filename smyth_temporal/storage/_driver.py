"""``ContentAddressedFileDriver``: Temporal payloads as files named by their hash."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path

from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    StorageDriver,
    StorageDriverClaim,
    StorageDriverRetrieveContext,
    StorageDriverStoreContext,
)

from smyth_temporal._files import private_dir
from smyth_temporal.exceptions import ConfigurationError

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

    Added in 0.2.0.
    """

    def __init__(self, root: str | os.PathLike[str], *, name: str = DRIVER_NAME) -> None:
        """Create the driver; nothing is touched on disk until the first store.

        Args:
            root: The store's directory (made absolute now, so a later ``chdir`` does
                not move it).
            name: The driver's name in references. Change it only to register several
                file drivers in one ``ExternalStorage``.
        """
        self._root = Path(root).expanduser().absolute()
        self._name = name
        self._root_ready = False

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

        Added in 0.2.0.
        """
        blobs = [payload.SerializeToString(deterministic=True) for payload in payloads]
        digests = [hashlib.sha256(blob).hexdigest() for blob in blobs]
        await asyncio.to_thread(self._write_all, list(zip(digests, blobs, strict=True)))
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
        blobs = await asyncio.to_thread(self._read_all, digests)
        payloads = []
        for blob in blobs:
            payload = Payload()
            payload.ParseFromString(blob)
            payloads.append(payload)
        return payloads

    def _digest(self, claim: StorageDriverClaim) -> str:
        digest = claim.claim_data.get(_CLAIM_KEY, "")
        if not _DIGEST.match(digest):
            raise ValueError(
                f"payload reference for driver {self._name!r} has no valid "
                f"{_CLAIM_KEY!r} digest: {dict(claim.claim_data)!r}"
            )
        return digest

    def _write_all(self, items: list[tuple[str, bytes]]) -> None:
        if not self._root_ready:
            # Owner-only, whatever the umask: the store holds conversations.
            private_dir(self._root)
            self._root_ready = True
        for digest, blob in items:
            self._write(self._checked(self.path_for(digest)), blob)

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
                # Already stored. Refresh the time so that age-based cleanup
                # (see the README) sees the file as in use.
                with contextlib.suppress(OSError):
                    os.utime(path)
                return
        except FileNotFoundError:
            pass
        # Missing, or truncated by a crash of a writer that skipped the sync: (re)write.
        path.parent.mkdir(exist_ok=True, mode=0o700)
        # mkstemp creates the file owner-only (0600).
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:16]}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(blob)
                file.flush()
                # The reference goes into history once this returns: the bytes must be
                # on disk first, or a machine crash could leave history pointing at a
                # hole.
                os.fsync(file.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def _read_all(self, digests: list[str]) -> list[bytes]:
        return [self._read(digest) for digest in digests]

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
