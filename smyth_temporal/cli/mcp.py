"""``smyth mcp serve``: the agents on a task queue, as an MCP server (stdio or HTTP)."""

from __future__ import annotations

from typing import Annotated

import typer

from smyth_temporal.cli._common import CommonOptions, agent_type, choice, command, port, run, status
from smyth_temporal.clients import API_KEY_ENV, AgentClient
from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.security import KeyStore
from smyth_temporal.settings import AccessSettings

__all__ = ["app"]

app = typer.Typer(help="Agents and the Model Context Protocol.")

DEFAULT_PORT = 8765


@command(
    app,
    "serve",
    task_queue=True,
    log_level="warning",
    help="Serve agents to MCP clients: tools to list agents, start a run, send a session "
    "message, read a run's state and result, list and decide approvals; a client of MCP "
    "2025-11-25 may start a run as a task (tasks/get, tasks/result, tasks/list, tasks/cancel; "
    "the task id is the workflow id), and so may a client of 2026-07-28 that declares the "
    "tasks extension (tasks/get, tasks/update to decide, tasks/cancel). Over stdio (an MCP "
    "client runs `smyth mcp serve AGENT...`), or streamable HTTP with --transport http "
    "(http://HOST:PORT/mcp). Over HTTP every request needs an API key of the key file "
    "(Authorization: Bearer KEY, as for the gateway) and acts as that key; without keys it "
    "serves 127.0.0.1 only.",
)
def serve(
    options: CommonOptions,
    agents: Annotated[
        list[str],
        typer.Argument(
            metavar="AGENT", help="the agents served: workflow type names or module:Class"
        ),
    ],
    transport: Annotated[
        str,
        typer.Option(
            "--transport",
            parser=choice("stdio", "http"),
            metavar="stdio|http",
            help="stdio: an MCP client runs this command; http: streamable HTTP",
        ),
    ] = "stdio",
    host: Annotated[
        str, typer.Option("--host", metavar="HOST", help="the address to bind, for http")
    ] = "127.0.0.1",
    port_: Annotated[
        int, typer.Option("--port", parser=port, metavar="PORT", help="the TCP port, for http")
    ] = DEFAULT_PORT,
) -> None:
    """Serve agents over MCP."""
    run(_serve(options, agents, transport, host, port_))


async def _serve(
    options: CommonOptions, specs: list[str], transport: str, host: str, port_: int
) -> None:
    # Imported here: serving needs the mcp extra, and `smyth` must work without it.
    try:
        from smyth_temporal.mcp_server import http_keys, serve_mcp
    except ImportError as exc:
        raise ConfigurationError(str(exc)) from None
    served = [agent_type(spec) for spec in specs]
    keys = KeyStore()
    if transport == "http":
        # Each request presents its own key and acts as it (see RequireKey); without
        # keys, serve_mcp refuses any address but loopback.
        http_keys(host, keys)  # refused before anything is announced
        agents = await AgentClient.connect(options.settings(), principal=None)
        status(f"serving {', '.join(served)} over MCP at http://{host}:{port_}/mcp")
        await serve_mcp(agents, served, transport="http", host=host, port=port_, keys=keys)
        return
    if keys.has_active_keys() and AccessSettings.load().api_key is None:
        # Keys exist, so callers are told apart: an MCP client acts as one key, whose
        # tenant and role bound everything it does (and whose name decides).
        raise ConfigurationError(
            f"{keys.path} holds API keys: set {API_KEY_ENV} to the key this MCP server acts "
            "as (smyth keys create --tenant T --role approver --name N)"
        )
    agents = await AgentClient.connect(options.settings())
    await serve_mcp(agents, served, transport="stdio")
