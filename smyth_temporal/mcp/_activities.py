"""The MCP activities a worker serves: ``list_tools`` and ``call_tool`` for each server.

Worker side. Each call heartbeats while it runs (so an attempt on a crashed worker is
retried elsewhere within seconds), sends the call's idempotency key in the request's
``_meta`` (``MCP_IDEMPOTENCY_KEY_META``), bounds the result like ``@tool`` output, and
classifies every failure for Temporal, the only thing that retries:

| failure | read_only / idempotent | side_effect |
| --- | --- | --- |
| ``isError`` result (the tool ran and says it failed) | returned, not retried | the same |
| connection lost, request timed out, transport error | retried | retried (the same key) |
| a JSON-RPC error a retry cannot fix (invalid params, unknown method...) | final | final |
| any other JSON-RPC error (internal error...) | retried | final: the tool may have acted |
| a response that breaks the protocol's schema | final | final |
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, cast

import structlog
from mcp import MCPError
from mcp.types import (
    CONNECTION_CLOSED,
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PARSE_ERROR,
    REQUEST_TIMEOUT,
    UNSUPPORTED_PROTOCOL_VERSION,
    URL_ELICITATION_REQUIRED,
    AudioContent,
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    RequestParamsMeta,
    ResourceLink,
    TextContent,
    TextResourceContents,
    Tool,
)
from pydantic import ValidationError
from temporalio import activity
from temporalio.exceptions import ApplicationError

from smyth_temporal._redaction import masked_cause, redact
from smyth_temporal.activities import auto_heartbeat
from smyth_temporal.activities.tools import render_output
from smyth_temporal.exceptions import ConfigurationError, MCPServerError
from smyth_temporal.mcp._connections import MCPConnections, reason
from smyth_temporal.tools import value_depth
from smyth_temporal.types.mcp import (
    MCP_IDEMPOTENCY_KEY_META,
    MCPCallOutcome,
    MCPCallRequest,
    MCPListRequest,
    MCPToolAnnotations,
    MCPToolInfo,
    MCPToolList,
    mcp_activity_name,
)
from smyth_temporal.types.tools import ToolEffect

__all__ = ["MCPActivities", "classify", "render_result"]

_log = structlog.get_logger("smyth_temporal.mcp")

_FINAL_CODES = {
    PARSE_ERROR,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    INVALID_PARAMS,
    HEADER_MISMATCH,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
    URL_ELICITATION_REQUIRED,
}
"""JSON-RPC errors the same request would get again."""

_TRANSPORT_CODES = {CONNECTION_CLOSED, REQUEST_TIMEOUT}
"""JSON-RPC errors of the transport, not of the tool: a retry on a new connection may work."""

_MAX_PAGES = 100

MAX_SCHEMA_DEPTH = 64
"""How deeply a server's tool schema may nest to be offered (JSON schemas of real tools
nest a handful of levels; workflow code decodes at most about 200)."""

MAX_SCHEMA_CHARS = 256 * 1024
"""How large (as JSON) a server's tool schema may be to be offered."""
"""Pages of a tool listing followed at most (a server whose cursor never ends)."""


class MCPActivities:
    """Serves the MCP activities of every server of a worker over its connections.

    Args:
        connections: The worker's connections (see ``MCPConnections``).

    Added in 0.3.0.
    """

    def __init__(self, connections: MCPConnections) -> None:
        self._connections = connections

    def all(self) -> list[Callable[..., Any]]:
        """The activities to register: ``smyth.mcp.<server>.list_tools`` and ``.call_tool``."""
        return [each for name in self._connections.names for each in self._for(name)]

    async def list_tools(self, server: str, request: MCPListRequest) -> MCPToolList:
        """Every tool of ``server`` (all pages), as the agent records it."""
        tools: list[Tool] = []
        try:
            async with auto_heartbeat(), self._connections.session(server) as client:
                cursor: str | None = None
                for _ in range(_MAX_PAGES):
                    page = await client.list_tools(cursor=cursor, cache_mode="bypass")
                    tools += page.tools
                    cursor = page.next_cursor
                    if not cursor:
                        break
        except Exception as exc:
            _log.warning("mcp.list_failed", server=server, agent=request.agent, error=reason(exc))
            raise classify(exc, server, "read_only") from masked_cause(exc)
        _log.info("mcp.listed", server=server, agent=request.agent, tools=len(tools))
        return MCPToolList(server=server, tools=[_info(t) for t in tools if _offerable(server, t)])

    async def call_tool(self, server: str, request: MCPCallRequest) -> MCPCallOutcome:
        """Call one tool with the call's idempotency key in ``_meta``; bound the result."""
        invocation = request.invocation
        info = activity.info()
        log = _log.bind(
            server=server,
            tool=request.tool,
            workflow_id=info.workflow_id,
            step=invocation.step,
            call_id=invocation.call_id,
            attempt=info.attempt,
        )
        meta = cast(RequestParamsMeta, {MCP_IDEMPOTENCY_KEY_META: invocation.idempotency_key})
        try:
            async with auto_heartbeat(), self._connections.session(server) as client:
                result = await client.call_tool(request.tool, invocation.arguments, meta=meta)
        except Exception as exc:
            error = classify(exc, server, request.effect)
            log.warning("mcp.call_failed", error=error.message, retryable=not error.non_retryable)
            # The cause goes to history too: dropped if it quotes a header's token.
            raise error from masked_cause(exc)
        # Masked by render_output: a server echoing a header's token would carry it
        # to the model.
        outcome = render_output(render_result(result), request.max_output_chars)
        log.info("mcp.call_completed", chars=len(outcome.content), is_error=result.is_error)
        return MCPCallOutcome(
            content=outcome.content,
            truncated=outcome.truncated,
            is_error=result.is_error,
        )

    def _for(self, server: str) -> list[Callable[..., Any]]:
        @activity.defn(name=mcp_activity_name(server, "list_tools"))
        async def list_tools(request: MCPListRequest) -> MCPToolList:
            return await self.list_tools(server, request)

        @activity.defn(name=mcp_activity_name(server, "call_tool"))
        async def call_tool(request: MCPCallRequest) -> MCPCallOutcome:
            return await self.call_tool(server, request)

        return [list_tools, call_tool]


def classify(exc: BaseException, server: str, effect: ToolEffect) -> ApplicationError:
    """The ``ApplicationError`` (type ``MCPServerError``) that carries ``exc`` to Temporal.

    See the module's table: whether a retry may help, and, for a side-effecting tool,
    whether the tool could have acted already.
    """
    message = redact(f"MCP server {server!r}: {reason(exc)}")
    if isinstance(exc, ApplicationError):
        return exc
    if isinstance(exc, MCPError):
        transport = exc.code in _TRANSPORT_CODES
        final = exc.code in _FINAL_CODES or (effect == "side_effect" and not transport)
        return ApplicationError(
            message, exc.code, type=MCPServerError.__name__, non_retryable=final
        )
    # Misconfiguration and broken responses stay broken on the next attempt.
    final = isinstance(exc, ConfigurationError | ValidationError)
    return ApplicationError(message, type=MCPServerError.__name__, non_retryable=final)


def render_result(result: CallToolResult) -> str:
    """A tool's result as text for the model (structured content when there is no text)."""
    parts = [_render_block(block) for block in result.content]
    if not parts and result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False)
    return "\n".join(parts)


def _render_block(block: ContentBlock) -> str:
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ImageContent | AudioContent):
        kind = "image" if isinstance(block, ImageContent) else "audio"
        return f"[{kind}: {block.mime_type}, {len(block.data) * 3 // 4} bytes not shown]"
    if isinstance(block, EmbeddedResource):
        resource = block.resource
        if isinstance(resource, TextResourceContents):
            return resource.text
        return f"[resource {resource.uri}: {resource.mime_type or 'binary'}, not shown]"
    if isinstance(block, ResourceLink):
        return f"[resource link: {block.uri}]"
    return f"[{type(block).__name__} not shown]"


def _offerable(server: str, tool: Tool) -> bool:
    """Whether ``tool``'s schema is small and shallow enough to enter workflow code.

    A server's schema is recorded in the agent's history and decoded by workflow code:
    one nested past the decoder's recursion limit (about 200) would fail that workflow
    task on every attempt and wedge the run; one of megabytes would bloat every model
    request. Such a tool is left out (logged); the agent goes on with the others.
    """
    depth = value_depth(tool.input_schema, MAX_SCHEMA_DEPTH)
    size = len(json.dumps(tool.input_schema)) if depth <= MAX_SCHEMA_DEPTH else 0
    if depth <= MAX_SCHEMA_DEPTH and size <= MAX_SCHEMA_CHARS:
        return True
    _log.warning(
        "mcp.tool_left_out",
        server=server,
        tool=tool.name,
        reason=f"its input schema nests {depth} levels (at most {MAX_SCHEMA_DEPTH})"
        if depth > MAX_SCHEMA_DEPTH
        else f"its input schema has {size} characters (at most {MAX_SCHEMA_CHARS})",
    )
    return False


def _info(tool: Tool) -> MCPToolInfo:
    hints = tool.annotations
    return MCPToolInfo(
        name=tool.name,
        title=tool.title,
        description=tool.description,
        input_schema=dict(tool.input_schema),
        annotations=None
        if hints is None
        else MCPToolAnnotations(
            title=hints.title,
            read_only_hint=hints.read_only_hint,
            destructive_hint=hints.destructive_hint,
            idempotent_hint=hints.idempotent_hint,
            open_world_hint=hints.open_world_hint,
        ),
    )
