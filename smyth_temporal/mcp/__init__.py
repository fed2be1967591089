"""MCP servers on the worker side: where they are, the connections, the activities.

Workflow code never imports this package: an agent names servers
(``AgentConfig.mcp_servers``) and its MCP tools run as the activities served here.

```python
plugin = SmythPlugin(
    mcp_servers={
        "git": StdioServer(["uvx", "mcp-server-git", "--repository", "."]),
        "search": HttpServer(url, headers={"Authorization": secret("SEARCH_TOKEN")}),
    }
)
```

- ``StdioServer``, ``HttpServer``, ``secret``, ``parse_server``: how a worker reaches
  its servers (plain configuration, importable without the ``mcp`` package).
- ``MCPConnections``, ``MCPActivities``: one connection per server, reopened when it
  breaks, and the ``smyth.mcp.<server>.list_tools``/``call_tool`` activities. They
  need the ``mcp`` extra (``pip install 'smyth-temporal[mcp]'``); importing them
  without it fails with that command.

Built on the ``mcp`` SDK directly (not ``temporalio-mcp``): its workflow-side client
imports ``mcp`` into workflow code and its activities neither heartbeat nor carry a
tool's effect class, both of which this integration needs.

Added in 0.3.0.
"""

from typing import TYPE_CHECKING, Any

from smyth_temporal.mcp._servers import (
    HttpServer,
    MCPServerConfig,
    Secret,
    StdioServer,
    parse_server,
    secret,
)

if TYPE_CHECKING:
    from smyth_temporal.mcp._activities import MCPActivities
    from smyth_temporal.mcp._connections import MCPConnections

__all__ = [
    "HttpServer",
    "MCPActivities",
    "MCPConnections",
    "MCPServerConfig",
    "Secret",
    "StdioServer",
    "parse_server",
    "secret",
]

INSTALL_HINT = "MCP servers need the mcp extra: pip install 'smyth-temporal[mcp]'"


def __getattr__(name: str) -> Any:
    if name not in ("MCPActivities", "MCPConnections"):
        raise AttributeError(name)
    try:
        import mcp  # noqa: F401  (the extra's SDK)
    except ImportError as exc:
        raise ImportError(INSTALL_HINT) from exc
    if name == "MCPActivities":
        from smyth_temporal.mcp._activities import MCPActivities

        return MCPActivities
    from smyth_temporal.mcp._connections import MCPConnections

    return MCPConnections
