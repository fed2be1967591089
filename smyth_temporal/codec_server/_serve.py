"""``serve_codec``: the codec server on uvicorn, configured from the environment."""

from __future__ import annotations

import os
from collections.abc import Callable

import structlog
import uvicorn

from smyth_temporal.codec_server._app import create_codec_app
from smyth_temporal.codec_server._decode import PayloadTranslator
from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.gateway._serve import AnnouncingServer
from smyth_temporal.security._encryption import EncryptionCodec
from smyth_temporal.storage import default_payload_storage

__all__ = ["CODEC_TOKEN_ENV", "serve_codec"]

log = structlog.get_logger("smyth_temporal.codec_server")

CODEC_TOKEN_ENV = "SMYTH_CODEC_TOKEN"
"""The bearer token callers of the codec server present.

Added in 0.4.0.
"""


def _translator() -> PayloadTranslator:
    codec = EncryptionCodec.from_env()
    if codec is None:
        raise ConfigurationError(
            "the codec server decrypts with SMYTH_ENCRYPTION_KEYS or SMYTH_ENCRYPTION_KEY_FILE, "
            "and neither is set"
        )
    return PayloadTranslator(codec, default_payload_storage())


async def serve_codec(
    *,
    host: str = "127.0.0.1",
    port: int = 8081,
    ui_origins: list[str],
    token: str | None = None,
    ready: Callable[[str], None] | None = None,
) -> None:
    """Serve until stopped: keys and the store from the environment, like a worker.

    Args:
        host: The address to bind.
        port: The TCP port.
        ui_origins: The web origins allowed to call it (the Temporal UI's).
        token: The bearer token (default: ``SMYTH_CODEC_TOKEN``).
        ready: Called with the URL once it listens.

    Raises:
        ConfigurationError: No token, no key, or the port cannot be bound.

    Added in 0.4.0.
    """
    token = token if token is not None else os.environ.get(CODEC_TOKEN_ENV, "")
    if not token:
        raise ConfigurationError(
            f"{CODEC_TOKEN_ENV} is not set: the codec server decodes nothing without a token"
        )
    app = create_codec_app(_translator(), token=token, ui_origins=ui_origins)
    # No access log: the UI's requests carry the token in their path.
    config = uvicorn.Config(app, host=host, port=port, log_config=None, access_log=False)
    url = f"http://{host}:{port}"

    def announce() -> None:
        log.info("codec_server.ready", url=url, ui_origins=ui_origins)
        if ready is not None:
            ready(url)

    try:
        await AnnouncingServer(config, announce).serve()
    except SystemExit as exc:  # how uvicorn gives up when it cannot bind the port
        raise ConfigurationError(f"cannot serve on {host}:{port} (see the log above)") from exc
