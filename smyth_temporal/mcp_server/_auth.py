"""API keys for ``smyth mcp serve --transport http``: the gateway's keys, checked the same way.

``RequireKey`` answers every HTTP request without a valid key (``Authorization:
Bearer <key>``) with 401 (429 once its sender failed too often) before the MCP
transport sees it; each tool call then acts as the key that sent it (``Callers``):
its tenant, its role, and its name as who decided.
"""

from __future__ import annotations

from collections.abc import Mapping

import structlog
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from smyth_temporal.clients import AgentClient
from smyth_temporal.exceptions import AccessDeniedError
from smyth_temporal.security import AuthLimiter, KeyRefused, KeyStore, Principal, authenticate

__all__ = [
    "AUTH_BURST",
    "AUTH_REFILL",
    "LOOPBACK_HOSTS",
    "Callers",
    "RequireKey",
    "bearer",
    "is_loopback",
]

log = structlog.get_logger("smyth_temporal.mcp_server")

AUTH_BURST = 10
"""Failed authentications a client address (or key prefix) may make in a row."""
AUTH_REFILL = 0.2
"""How fast it earns a failed attempt back, per second (one every 5 s)."""


def bearer(headers: Mapping[str, str] | None) -> str | None:
    """The key in an ``Authorization: Bearer <key>`` header, or ``None``."""
    scheme, _, key = (headers or {}).get("authorization", "").partition(" ")
    return key.strip() or None if scheme.lower() == "bearer" else None


LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
"""The binds a keyless server may use: the mcp SDK guards exactly these against DNS
rebinding (it checks ``Host`` and ``Origin``); another loopback address it does not."""


def is_loopback(host: str) -> bool:
    """Whether a keyless server may bind ``host`` (see ``LOOPBACK_HOSTS``)."""
    return host in LOOPBACK_HOSTS


class RequireKey:
    """ASGI middleware: only requests with a valid API key reach the MCP transport.

    Args:
        app: The MCP server's ASGI app.
        keys: The API keys.
        limiter: The brake on failed attempts (default: the gateway's defaults).
    """

    def __init__(self, app: ASGIApp, keys: KeyStore, limiter: AuthLimiter | None = None) -> None:
        self.app = app
        self.keys = keys
        self.limiter = limiter or AuthLimiter(AUTH_BURST, AUTH_REFILL)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)  # lifespan: the session manager's
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        client = scope.get("client")
        address = client[0] if client else "unknown"
        try:
            authenticate(self.keys, self.limiter, address, bearer(headers))
        except KeyRefused as refused:
            event = "mcp.auth_throttled" if refused.throttled else "mcp.auth_failed"
            log.warning(event, client=address, reason=refused.reason)
            response = JSONResponse(
                {"error": refused.reason}, status_code=refused.status, headers=refused.headers
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


class Callers:
    """The client each tool call acts with: its key's, over HTTP with keys; else the server's.

    Args:
        agents: The server's client (no principal over HTTP with keys).
        keys: The API keys every HTTP request presents; ``None``: stdio, or a keyless
            server on loopback, acting as ``agents`` does.
    """

    def __init__(self, agents: AgentClient, keys: KeyStore | None) -> None:
        self.agents = agents
        self.keys = keys

    def principal(self, headers: Mapping[str, str] | None) -> Principal | None:
        """The principal of the key the call came with (``None`` without keys).

        Raises:
            AccessDeniedError: The key was revoked since the request was let in.
        """
        if self.keys is None:
            return self.agents.identity.principal
        presented = bearer(headers)
        key = self.keys.authenticate(presented) if presented else None
        if key is None:
            raise AccessDeniedError("invalid or revoked API key")
        return Principal.of(key)

    def client(self, headers: Mapping[str, str] | None) -> AgentClient:
        """The client acting as the call's key (``AgentClient.acting_for``; see ``principal``)."""
        if self.keys is None:
            return self.agents
        return self.agents.acting_for(self.principal(headers))
