"""The settings of the gateway, the codec server and the dev server."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field, SecretStr
from pydantic_settings import NoDecode

from smyth_temporal.settings._base import comma_separated
from smyth_temporal.settings._connection import Settings
from smyth_temporal.settings._payloads import STATE_DIR

__all__ = [
    "CODEC_TOKEN_ENV",
    "DEFAULT_CODEC_PORT",
    "DEFAULT_DEV_PORT",
    "DEFAULT_GATEWAY_PORT",
    "DEFAULT_UI_ORIGIN",
    "CodecServerSettings",
    "DevSettings",
    "GatewaySettings",
]

DEFAULT_GATEWAY_PORT = 8000
"""The gateway's TCP port when nothing else is said."""

DEFAULT_CODEC_PORT = 8081
"""The codec server's TCP port when nothing else is said."""

DEFAULT_UI_ORIGIN = "http://localhost:8233"
"""The UI of ``smyth dev`` (its gRPC port + 1000)."""

DEFAULT_DEV_PORT = 7233
"""The dev server's gRPC port when nothing else is said (Temporal's own default)."""

CODEC_TOKEN_ENV = "SMYTH_CODEC_TOKEN"
"""The bearer token (or URL segment) that allows decoding.

Added in 0.4.0.
"""

_LOOPBACK = "127.0.0.1"

Port = Annotated[int, Field(gt=0, lt=65536)]


class GatewaySettings(Settings):
    """What the HTTP gateway (``smyth serve``) reads.

    Added in 0.9.0.
    """

    process_kind = "gateway"

    host: str = Field(default=_LOOPBACK, validation_alias="SMYTH_GATEWAY_HOST")
    """The address the gateway binds (`0.0.0.0`: every interface; `--host`)."""
    port: Port = Field(default=DEFAULT_GATEWAY_PORT, validation_alias="SMYTH_GATEWAY_PORT")
    """The gateway's TCP port (`--port`)."""


class CodecServerSettings(Settings):
    """What the codec server (``smyth codec-server``) reads.

    Added in 0.9.0.
    """

    process_kind = "codec server"

    host: str = Field(default=_LOOPBACK, validation_alias="SMYTH_CODEC_HOST")
    """The address the codec server binds (`--host`)."""
    port: Port = Field(default=DEFAULT_CODEC_PORT, validation_alias="SMYTH_CODEC_PORT")
    """The codec server's TCP port (`--port`)."""
    ui_origins: Annotated[tuple[str, ...], NoDecode, comma_separated] = Field(
        default=(DEFAULT_UI_ORIGIN,), min_length=1, validation_alias="SMYTH_CODEC_UI_ORIGINS"
    )
    """Comma-separated web origins allowed to call it (`--ui-origin`)."""
    codec_token: SecretStr | None = Field(default=None, validation_alias=CODEC_TOKEN_ENV)
    """The bearer token (or URL segment) that allows decoding; required, 16+ characters."""


class DevSettings(Settings):
    """What the embedded Temporal dev server (``smyth dev``) reads.

    Added in 0.9.0.
    """

    process_kind = "dev"

    dev_port: Port | None = Field(default=None, validation_alias="SMYTH_DEV_PORT")
    """The dev server's gRPC port (default: the port of the address when it is local,
    else 7233; `--port`)."""
    dev_ui_port: Port | None = Field(default=None, validation_alias="SMYTH_DEV_UI_PORT")
    """Its Web UI's port (default: the gRPC port + 1000; `--ui-port`)."""
    dev_db_file: Path = Field(
        default=Path(STATE_DIR) / "temporal.db", validation_alias="SMYTH_DEV_DB_FILE"
    )
    """The dev server's SQLite file; its log goes beside it (`--db-file`)."""
