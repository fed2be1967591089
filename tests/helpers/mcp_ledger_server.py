"""A stdio MCP server for the crash tests: every call lands in a JSON-lines ledger.

Run by a worker as ``python -m tests.helpers.mcp_ledger_server`` (from the repository root),
with ``SMYTH_TEST_LEDGER`` naming the ledger. Each entry has the tool, the idempotency
key the call carried in ``_meta``, the server's pid and its parent's (the worker).
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

from smyth_temporal.types.mcp import MCP_IDEMPOTENCY_KEY_META

LEDGER_ENV = "SMYTH_TEST_LEDGER"

server = MCPServer("ledger")


def record(event: str, context: Context, **fields: object) -> None:
    meta = dict(context.request_context.meta or {})
    entry = {
        "tool": event,
        "key": meta.get(MCP_IDEMPOTENCY_KEY_META),
        "server_pid": os.getpid(),
        "worker_pid": os.getppid(),
        **fields,
    }
    with Path(os.environ[LEDGER_ENV]).open("a") as ledger:
        ledger.write(json.dumps(entry) + "\n")


# Not read-only, not idempotent, not destructive: a side effect that needs no approval.
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False)


@server.tool(annotations=WRITES)
async def slow_write(text: str, seconds: float, ctx: Context) -> str:
    """Write a line to the ledger, slowly.

    Args:
        text: The line.
        seconds: How long the write takes.
    """
    record("slow_write.start", ctx, text=text)
    await asyncio.sleep(seconds)
    record("slow_write", ctx, text=text)
    return f"wrote {text}"


@server.tool(annotations=WRITES)
async def write(text: str, ctx: Context) -> str:
    """Write a line to the ledger.

    Args:
        text: The line.
    """
    record("write", ctx, text=text)
    return f"wrote {text}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def pid() -> str:
    """The server's process id."""
    return str(os.getpid())


if __name__ == "__main__":
    server.run()
