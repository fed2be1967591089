"""``create_codec_app``: Temporal's remote codec protocol over HTTP, behind a bearer token.

A refused token, and what the ``temporal`` CLI makes of it: Temporal's Go SDK (the CLI
and tctl are built on it) turns *any* answer but 200 into a plain error, which its gRPC
retry treats as transient (``Unknown``) and retries until the command's deadline: the
CLI then sat for 10 s and printed "context deadline exceeded". So a caller that is not
a browser (no ``Origin``) asking to decode gets 200, with every payload replaced by
one that says why nothing was decoded, which the CLI shows at once. Browsers (the
Temporal UI) get the 401 itself. Encoding is always refused with 401: a stand-in
payload there would be sent on as the input.
"""

from __future__ import annotations

import hmac
import json
from http import HTTPStatus

import structlog
from google.protobuf.json_format import MessageToDict, ParseDict, ParseError
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from temporalio.api.common.v1 import Payload, Payloads

from smyth_temporal.codec_server._decode import PayloadTranslator
from smyth_temporal.exceptions import ConfigurationError, PayloadDecryptionError
from smyth_temporal.gateway import BodyLimit

__all__ = ["MAX_BODY_BYTES", "REFUSED_TEXT", "create_codec_app"]

log = structlog.get_logger("smyth_temporal.codec_server")

MAX_BODY_BYTES = 8 * 1024 * 1024
"""The largest request accepted: a history page's payloads, with room to spare."""


def _error(status: HTTPStatus, detail: str) -> JSONResponse:
    return JSONResponse({"error": detail}, status_code=status)


_UNAUTHORIZED = "a bearer token is required (SMYTH_CODEC_TOKEN)"
REFUSED_TEXT = (
    "[smyth codec server: 401 Unauthorized, nothing decoded: "
    "--codec-auth must be 'Bearer <SMYTH_CODEC_TOKEN>']"
)
"""What a refused decode shows in place of each payload (see the module docstring)."""


def _shown_refusal(body: Payloads) -> JSONResponse:
    """200 with each payload replaced by ``REFUSED_TEXT``: what the CLI can show."""
    text = json.dumps(REFUSED_TEXT).encode()
    stand_ins = [Payload(metadata={"encoding": b"json/plain"}, data=text) for _ in body.payloads]
    return JSONResponse(
        MessageToDict(Payloads(payloads=stand_ins)),
        headers={"X-Smyth-Codec-Refused": str(int(HTTPStatus.UNAUTHORIZED))},
    )


def create_codec_app(
    translator: PayloadTranslator, *, token: str, ui_origins: list[str]
) -> Starlette:
    """The codec server's ASGI app.

    ``POST .../encode`` and ``POST .../decode`` take and return ``{"payloads": [...]}``
    (``temporal.api.common.v1.Payloads`` in protobuf's JSON form); as the protocol
    says, only the path's last part is looked at, so the server can sit under any
    prefix. Every call must present ``token``: as ``Authorization: Bearer <token>``
    (the ``temporal`` CLI's ``--codec-auth``), or as the path segment before
    ``encode``/``decode`` (``http://host:port/<token>/decode``) for the Temporal UI,
    which cannot send a fixed header. Without it nothing is decoded: 401, or for a
    decode by a caller that is not a browser, 200 with payloads saying so (see the
    module docstring).
    Cross-origin calls are allowed from ``ui_origins`` only.

    Args:
        translator: What decodes and encodes.
        token: The secret callers present (at least 16 characters).
        ui_origins: Web origins (``http://localhost:8233``) whose pages may call it.

    Raises:
        ConfigurationError: The token is too short to be a secret.

    Added in 0.4.0.
    """
    if len(token) < 16:
        raise ConfigurationError(
            "SMYTH_CODEC_TOKEN must be at least 16 characters: "
            "python -c 'import secrets; print(secrets.token_urlsafe(32))'"
        )
    expected = token.encode()

    def authorized(request: Request, prefix: str) -> bool:
        header = request.headers.get("authorization", "")
        scheme, _, presented = header.partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(presented.strip().encode(), expected):
            return True
        segment = prefix.rstrip("/").rpartition("/")[2]
        return bool(segment) and hmac.compare_digest(segment.encode(), expected)

    async def translate(request: Request) -> Response:
        prefix, _, operation = request.url.path.rpartition("/")
        # The body is read whatever the answer: one left unread on a kept-alive
        # connection held up the client's next request on it.
        raw = await request.body()
        try:
            body: Payloads | None = ParseDict(json.loads(raw), Payloads())
            problem = ""
        except (ValueError, ParseError) as exc:
            body, problem = None, f'expected {{"payloads": [...]}} as protobuf JSON: {exc}'
        if not authorized(request, prefix):
            browser = "origin" in request.headers
            log.warning(
                "codec.unauthorized",
                client=request.client.host if request.client else None,
                browser=browser,
            )
            if operation == "decode" and not browser and body is not None:
                return _shown_refusal(body)
            return _error(HTTPStatus.UNAUTHORIZED, _UNAUTHORIZED)
        if body is None:
            return _error(HTTPStatus.BAD_REQUEST, problem)
        namespace = request.headers.get("x-namespace")
        try:
            if operation == "decode":
                payloads = await translator.decode(body.payloads, namespace)
            else:
                payloads = await translator.encode(body.payloads, namespace)
        except PayloadDecryptionError as exc:
            return _error(HTTPStatus.UNPROCESSABLE_ENTITY, str(exc))
        except ConfigurationError as exc:  # a referenced file this process cannot see
            return _error(HTTPStatus.NOT_FOUND, str(exc))
        log.info(
            "codec.translated", operation=operation, payloads=len(payloads), namespace=namespace
        )
        return JSONResponse(MessageToDict(Payloads(payloads=payloads)))

    routes = [
        Route("/{prefix:path}/decode", translate, methods=["POST"]),
        Route("/{prefix:path}/encode", translate, methods=["POST"]),
        Route("/decode", translate, methods=["POST"]),
        Route("/encode", translate, methods=["POST"]),
    ]
    middleware = [
        Middleware(BodyLimit, max_bytes=MAX_BODY_BYTES),
        Middleware(
            CORSMiddleware,
            allow_origins=ui_origins,
            allow_methods=["POST"],
            allow_headers=["Authorization", "Content-Type", "X-Namespace"],
            allow_credentials=True,
            max_age=600,
        ),
    ]
    return Starlette(routes=routes, middleware=middleware)
