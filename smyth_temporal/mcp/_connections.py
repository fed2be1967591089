"""The worker's MCP connections: one live session per server, reopened when it breaks.

Each connection is owned by a task of its own that enters the ``mcp.Client`` (anyio
insists that a context is left in the task that entered it) and keeps it open until
the worker stops; every activity of the worker sends its requests over it, as
concurrent JSON-RPC requests. A stdio server is the connection's child process: if
it dies, or an HTTP session breaks, the failing call retires the connection and the
next call (Temporal's retry) opens a new one, starting the process again.

The connections never retry a request: Temporal's retry policy is the only thing that
retries (see ``_activities``).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Mapping
from datetime import timedelta
from typing import Any

import httpx2
import structlog
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT
from pydantic import ValidationError

from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.mcp._servers import MCPServerConfig, StdioServer
from smyth_temporal.security import Secrets

__all__ = ["DEFAULT_CONNECT_TIMEOUT", "MCPConnections", "reason"]

_log = structlog.get_logger("smyth_temporal.mcp")

DEFAULT_CONNECT_TIMEOUT = timedelta(seconds=60)
"""How long opening a connection may take (``uvx`` may download the server first)."""

_CLOSE_TIMEOUT = 5.0
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)
# Errors after which the connection cannot be trusted with another request.
_BROKEN_CODES = {CONNECTION_CLOSED, REQUEST_TIMEOUT}


class _Connection:
    """One open ``mcp.Client``, held open by its owner task until ``close``."""

    def __init__(self, name: str, server: MCPServerConfig, secrets: Secrets) -> None:
        self.name = name
        self.server = server
        self.secrets = secrets
        self.retired = False
        self._ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self._owner = asyncio.create_task(self._own(), name=f"smyth-mcp-{name}")

    @property
    def usable(self) -> bool:
        return not self.retired and not self._owner.done()

    async def client(self, timeout: float) -> Client:
        """The connected client, once the connection is open.

        Raises:
            TimeoutError: It did not open in ``timeout`` seconds.
            Exception: Why it could not open.
        """
        async with asyncio.timeout(timeout):
            # shield: a cancelled caller leaves the opening to the next one.
            return await asyncio.shield(self._ready)

    async def _own(self) -> None:
        try:
            async with contextlib.AsyncExitStack() as stack:
                client = await stack.enter_async_context(
                    _client_for(self.server, stack, self.secrets)
                )
                self._ready.set_result(client)
                _log.info("mcp.connected", server=self.name, to=self.server.describe())
                await self._stop.wait()
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(exc if isinstance(exc, Exception) else ConnectionError())
                self._ready.exception()  # retrieved: the caller re-raises it
            elif not isinstance(exc, asyncio.CancelledError):
                _log.warning("mcp.connection_lost", server=self.name, error=reason(exc))
            if not isinstance(exc, Exception):
                raise

    async def close(self) -> None:
        self.retired = True
        self._stop.set()
        try:
            async with asyncio.timeout(_CLOSE_TIMEOUT):
                await asyncio.shield(self._owner)
        except (TimeoutError, Exception):
            self._owner.cancel()
            with contextlib.suppress(BaseException):
                await self._owner


@contextlib.asynccontextmanager
async def _client_for(
    server: MCPServerConfig, stack: contextlib.AsyncExitStack, secrets: Secrets
) -> AsyncIterator[Client]:
    # The response cache is off: the run's history is the record of what a server
    # listed, and a tool added since must show up in the next run's listing.
    if isinstance(server, StdioServer):
        params = StdioServerParameters(
            command=server.command[0],
            args=list(server.command[1:]),
            env=server.environment(secrets) or None,
            cwd=server.cwd,
        )
        async with Client(params, cache=None) as client:
            yield client
        return
    http = await stack.enter_async_context(
        httpx2.AsyncClient(headers=server.request_headers(secrets), timeout=_HTTP_TIMEOUT)
    )
    async with Client(streamable_http_client(server.url, http_client=http), cache=None) as client:
        yield client


class MCPConnections:
    """A worker's MCP servers by name, and one connection to each.

    ```python
    connections = MCPConnections({"git": StdioServer(["uvx", "mcp-server-git"])})
    async with connections.serving():  # opens every server, or fails naming one
        async with connections.session("git") as client:
            await client.call_tool("git_status", {"repo_path": "."})
    ```

    Args:
        servers: How to reach each server, by the name agents use.
        connect_timeout: How long opening one connection may take.

    Raises:
        ConfigurationError: A name agents could not use.

    Added in 0.3.0.
    """

    def __init__(
        self,
        servers: Mapping[str, MCPServerConfig],
        *,
        connect_timeout: timedelta = DEFAULT_CONNECT_TIMEOUT,
        secrets: Secrets | None = None,
    ) -> None:
        bad = [name for name in servers if not _NAME.match(name)]
        if bad:
            raise ConfigurationError(
                f"MCP server names {bad} must be 1-64 letters, digits, '_' or '-'"
            )
        self.servers = dict(servers)
        self.secrets = secrets if secrets is not None else Secrets()
        self._timeout = connect_timeout.total_seconds()
        self._open: dict[str, _Connection] = {}
        self._users = 0

    @property
    def names(self) -> list[str]:
        """The servers' names."""
        return list(self.servers)

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[None]:
        """Open every server for the duration, then close them (``acquire``/``release``).

        Raises:
            ConfigurationError: A server cannot be reached; the message names it.
        """
        await self.acquire()
        try:
            yield
        finally:
            await self.release()

    async def acquire(self) -> None:
        """Open every server for one more user (a worker's run); the first user opens them.

        Raises:
            ConfigurationError: A server cannot be reached; the message names it.
        """
        if self._users == 0:
            await self.check()
        self._users += 1

    async def release(self) -> None:
        """One user less; the last one closes every connection."""
        self._users -= 1
        if self._users == 0:
            await self.close()

    async def check(self) -> None:
        """Open every server now, concurrently.

        Raises:
            ConfigurationError: A server cannot be reached; the message names it and
                says why.
        """
        results = await asyncio.gather(
            *(self._connect(name) for name in self.servers), return_exceptions=True
        )
        for name, result in zip(self.servers, results, strict=True):
            if isinstance(result, BaseException):
                await self.close()
                server = self.servers[name]
                raise ConfigurationError(
                    f"MCP server {name!r} ({server.describe()}) cannot be reached: {reason(result)}"
                ) from result

    @contextlib.asynccontextmanager
    async def session(self, name: str) -> AsyncIterator[Client]:
        """The open client of server ``name`` for one operation.

        An error that leaves the connection broken (closed, timed out, a transport
        failure) retires it, so the next operation opens a new one; the error goes on.
        """
        connection = await self._connection(name)
        client = await connection.client(self._timeout)
        try:
            yield client
        except MCPError as exc:
            if exc.code in _BROKEN_CODES:
                await self._retire(connection, exc)
            raise
        except (asyncio.CancelledError, ValidationError):
            raise  # the request is cancelled on the wire; the connection stays good
        except Exception as exc:
            await self._retire(connection, exc)
            raise

    async def close(self) -> None:
        """Close every connection (stdio servers exit)."""
        connections, self._open = list(self._open.values()), {}
        await asyncio.gather(*(c.close() for c in connections))

    async def _connect(self, name: str) -> Client:
        connection = await self._connection(name)
        try:
            return await connection.client(self._timeout)
        except BaseException:
            await self._retire(connection, None)
            raise

    async def _connection(self, name: str) -> _Connection:
        server = self.servers.get(name)
        if server is None:
            known = ", ".join(self.servers) or "none"
            raise ConfigurationError(f"this worker has no MCP server {name!r} (it has: {known})")
        current = self._open.get(name)
        if current is None or not current.usable:
            if current is not None:
                _log.info("mcp.reconnecting", server=name)
            current = self._open[name] = _Connection(name, server, self.secrets)
        return current

    async def _retire(self, connection: _Connection, error: BaseException | None) -> None:
        if self._open.get(connection.name) is connection:
            del self._open[connection.name]
        if error is not None:
            _log.warning("mcp.connection_retired", server=connection.name, error=reason(error))
        # In the background: other requests in flight on it may still finish.
        task = asyncio.create_task(connection.close())
        _closing.add(task)
        task.add_done_callback(_closing.discard)


_closing: set[asyncio.Task[Any]] = set()
"""Connections being closed (the event loop holds only weak references to tasks)."""


def reason(exc: BaseException) -> str:
    """One line saying why: the innermost error of an exception group, with its type."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError):
        return f"{exc.message} (MCP error {exc.code})"
    text = str(exc) or type(exc).__name__
    return text if type(exc).__name__ in text else f"{type(exc).__name__}: {text}"
