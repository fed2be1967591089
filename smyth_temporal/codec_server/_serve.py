"""``serve_codec``: the codec server on uvicorn, configured from the environment."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import structlog
import uvicorn

from smyth_temporal.codec_server._app import create_codec_app
from smyth_temporal.codec_server._decode import PayloadTranslator
from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.gateway import AnnouncingServer
from smyth_temporal.security import EncryptionCodec
from smyth_temporal.settings import CODEC_TOKEN_ENV, CodecServerSettings
from smyth_temporal.storage import default_payload_storage

__all__ = ["CODEC_TOKEN_ENV", "serve_codec"]

log = structlog.get_logger("smyth_temporal.codec_server")


def _translator(settings: CodecServerSettings) -> PayloadTranslator:
    codec = EncryptionCodec.from_settings(settings)
    if codec is None:
        raise ConfigurationError(
            "the codec server decrypts with SMYTH_ENCRYPTION_KEYS or SMYTH_ENCRYPTION_KEY_FILE, "
            "and neither is set"
        )
    return PayloadTranslator(codec, default_payload_storage(settings))


async def serve_codec(
    settings: CodecServerSettings | None = None,
    *,
    host: str | None = None,
    port: int | None = None,
    ui_origins: Sequence[str] | None = None,
    token: str | None = None,
    ready: Callable[[str], None] | None = None,
) -> None:
    """Serve until stopped: keys, the store, the token and the address from ``settings``.

    Args:
        settings: The codec server's settings (default: ``CodecServerSettings.load()``,
            from the environment, like a worker's).
        host: The address to bind, over the settings'.
        port: The TCP port, over the settings'.
        ui_origins: The web origins allowed to call it (the Temporal UI's), over the
            settings'.
        token: The bearer token, over the settings' (``SMYTH_CODEC_TOKEN``).
        ready: Called with the URL once it listens.

    Raises:
        ConfigurationError: No token, no key, a bad setting, or the port cannot be bound.

    Added in 0.4.0. Changed in 0.9.0: ``settings``; the keywords are optional.
    """
    given = {"host": host, "port": port, "ui_origins": ui_origins, "codec_token": token}
    if settings is None:
        settings = CodecServerSettings.load(**given)
    else:
        settings = settings.model_copy(update={k: v for k, v in given.items() if v is not None})
    secret = settings.codec_token.get_secret_value() if settings.codec_token else ""
    if not secret:
        raise ConfigurationError(
            f"{CODEC_TOKEN_ENV} is not set: the codec server decodes nothing without a token"
        )
    host, port, ui_origins = settings.host, settings.port, list(settings.ui_origins)
    app = create_codec_app(_translator(settings), token=secret, ui_origins=ui_origins)
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
