"""The security manager's worker-side parts: payload encryption keys and the codec.

- ``EncryptionCodec``: AES-256-GCM over every payload (a temporalio ``PayloadCodec``),
  with key ids for rotation and authenticated metadata; unsealed payloads coming in are
  refused unless ``SMYTH_ACCEPT_PLAINTEXT`` (``ACCEPT_PLAINTEXT_ENV``) is on.
- ``KeyRing`` / ``EncryptionKey``: the keys, from ``SMYTH_ENCRYPTION_KEYS``
  (``id:base64-of-32-bytes``, comma-separated, current first) or
  ``SMYTH_ENCRYPTION_KEY_FILE``; ``KeyProvider`` is the hook for a KMS.
- ``new_key()``: a fresh key entry (``smyth encryption-key``).
- ``authenticate``, ``AuthLimiter``, ``KeyRefused``: the key check and its brake on
  failed attempts, shared by the gateway and the MCP server.
- ``refusal(payload)``: the error a payload the codec refused reads as (``None`` if it
  was not refused), for code that reads decoded payloads itself.
- ``KeyStore``, ``Principal``: API keys (hashed, each bound to a tenant and a role) and
  the caller they stand for; every interface derives tenant and role from them.
  ``KEYS_FILE_ENV`` / ``default_keys_path()``: where the key file is; ``ACTIONS``: what
  each permission lets a caller do; ``DEV_PRINCIPAL``: the caller of a dev setup
  without keys.
- ``SealedPayloadConverter``: the data converter that refuses unsealed input.
- ``Secrets``: ``secret("NAME")`` references resolved on the worker, from its
  environment (``EnvSecrets``) or a secrets file (``FileSecrets``), any
  ``SecretBackend`` (Vault, a cloud secrets manager), with an allow-list.

Nothing here is imported by workflow code. Names load lazily: a workflow module that
names ``SmythPlugin`` imports the plugin inside the sandbox, which cannot re-import
``cryptography``'s compiled extension, so it loads only when a codec is built.

Added in 0.4.0.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from smyth_temporal.security._encryption import (
        ENCODING,
        ENCRYPTION_COMPRESS_ENV,
        EncryptionCodec,
    )
    from smyth_temporal.security._identity import ACTIONS, DEV_PRINCIPAL, Permission, Principal
    from smyth_temporal.security._keys import (
        KEYS_FILE_ENV,
        ROLES,
        ApiKey,
        KeyStore,
        Role,
        default_keys_path,
    )
    from smyth_temporal.security._keys_encryption import (
        ENCRYPTION_KEY_FILE_ENV,
        ENCRYPTION_KEYS_ENV,
        EncryptionKey,
        KeyProvider,
        KeyRing,
        new_key,
    )
    from smyth_temporal.security._plaintext import (
        ACCEPT_PLAINTEXT_ENV,
        SealedPayloadConverter,
        refusal,
    )
    from smyth_temporal.security._secrets import (
        ALLOWED_SECRETS_ENV,
        SECRETS_FILE_ENV,
        EnvSecrets,
        FileSecrets,
        SecretBackend,
        Secrets,
    )
    from smyth_temporal.security._throttle import AuthLimiter, KeyRefused, authenticate

_HOMES = {
    "ACCEPT_PLAINTEXT_ENV": "_plaintext",
    "refusal": "_plaintext",
    "SealedPayloadConverter": "_plaintext",
    "AuthLimiter": "_throttle",
    "KeyRefused": "_throttle",
    "authenticate": "_throttle",
    "ENCODING": "_encryption",
    "ENCRYPTION_COMPRESS_ENV": "_encryption",
    "EncryptionCodec": "_encryption",
    "ENCRYPTION_KEY_FILE_ENV": "_keys_encryption",
    "ENCRYPTION_KEYS_ENV": "_keys_encryption",
    "EncryptionKey": "_keys_encryption",
    "KeyProvider": "_keys_encryption",
    "KeyRing": "_keys_encryption",
    "new_key": "_keys_encryption",
    "ALLOWED_SECRETS_ENV": "_secrets",
    "SECRETS_FILE_ENV": "_secrets",
    "EnvSecrets": "_secrets",
    "FileSecrets": "_secrets",
    "SecretBackend": "_secrets",
    "Secrets": "_secrets",
    "ApiKey": "_keys",
    "KeyStore": "_keys",
    "Role": "_keys",
    "ROLES": "_keys",
    "KEYS_FILE_ENV": "_keys",
    "default_keys_path": "_keys",
    "Principal": "_identity",
    "Permission": "_identity",
    "ACTIONS": "_identity",
    "DEV_PRINCIPAL": "_identity",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)


__all__ = [
    "ACCEPT_PLAINTEXT_ENV",
    "ACTIONS",
    "ALLOWED_SECRETS_ENV",
    "DEV_PRINCIPAL",
    "ENCODING",
    "ENCRYPTION_COMPRESS_ENV",
    "ENCRYPTION_KEYS_ENV",
    "ENCRYPTION_KEY_FILE_ENV",
    "KEYS_FILE_ENV",
    "ROLES",
    "SECRETS_FILE_ENV",
    "ApiKey",
    "AuthLimiter",
    "EncryptionCodec",
    "EncryptionKey",
    "EnvSecrets",
    "FileSecrets",
    "KeyProvider",
    "KeyRefused",
    "KeyRing",
    "KeyStore",
    "Permission",
    "Principal",
    "Role",
    "SealedPayloadConverter",
    "SecretBackend",
    "Secrets",
    "authenticate",
    "default_keys_path",
    "new_key",
    "refusal",
]
