"""Agents served over MCP (``smyth mcp serve``): an interface, like the CLI and the gateway.

``agents_mcp_server(agents, served)`` builds an MCP server whose tools drive agents
through an ``AgentClient``: ``list_agents``, ``start_run``, ``send_message``,
``run_state``, ``run_result``, ``list_approvals``, ``decide_approval``; to a client of
protocol 2025-11-25, ``start_run`` as a task, served from Temporal (``tasks/get``,
``tasks/result``, ``tasks/list``, ``tasks/cancel``; see ``_tasks``); to a client of
2026-07-28 that declares the tasks extension, the same as the extension's task
(``tasks/get`` with approvals as elicitations, ``tasks/update``, ``tasks/cancel``; see
``_tasks_extension``) and its status notifications (``subscriptions/listen`` with
``taskIds``; see ``_task_notifications``).
``serve_mcp`` runs it over stdio or streamable HTTP (every request with an API key,
when the key file has any; loopback only without). It needs the ``mcp`` extra
(``pip install 'smyth-temporal[mcp]'``): importing this package without it fails
with that command.

Added in 0.3.0.
"""

try:
    import mcp  # noqa: F401  (the extra's SDK)
except ImportError as exc:
    raise ImportError(
        "serving agents over MCP needs the mcp extra: pip install 'smyth-temporal[mcp]'"
    ) from exc

from smyth_temporal.mcp_server._server import (
    DEFAULT_RESULT_WAIT,
    Transport,
    agents_mcp_server,
    http_keys,
    serve_mcp,
)

__all__ = ["DEFAULT_RESULT_WAIT", "Transport", "agents_mcp_server", "http_keys", "serve_mcp"]
