"""The codec server: the Temporal UI and CLI read encrypted agents through it.

``smyth codec-server`` runs it. It speaks Temporal's remote codec protocol
(``POST /encode``, ``POST /decode``): it decrypts payloads with the keys of
``SMYTH_ENCRYPTION_KEYS`` and resolves payload-store references, so the UI shows the
real conversation again, but only to callers with the token (``SMYTH_CODEC_TOKEN``)
and only to pages from the configured UI origins.

- ``_app``: ``create_codec_app`` (routes, token, CORS, body limit);
- ``_decode``: ``PayloadTranslator`` (store references, then the codec).

It needs the ``server`` extra (Starlette and uvicorn): importing it without them fails
with the command that installs them.

Added in 0.4.0.
"""

try:
    import starlette  # noqa: F401
    import uvicorn  # noqa: F401
except ImportError as exc:
    raise ImportError(
        "smyth_temporal.codec_server needs the server extra: pip install 'smyth-temporal[server]'"
    ) from exc

from smyth_temporal.codec_server._app import MAX_BODY_BYTES, create_codec_app
from smyth_temporal.codec_server._decode import PayloadTranslator
from smyth_temporal.codec_server._serve import CODEC_TOKEN_ENV, serve_codec

__all__ = [
    "CODEC_TOKEN_ENV",
    "MAX_BODY_BYTES",
    "PayloadTranslator",
    "create_codec_app",
    "serve_codec",
]
