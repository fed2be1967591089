"""``--insecure-dev``'s guard against DNS rebinding: only loopback ``Host`` values pass.

A gateway without keys trusts whoever reaches it, and a web page can reach loopback
by pointing its own host name at ``127.0.0.1`` (DNS rebinding): the browser then
sends the page's host name in ``Host``. Refusing every ``Host`` but a loopback name
with the port the gateway listens on keeps such pages out.
"""

from __future__ import annotations

from http import HTTPStatus

import structlog
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from smyth_temporal.gateway._problems import problem_of, problem_response

__all__ = ["LOOPBACK_NAMES", "LoopbackHostOnly", "is_loopback_host"]

log = structlog.get_logger("smyth_temporal.gateway")

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "[::1]"})
"""The host names a browser uses for this machine itself."""


def is_loopback_host(host: str, port: int | None) -> bool:
    """Whether a ``Host`` header names this machine by a loopback name, on ``port``.

    Args:
        host: The header's value (``name`` or ``name:port``).
        port: The port the server listens on (``None``: any port).
    """
    value = host.strip().lower()
    if value.startswith("["):  # an IPv6 address: "[::1]:8000"
        end = value.find("]") + 1
        name, rest = value[:end], value[end:]
    else:
        name, colon, given = value.partition(":")
        rest = colon + given
    if rest and not (rest.startswith(":") and rest[1:].isdigit()):
        return False
    if name not in LOOPBACK_NAMES:
        return False
    # A browser leaves the port out for 80 only.
    return port is None or int(rest[1:] or 80) == port


class LoopbackHostOnly:
    """ASGI middleware answering 421 to requests whose ``Host`` is not loopback.

    The port expected is the one the request came in on (``scope["server"]``).

    Args:
        app: The application.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        host = dict(scope["headers"]).get(b"host", b"").decode("latin-1")
        server = scope.get("server")
        port = server[1] if server else None
        if is_loopback_host(host, port):
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        log.warning("gateway.host_refused", host=host, path=request.url.path)
        refused = HTTPException(
            HTTPStatus.MISDIRECTED_REQUEST,
            f"--insecure-dev answers only requests for localhost:{port} or 127.0.0.1:{port} "
            f"(Host {host!r} was refused: a page elsewhere may not reach a keyless gateway)",
        )
        await problem_response(request, problem_of(refused))(scope, receive, send)
