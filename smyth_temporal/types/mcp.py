"""What crosses the boundary between an agent and its MCP activities (pure data).

An agent names MCP servers; the worker holds the connections. The agent asks a
server's ``list_tools`` activity once per run and keeps the recorded list, then runs
each call through the server's ``call_tool`` activity. Only names, schemas, arguments
and results cross: never a command, a URL or a credential.

Added in 0.3.0.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from smyth_temporal.types.tools import ToolEffect, ToolInvocation, ToolOutcome

__all__ = [
    "MCP_IDEMPOTENCY_KEY_META",
    "MCPCallOutcome",
    "MCPCallRequest",
    "MCPListRequest",
    "MCPOperation",
    "MCPToolAnnotations",
    "MCPToolInfo",
    "MCPToolList",
    "mcp_activity_name",
]

MCP_IDEMPOTENCY_KEY_META = "smyth-temporal/idempotency-key"
"""The ``_meta`` key of a ``tools/call`` request that carries the call's idempotency key.

MCP has no standard key for it: a server that knows this one can deduplicate a call
that a crashed worker or a retry sends again (the key is the same every time)."""

MCPOperation = Literal["list_tools", "call_tool"]
"""The MCP operations an agent schedules, one activity type per server each."""


def mcp_activity_name(server: str, operation: MCPOperation) -> str:
    """The activity type of ``operation`` on ``server``: ``smyth.mcp.<server>.<operation>``.

    One type per server, so each server has its own metrics and a worker without the
    server fails the call with a message naming it.
    """
    return f"smyth.mcp.{server}.{operation}"


class MCPToolAnnotations(BaseModel):
    """The hints an MCP server gives about a tool (``ToolAnnotations``); ``None``: not given."""

    title: str | None = None
    """A human-readable title."""
    read_only_hint: bool | None = None
    """The tool changes nothing (the spec's default: false)."""
    destructive_hint: bool | None = None
    """The tool may destroy or overwrite (the spec's default: true, unless read-only)."""
    idempotent_hint: bool | None = None
    """Calling it twice with the same arguments has no further effect (default: false)."""
    open_world_hint: bool | None = None
    """The tool reaches outside systems (default: true)."""


class MCPToolInfo(BaseModel):
    """One tool as a server lists it."""

    name: str
    """The server's name for the tool."""
    title: str | None = None
    """A human-readable title."""
    description: str | None = None
    """What the tool does, for the model."""
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    """The JSON schema of its arguments (``inputSchema``)."""
    annotations: MCPToolAnnotations | None = None
    """Its hints, if the server gave any."""


class MCPListRequest(BaseModel):
    """The input of a server's ``list_tools`` activity."""

    server: str
    """The server's name on the worker."""
    agent: str
    """The agent's workflow type name (for logs)."""


class MCPToolList(BaseModel):
    """A server's tools, as listed once for a run and recorded in its history."""

    server: str
    """The server's name on the worker."""
    tools: list[MCPToolInfo] = Field(default_factory=list)
    """Every tool the server listed (all pages)."""


class MCPCallRequest(BaseModel):
    """The input of a server's ``call_tool`` activity."""

    server: str
    """The server's name on the worker."""
    tool: str
    """The server's name for the tool (the model may know it by a namespaced name)."""
    effect: ToolEffect
    """The call's effect class: it decides which failures may be retried."""
    max_output_chars: int
    """Output past this many characters is truncated with a note to the model."""
    invocation: ToolInvocation
    """The call: validated arguments, idempotency key, agent, step, tenant."""


class MCPCallOutcome(ToolOutcome):
    """What an MCP tool call produced, as text for the model."""

    is_error: bool = False
    """The server answered with ``isError``: the tool ran and reports a failure, which
    the model sees (never retried: the answer would be the same)."""
