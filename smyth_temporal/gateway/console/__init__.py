"""The web console: approvals inbox, runs, a live run view and memory search.

Served by the gateway itself under ``/console/`` (``GatewayOptions.console``). The
pages are static files that hold no data: the browser asks for an API key, keeps it
in ``sessionStorage`` and calls the gateway's own API with ``Authorization: Bearer``,
so every datum passes the same keys, roles and tenancy as any other client. Every URL
is relative, so the console works under a reverse proxy's path prefix.

Added in 0.3.0.
"""

from smyth_temporal.gateway.console._routes import CONSOLE_PATH, router

__all__ = ["CONSOLE_PATH", "router"]
