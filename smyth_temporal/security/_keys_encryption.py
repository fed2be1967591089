"""Encryption keys: a key ring read from ``SMYTH_ENCRYPTION_KEYS``, a key file or a KMS hook."""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from smyth_temporal._files import read_private_file
from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.settings import ENCRYPTION_KEY_FILE_ENV, ENCRYPTION_KEYS_ENV, EncryptionSettings

__all__ = [
    "ENCRYPTION_KEYS_ENV",
    "ENCRYPTION_KEY_FILE_ENV",
    "EncryptionKey",
    "KeyProvider",
    "KeyRing",
    "new_key",
]

_KEY_ID = re.compile(r"^[A-Za-z0-9_.-]{1,32}$")
_KEY_BYTES = 32


@dataclass(frozen=True)
class EncryptionKey:
    """One AES-256 key and the id payloads name it by.

    Added in 0.4.0.
    """

    id: str
    """Written into each payload's metadata, so the right key decrypts it after rotation."""
    secret: bytes = field(repr=False)
    """32 random bytes; never logged (``repr`` leaves it out)."""

    def __post_init__(self) -> None:
        if not _KEY_ID.match(self.id):
            raise ConfigurationError(
                f"encryption key id {self.id!r} must be 1-32 letters, digits, '_', '.' or '-'"
            )
        if len(self.secret) != _KEY_BYTES:
            raise ConfigurationError(
                f"encryption key {self.id!r} must be 32 bytes (AES-256), not {len(self.secret)}"
            )


class KeyRing:
    """The keys a process can decrypt with; the first one encrypts.

    Rotation: put the new key first and keep the old ones after it. New payloads are
    sealed with the new key; payloads of runs that started before (in history and in
    the payload store) still name the old key and decrypt with it. Drop an old key
    only once no retained history or stored payload uses it.

    Added in 0.4.0.
    """

    def __init__(self, keys: Iterable[EncryptionKey]) -> None:
        """Create the ring.

        Raises:
            ConfigurationError: No key, or two keys with one id.
        """
        self._keys = list(keys)
        if not self._keys:
            raise ConfigurationError("an encryption key ring needs at least one key")
        self._by_id = {key.id: key for key in self._keys}
        if len(self._by_id) != len(self._keys):
            raise ConfigurationError("two encryption keys have the same id")

    @property
    def current(self) -> EncryptionKey:
        """The key new payloads are encrypted with."""
        return self._keys[0]

    @property
    def ids(self) -> list[str]:
        """Every key id, current first."""
        return [key.id for key in self._keys]

    def get(self, key_id: str) -> EncryptionKey | None:
        """The key with this id, or ``None``."""
        return self._by_id.get(key_id)

    @classmethod
    def parse(cls, text: str, *, source: str = ENCRYPTION_KEYS_ENV) -> KeyRing:
        """Read ``id:base64`` entries separated by commas or lines (``#`` starts a comment).

        Raises:
            ConfigurationError: An entry is malformed; the message names ``source`` and
                the key id, never the key.
        """
        keys = []
        for raw in re.split(r"[,\n]", text):
            entry = raw.split("#", 1)[0].strip()
            if not entry:
                continue
            key_id, sep, encoded = entry.partition(":")
            if not sep:
                raise ConfigurationError(f"{source}: expected id:base64-of-32-bytes entries")
            try:
                secret = base64.b64decode(encoded.strip(), validate=True)
            except (binascii.Error, ValueError):
                raise ConfigurationError(
                    f"{source}: key {key_id.strip()!r} is not valid base64"
                ) from None
            keys.append(EncryptionKey(key_id.strip(), secret))
        if not keys:
            raise ConfigurationError(f"{source} holds no key")
        return cls(keys)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> KeyRing:
        """Read a key file, refusing one that others may read (as ssh does).

        Raises:
            ConfigurationError: The file is missing, readable by group or others, or
                malformed.
        """
        file = Path(path)
        return cls.parse(read_private_file(file, "the encryption key file"), source=str(file))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> KeyRing | None:
        """``SMYTH_ENCRYPTION_KEYS``, else ``SMYTH_ENCRYPTION_KEY_FILE``, else ``None``.

        Args:
            environ: Read this mapping instead of the environment and ``.env``.

        Raises:
            ConfigurationError: Both are set, or the one set is malformed.
        """
        if environ is None:
            return cls.from_settings(EncryptionSettings.load())
        return cls.from_settings(EncryptionSettings.from_environ(environ))

    @classmethod
    def from_settings(cls, settings: EncryptionSettings) -> KeyRing | None:
        """The keys ``settings`` name (inline or in a file), or ``None``.

        Raises:
            ConfigurationError: The keys are malformed, or the file is unreadable.

        Added in 0.9.0.
        """
        if settings.encryption_keys is not None:
            return cls.parse(settings.encryption_keys.get_secret_value())
        if settings.encryption_key_file is not None:
            return cls.from_file(settings.encryption_key_file)
        return None


@runtime_checkable
class KeyProvider(Protocol):
    """Where keys come from in production: a KMS or a secrets manager.

    Implement ``key_ring()`` to fetch (or unwrap with a KMS master key) the data keys
    and pass the provider to ``EncryptionCodec``; it is called once, when the codec
    is built.

    Added in 0.4.0.
    """

    def key_ring(self) -> KeyRing:
        """The keys, current first."""
        ...


def new_key(key_id: str) -> str:
    """A fresh random key as one ``id:base64`` entry, for ``SMYTH_ENCRYPTION_KEYS``.

    Added in 0.4.0.
    """
    entry = EncryptionKey(key_id, os.urandom(_KEY_BYTES))
    return f"{entry.id}:{base64.b64encode(entry.secret).decode()}"
