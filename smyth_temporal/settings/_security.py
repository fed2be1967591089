"""Security settings: payload encryption keys, worker secrets, API keys."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import NoDecode

from smyth_temporal.settings._base import SmythSettings, Switch, comma_separated
from smyth_temporal.settings._payloads import STATE_DIR

__all__ = [
    "ACCEPT_PLAINTEXT_ENV",
    "ALLOWED_SECRETS_ENV",
    "API_KEY_ENV",
    "ENCRYPTION_COMPRESS_ENV",
    "ENCRYPTION_KEYS_ENV",
    "ENCRYPTION_KEY_FILE_ENV",
    "KEYS_FILE_ENV",
    "SECRETS_FILE_ENV",
    "AccessSettings",
    "EncryptionSettings",
    "SecretsSettings",
]

ENCRYPTION_KEYS_ENV = "SMYTH_ENCRYPTION_KEYS"
"""Comma-separated ``id:base64`` keys; the first one encrypts.

Added in 0.4.0.
"""

ENCRYPTION_KEY_FILE_ENV = "SMYTH_ENCRYPTION_KEY_FILE"
"""A file of the same entries, one per line, refused unless owner-only.

Added in 0.4.0.
"""

ENCRYPTION_COMPRESS_ENV = "SMYTH_ENCRYPTION_COMPRESS"
"""``on``: compress payloads with zlib before sealing them, when smaller.

Added in 0.4.0.
"""

ACCEPT_PLAINTEXT_ENV = "SMYTH_ACCEPT_PLAINTEXT"
"""``on``: read unsealed payloads as they are (only while migrating to encryption).

Added in 0.4.0.
"""

SECRETS_FILE_ENV = "SMYTH_SECRETS_FILE"
"""A file of ``NAME=value`` lines (owner-only) that a worker reads secrets from first.

Added in 0.4.0.
"""

ALLOWED_SECRETS_ENV = "SMYTH_ALLOWED_SECRETS"
"""Comma-separated names a worker may hand out; unset: the names its tools, MCP servers
and model providers declare.

Added in 0.4.0.
"""

API_KEY_ENV = "SMYTH_API_KEY"
"""An API key (``smyth keys create``) the CLI and ``AgentClient.connect`` act with.

Added in 0.4.0.
"""

KEYS_FILE_ENV = "SMYTH_KEYS_FILE"
"""The API key file of the gateway, the MCP server and ``smyth keys``.

Added in 0.3.0.
"""


class EncryptionSettings(SmythSettings):
    """Payload encryption: clients, workers and the codec server must share the keys.

    Added in 0.9.0.
    """

    encryption_keys: SecretStr | None = Field(default=None, validation_alias=ENCRYPTION_KEYS_ENV)
    """Comma-separated `id:base64-of-32-bytes`; the first one encrypts (default: no
    encryption)."""
    encryption_key_file: Path | None = Field(default=None, validation_alias=ENCRYPTION_KEY_FILE_ENV)
    """The same entries one per line; refused unless owner-only."""
    encryption_compress: Switch = Field(default=False, validation_alias=ENCRYPTION_COMPRESS_ENV)
    """Zlib before sealing, when smaller."""
    accept_plaintext: Switch = Field(default=False, validation_alias=ACCEPT_PLAINTEXT_ENV)
    """Read unsealed payloads (migrations only)."""

    @model_validator(mode="after")
    def _one_key_source(self) -> EncryptionSettings:
        if self.encryption_keys is not None and self.encryption_key_file is not None:
            raise ValueError(f"set {ENCRYPTION_KEYS_ENV} or {ENCRYPTION_KEY_FILE_ENV}, not both")
        return self


class SecretsSettings(SmythSettings):
    """Where a worker's ``secret("NAME")`` references resolve, and which it may hand out.

    Added in 0.9.0.
    """

    secrets_file: Path | None = Field(default=None, validation_alias=SECRETS_FILE_ENV)
    """`NAME=value` lines (owner-only) that `secret("NAME")` resolves from first, before
    the environment (`--secrets-file`)."""
    allowed_secrets: Annotated[tuple[str, ...] | None, NoDecode, comma_separated] = Field(
        default=None, validation_alias=ALLOWED_SECRETS_ENV
    )
    """Comma-separated secrets this worker may hand out (default: the names its tools
    and MCP servers declare; `--allow-secret`)."""


class AccessSettings(SmythSettings):
    """Who a caller is (its API key) and where the keys are kept.

    Added in 0.9.0.
    """

    api_key: SecretStr | None = Field(default=None, validation_alias=API_KEY_ENV)
    """The caller's API key: its tenant and role (default: a trusted local operator)."""
    keys_file: Path = Field(default=Path(STATE_DIR) / "keys.json", validation_alias=KEYS_FILE_ENV)
    """The API keys (hashed, owner-only) (`--keys-file`)."""
