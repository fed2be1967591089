"""API keys: random secrets shown once, stored hashed, each bound to a tenant and a role.

The store is one JSON file (``SMYTH_KEYS_FILE``, default ``.smyth/keys.json``) written
with owner-only permissions. It holds no secret: a key is 32 random bytes, so its
SHA-256 is as safe to keep as the key is hard to guess, and a lookup by that hash is
all authentication needs. Every gateway replica reads the same file and reloads it
when it changes, so ``smyth keys revoke`` takes effect without a restart.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from smyth_temporal._files import private_dir
from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.settings import KEYS_FILE_ENV, AccessSettings

__all__ = [
    "KEYS_FILE_ENV",
    "KEY_PREFIX",
    "ROLES",
    "ApiKey",
    "KeyStore",
    "Role",
    "default_keys_path",
]

KEY_PREFIX = "smyth_"
"""Every key starts with this, so a leaked one is recognisable (secret scanners)."""

Role = Literal["viewer", "operator", "approver", "admin"]
"""What a key may do: ``viewer`` reads; ``operator`` also starts runs, sends messages
and interrupts; ``approver`` also decides approvals; ``admin`` does everything."""

ROLES: tuple[Role, ...] = ("viewer", "operator", "approver", "admin")

_NAME_PATTERN = r"^[A-Za-z0-9_.@-]{1,64}$"
# A tenant becomes part of session workflow ids (``<agent>-session-<tenant>-<id>``):
# without dashes in tenants, no two tenants' session ids can ever collide.
_TENANT_PATTERN = r"^[A-Za-z0-9_.]{1,64}$"
_SECRET_BYTES = 32
_ID_BYTES = 6


def default_keys_path() -> Path:
    """``SMYTH_KEYS_FILE``, or ``.smyth/keys.json`` under the current directory."""
    return AccessSettings.load().keys_file


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class ApiKey(BaseModel):
    """One API key as stored: who it is for and what it may do, never the secret.

    Added in 0.3.0.
    """

    id: str
    """A public identifier (``key_...``), for listing and revoking."""
    name: str = Field(pattern=_NAME_PATTERN)
    """Who holds it; recorded as the approver (``by``) of its decisions."""
    tenant: str = Field(pattern=_TENANT_PATTERN)
    """The only tenant whose runs, approvals and memories it reaches."""
    role: Role
    """What it may do."""
    sha256: str
    """SHA-256 of the key."""
    created_at: datetime
    """When it was created."""
    revoked_at: datetime | None = None
    """When it was revoked (kept for the audit trail); a revoked key is refused."""

    @property
    def active(self) -> bool:
        """Whether the key is accepted."""
        return self.revoked_at is None


class _KeyFile(BaseModel):
    keys: list[ApiKey] = Field(default_factory=list)


class KeyStore:
    """The API keys of a gateway, in one JSON file.

    Args:
        path: The file (default: ``default_keys_path()``). It need not exist yet.

    Added in 0.3.0.
    """

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path is not None else default_keys_path()
        self._lock = threading.Lock()
        self._seen: tuple[int, int, int] | None = None
        self._by_digest: dict[str, ApiKey] = {}

    def create(self, *, tenant: str, role: str, name: str) -> tuple[ApiKey, str]:
        """Make a key; returns its record and the key itself (shown once, never stored).

        Args:
            tenant: The only tenant it reaches (letters, digits, ``_``, ``.``).
            role: ``viewer``, ``operator``, ``approver`` or ``admin`` (see ``Role``).
            name: Who holds it; recorded as the approver of its decisions.

        Raises:
            ConfigurationError: The name, tenant or role is invalid, or an active key
                has that name already.
        """
        keys = self._load().keys
        if any(k.active and k.name == name for k in keys):
            raise ConfigurationError(f"an active key named {name!r} exists already")
        secret = KEY_PREFIX + secrets.token_urlsafe(_SECRET_BYTES)
        try:
            record = ApiKey(
                id="key_" + secrets.token_hex(_ID_BYTES),
                name=name,
                tenant=tenant,
                role=role,  # validated here, as the name and tenant are
                sha256=_digest(secret),
                created_at=datetime.now(UTC),
            )
        except ValidationError as exc:
            raise ConfigurationError(_invalid(exc)) from None
        self._save([*keys, record])
        return record, secret

    def list_keys(self) -> list[ApiKey]:
        """Every key, active and revoked, oldest first."""
        return sorted(self._load().keys, key=lambda k: k.created_at)

    def revoke(self, name_or_id: str) -> ApiKey:
        """Revoke the active key with that name, or the key with that id.

        Raises:
            ConfigurationError: No such key.
        """
        keys = self._load().keys
        for index, key in enumerate(keys):
            if key.id == name_or_id or (key.active and key.name == name_or_id):
                if key.active:
                    key = key.model_copy(update={"revoked_at": datetime.now(UTC)})
                    keys[index] = key
                    self._save(keys)
                return key
        raise ConfigurationError(f"no active key named {name_or_id!r} and no key with that id")

    def has_active_keys(self) -> bool:
        """Whether any key would be accepted."""
        return any(k.active for k in self._load().keys)

    def authenticate(self, secret: str) -> ApiKey | None:
        """The active key ``secret`` is, or ``None``.

        Re-reads the file when it changed since the last call (one ``stat`` per call),
        so keys created or revoked by ``smyth keys`` count at once.
        """
        self._refresh()
        digest = _digest(secret)
        found = self._by_digest.get(digest)
        # The lookup is by digest already; compare again in constant time so the check
        # reads as what it is.
        if found is None or not hmac.compare_digest(found.sha256, digest) or not found.active:
            return None
        return found

    def _refresh(self) -> None:
        try:
            info = self.path.stat()
            seen: tuple[int, int, int] | None = (info.st_mtime_ns, info.st_size, info.st_ino)
        except FileNotFoundError:
            seen = None
        with self._lock:
            if seen == self._seen:
                return  # unchanged (a new version is a new inode: it is replaced whole)
            keys = self._load().keys if seen is not None else []
            self._by_digest = {k.sha256: k for k in keys}
            self._seen = seen

    def _load(self) -> _KeyFile:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return _KeyFile()
        try:
            return _KeyFile.model_validate(json.loads(text))
        except (ValueError, ValidationError) as exc:
            raise ConfigurationError(f"the key file {self.path} is not valid: {exc}") from None

    def _save(self, keys: list[ApiKey]) -> None:
        """Write the file atomically, owner-only from the first byte."""
        private_dir(self.path.parent)
        temporary = self.path.with_name(f".{self.path.name}.{secrets.token_hex(4)}.tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as file:
                file.write(_KeyFile(keys=keys).model_dump_json(indent=2) + "\n")
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, self.path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)


def _invalid(exc: ValidationError) -> str:
    error = exc.errors()[0]
    field = ".".join(str(part) for part in error["loc"])
    value = error.get("input")
    if field == "tenant":
        return f"invalid tenant {value!r}: use 1-64 letters, digits, '_' or '.'"
    if field == "name":
        return f"invalid key name {value!r}: use 1-64 letters, digits, '_', '.', '@' or '-'"
    if field == "role":
        return f"invalid role {value!r}: choose from {', '.join(ROLES)}"
    return f"invalid {field}: {error['msg']}"
