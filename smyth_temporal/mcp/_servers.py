"""How a worker reaches its MCP servers: ``StdioServer``, ``HttpServer``, ``secret``.

Plain configuration (no ``mcp`` import): a worker names each server, and agents refer
to the names only, so commands, URLs and credentials never enter a workflow's history.
A ``secret("NAME")`` is resolved by the worker's ``Secrets`` when the connection opens.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.security import Secrets
from smyth_temporal.types.secrets import SecretRef, secret

__all__ = [
    "HttpServer",
    "MCPServerConfig",
    "Secret",
    "StdioServer",
    "parse_server",
    "secret",
]


Secret = SecretRef
"""The reference type of ``secret`` (kept under its 0.3.0 name)."""

Value = str | SecretRef
"""A setting given as is, or resolved on the worker (``secret``)."""


def _resolved(values: Mapping[str, Value], secrets: Secrets) -> dict[str, str]:
    return {k: secrets.resolve(v) if isinstance(v, SecretRef) else v for k, v in values.items()}


def _names(values: Mapping[str, Value]) -> set[str]:
    return {v.name for v in values.values() if isinstance(v, SecretRef)}


@dataclass(frozen=True)
class StdioServer:
    """An MCP server the worker runs as a child process and talks to over stdio.

    The process starts with the worker, serves all the worker's calls to it (requests
    are multiplexed over one connection) and is started again if it dies.

    Added in 0.3.0.
    """

    command: Sequence[str]
    """The program and its arguments, e.g. ``["uvx", "mcp-server-git"]``."""
    env: Mapping[str, Value] = field(default_factory=dict)
    """Environment variables added to a minimal inherited set (``PATH``, ``HOME``...)."""
    cwd: str | None = None
    """The working directory (default: the worker's)."""

    def __post_init__(self) -> None:
        if isinstance(self.command, str) or not self.command:
            raise ConfigurationError(
                "StdioServer takes the command as a list: StdioServer(['uvx', 'mcp-server-git'])"
            )

    def environment(self, secrets: Secrets) -> dict[str, str]:
        """The extra environment with its secrets resolved."""
        return _resolved(self.env, secrets)

    def secret_names(self) -> set[str]:
        """The secrets it needs."""
        return _names(self.env)

    def describe(self) -> str:
        """What to show in logs and errors (the command line, never the environment)."""
        return shlex.join(self.command)


@dataclass(frozen=True)
class HttpServer:
    """An MCP server the worker reaches over streamable HTTP; the session reconnects.

    Added in 0.3.0.
    """

    url: str
    """The endpoint, e.g. ``https://mcp.internal/mcp``."""
    headers: Mapping[str, Value] = field(default_factory=dict)
    """Headers of every request (``secret`` for credentials)."""

    def __post_init__(self) -> None:
        if urlsplit(self.url).scheme not in ("http", "https"):
            raise ConfigurationError(f"HttpServer needs an http(s) URL, not {self.url!r}")

    def request_headers(self, secrets: Secrets) -> dict[str, str]:
        """The headers with their secrets resolved."""
        return _resolved(self.headers, secrets)

    def secret_names(self) -> set[str]:
        """The secrets it needs."""
        return _names(self.headers)

    def describe(self) -> str:
        """What to show in logs and errors: the URL without credentials or query."""
        parts = urlsplit(self.url)
        port = f":{parts.port}" if parts.port else ""
        return f"{parts.scheme}://{parts.hostname or ''}{port}{parts.path}"


MCPServerConfig = StdioServer | HttpServer
"""How a worker reaches one MCP server."""


def parse_server(spec: str) -> tuple[str, MCPServerConfig]:
    """Parse ``NAME=COMMAND`` or ``NAME=URL`` (the ``smyth worker --mcp`` option).

    ``git=uvx mcp-server-git --repository .`` is a stdio server (the command is split
    as a shell would, without running a shell); ``search=https://mcp.internal/mcp`` an
    HTTP one.

    Raises:
        ConfigurationError: No name, or nothing after the ``=``.

    Added in 0.3.0.
    """
    name, sep, target = spec.partition("=")
    name, target = name.strip(), target.strip()
    if not sep or not name or not target:
        raise ConfigurationError(
            f"expected NAME=COMMAND or NAME=URL for an MCP server, got {spec!r}"
        )
    if target.startswith(("http://", "https://")):
        return name, HttpServer(target)
    try:
        command = shlex.split(target)
    except ValueError as exc:
        raise ConfigurationError(f"MCP server {name!r}: cannot split {target!r}: {exc}") from None
    return name, StdioServer(command)
