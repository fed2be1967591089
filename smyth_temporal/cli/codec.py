"""``smyth codec-server`` and ``smyth encryption-key``: reading encrypted agents.

The codec server decrypts payloads (and resolves payload-store references) for the
Temporal UI and the ``temporal`` CLI; ``encryption-key`` prints a fresh key entry for
``SMYTH_ENCRYPTION_KEYS``.
"""

from __future__ import annotations

from typing import Annotated

import typer

from smyth_temporal.cli._common import CommonOptions, command, port, run, status
from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.settings import DEFAULT_CODEC_PORT, DEFAULT_UI_ORIGIN, CodecServerSettings

__all__ = ["DEFAULT_CODEC_PORT", "DEFAULT_UI_ORIGIN", "app"]

app = typer.Typer()


@command(
    app,
    "codec-server",
    log_level="info",
    help="Decrypt payloads for the Temporal UI and the temporal CLI (Temporal's codec-server "
    "protocol, POST /encode and /decode), resolving payload-store references. Keys come from "
    "SMYTH_ENCRYPTION_KEYS, the token callers present from SMYTH_CODEC_TOKEN. CLI: temporal "
    "workflow show -w ID --codec-endpoint http://127.0.0.1:8081 "
    '--codec-auth "Bearer $SMYTH_CODEC_TOKEN". '
    "UI: set the codec endpoint to http://localhost:8081/$SMYTH_CODEC_TOKEN (the UI cannot send "
    "a header, so the token is the path's last segment before /decode).",
)
def codec_server(
    options: CommonOptions,
    port_: Annotated[
        int | None,
        typer.Option(
            "--port",
            parser=port,
            metavar="PORT",
            help=f"the TCP port (default: SMYTH_CODEC_PORT or {DEFAULT_CODEC_PORT})",
        ),
    ] = None,
    host: Annotated[
        str | None,
        typer.Option(
            "--host",
            metavar="HOST",
            help="the address to bind (default: SMYTH_CODEC_HOST or 127.0.0.1)",
        ),
    ] = None,
    ui_origin: Annotated[
        list[str] | None,
        typer.Option(
            "--ui-origin",
            metavar="ORIGIN",
            help="a web origin allowed to call it, repeatable (default: "
            f"SMYTH_CODEC_UI_ORIGINS, comma-separated, or {DEFAULT_UI_ORIGIN})",
        ),
    ] = None,
) -> None:
    """Serve the codec server."""
    # Imported here: the server needs the server extra, and `smyth` must work without it.
    try:
        from smyth_temporal.codec_server import serve_codec
    except ImportError as exc:
        raise ConfigurationError(str(exc)) from None
    settings = options.load(
        CodecServerSettings, host=host, port=port_, ui_origins=tuple(ui_origin or ()) or None
    )
    run(serve_codec(settings, ready=_ready))


def _ready(url: str) -> None:
    status(f"codec server on {url}")


@app.command(
    "encryption-key",
    help="Print a new random AES-256 key as ID:BASE64, for SMYTH_ENCRYPTION_KEYS (put it first "
    "to rotate; keep the old keys after it).",
)
def encryption_key(
    key_id: Annotated[str, typer.Argument(metavar="ID", help="the key's id, e.g. 2026-11")],
) -> None:
    """Print a new key."""
    from smyth_temporal.security import new_key

    print(new_key(key_id))
