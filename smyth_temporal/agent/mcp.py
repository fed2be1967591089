"""MCP tools in an agent: the recorded tool lists, the tools they become, their calls.

Workflow code. An agent names servers (``AgentConfig.mcp_servers``); before its first
turn of each run, ``MCPTools.load`` lists every server's tools through the server's
``list_tools`` activity, concurrently. The results are recorded in the run's history,
so the run keeps that tool set to its end, through replays and worker restarts, even
if a server changes its tools meanwhile; a continued run lists again.

Each listed tool becomes an ``MCPTool``: filtered by ``mcp_allow``/``mcp_deny``, named
as the server names it unless that name is taken (by a tool of another server or of
the agent: then ``<server>__<tool>``), with the effect and approval rule its
annotations imply unless ``mcp_effects``/``mcp_approval`` say otherwise. Calls go
through the one tool path (``agent.tooling``): validated against the ``inputSchema``,
gated, then run by ``MCPTools.run`` as the server's ``call_tool`` activity; an
``isError`` answer is reported to the model like any failed tool.
"""

from __future__ import annotations

import asyncio
import fnmatch
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, TypeVar

from temporalio import workflow
from temporalio.exceptions import ActivityError

from smyth_temporal.agent._commands import call_mcp_tool, list_mcp_tools
from smyth_temporal.agent.config import AgentConfig
from smyth_temporal.agent.run import Run
from smyth_temporal.agent.tooling import ToolRunner, failed
from smyth_temporal.exceptions import MCPServerError, ToolCallError
from smyth_temporal.tools import (
    DEFAULT_TOOL_HEARTBEAT_TIMEOUT,
    MCP_EXECUTOR,
    MCPTool,
    Tool,
    effect_from_annotations,
    is_destructive,
)
from smyth_temporal.types.mcp import MCPCallRequest, MCPListRequest, MCPToolInfo, MCPToolList
from smyth_temporal.types.messages import ToolCall

__all__ = ["MCP_EXECUTOR", "NAMESPACE_SEPARATOR", "MCPTools", "build_mcp_tools"]

NAMESPACE_SEPARATOR = "__"
"""Joins a server's name and a tool's when two tools would share a name: ``git__status``.

Not ``.``: OpenAI-compatible and Anthropic endpoints accept only letters, digits, ``_``
and ``-`` in tool names. Settings name a tool ``server.tool`` instead (never sent)."""

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_MAX_NAME = 64

_V = TypeVar("_V")


class MCPTools:
    """An agent's MCP servers: their recorded tool lists, the tools, and the executor.

    Args:
        run: The agent's run (its config: servers, filters, overrides, timeouts).

    Added in 0.3.0. Changed in 0.9.0: takes the ``Run``; the tool runner comes with
    each call (``run``).
    """

    def __init__(self, run: Run) -> None:
        self.lists: list[MCPToolList] | None = None
        """The tool lists this run recorded, in ``mcp_servers`` order (``None``: not yet)."""
        self._config = run.config
        self._log = run.log
        self._built: tuple[tuple[str, ...], tuple[MCPTool, ...]] | None = None

    async def load(self) -> None:
        """List every server's tools once per run (concurrently), and record them.

        Raises:
            MCPServerError: A server's tools could not be listed after the retries;
                the run fails with the server's name.
        """
        servers = self._config.mcp_servers
        if self.lists is not None or not servers:
            return
        self.lists = []  # listing has begun: a concurrent caller must not list twice
        agent = workflow.info().workflow_type
        heartbeat = DEFAULT_TOOL_HEARTBEAT_TIMEOUT
        requests = [MCPListRequest(server=server, agent=agent) for server in servers]
        try:
            # gather keeps the order of its arguments and schedules deterministically.
            self.lists = list(
                await asyncio.gather(*(list_mcp_tools(r, heartbeat) for r in requests))
            )
        except ActivityError as exc:
            self.lists = None
            server = _server_of(exc, servers)
            raise MCPServerError(
                f"MCP server {server!r} could not list its tools: {exc.cause or exc}"
            ) from exc
        counts = {listed.server: len(listed.tools) for listed in self.lists}
        self._log.info("agent.mcp_listed", tools=counts)

    def tools(self, local: Sequence[Tool]) -> tuple[MCPTool, ...]:
        """The MCP tools offered next to ``local`` (the agent's other tools), once listed."""
        if not self.lists:
            return ()
        reserved = tuple(t.name for t in local)
        if self._built is None or self._built[0] != reserved:  # once, unless local tools change
            tools = build_mcp_tools(self._config, self.lists, reserved, self._log.warning)
            self._built = (reserved, tools)
        return self._built[1]

    def find(self, name: str) -> MCPTool | None:
        """The MCP tool offered as ``name`` (as last built), if any."""
        built = self._built[1] if self._built else ()
        return next((t for t in built if t.name == name), None)

    def configured(self, name: str) -> Tool | None:
        """The tool the agent has under ``name`` now: its config's, or an MCP tool.

        What an approver's edit is checked against (not only this turn's offer).
        Added in 0.9.0.
        """
        return self._config.tool(name) or self.find(name)

    async def run(
        self, runner: ToolRunner, spec: Tool, call: ToolCall, arguments: dict[str, Any]
    ) -> str:
        """Run a validated (and, if gated, approved) call on its server.

        The executor of MCP tools, bound to ``runner`` (invocations, in-flight calls).

        Raises:
            ToolCallError: The call still failed after its retries, or the server
                answered ``isError``; the model is told.
        """
        if not isinstance(spec, MCPTool):
            raise ToolCallError(f"tool '{call.name}' is not an MCP tool")
        request = MCPCallRequest(
            server=spec.server,
            tool=spec.mcp_name,
            effect=spec.effect,
            max_output_chars=spec.max_output_chars,
            invocation=runner.invocation(spec, call, arguments),
        )
        with runner.in_flight(call):
            try:
                outcome = await call_mcp_tool(spec, request)
            except ActivityError as exc:
                raise failed(call, exc) from exc
        if outcome.is_error:
            raise ToolCallError(outcome.content or f"tool '{call.name}' reported an error")
        return outcome.content


def build_mcp_tools(
    config: AgentConfig,
    lists: Sequence[MCPToolList],
    reserved: Collection[str],
    warn: Callable[..., None] = lambda *_, **__: None,
) -> tuple[MCPTool, ...]:
    """The tools an agent offers from its servers' recorded lists (pure, deterministic).

    Args:
        config: The agent's config (filters, effect and approval overrides, timeout).
        lists: The recorded tool lists, in ``mcp_servers`` order.
        reserved: Names the agent's other tools take.
        warn: Logs a tool that cannot be offered, and overrides that match no tool.
    """
    listed = [(each.server, info) for each in lists for info in each.tools]
    listed = [(s, info) for s, info in listed if _visible(config, s, info.name)]
    plain = [_safe(info.name) for _, info in listed]
    taken = set(reserved)
    tools: list[MCPTool] = []
    for (server, info), name in zip(listed, plain, strict=True):
        if plain.count(name) > 1 or name in reserved:
            name = _safe(f"{server}{NAMESPACE_SEPARATOR}{info.name}")
        if name in taken:
            warn("agent.mcp_tool_skipped", server=server, tool=info.name, name=name)
            continue
        taken.add(name)
        tools.append(_tool(config, server, info, name))
    keys = {k for t in tools for k in (t.name, t.mcp_name, t.qualified_name)}
    for option in ("mcp_approval", "mcp_effects"):
        unknown = sorted(set(getattr(config, option)) - keys)
        if unknown:
            warn("agent.mcp_override_unmatched", option=option, keys=unknown)
    return tuple(tools)


def _tool(config: AgentConfig, server: str, info: MCPToolInfo, name: str) -> MCPTool:
    keys = (f"{server}.{info.name}", name, info.name)  # the most specific setting wins
    hints = info.annotations
    return MCPTool.listed(
        name=name,
        description=info.description or (hints.title if hints else None) or info.title or name,
        server=server,
        mcp_name=info.name,
        input_schema=info.input_schema,
        effect=_setting(config.mcp_effects, keys, effect_from_annotations(hints)),
        requires_approval=_setting(config.mcp_approval, keys, is_destructive(hints)),
        timeout=config.mcp_timeout,
        executor=MCP_EXECUTOR,
    )


def _visible(config: AgentConfig, server: str, tool: str) -> bool:
    allow = config.mcp_allow.get(server)
    if allow is not None and not _matches(tool, allow):
        return False
    return not _matches(tool, config.mcp_deny.get(server, ()))


def _matches(name: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def _setting(settings: Mapping[str, _V], keys: Sequence[str], default: _V) -> _V:
    return next((settings[k] for k in keys if k in settings), default)


def _safe(name: str) -> str:
    """A name every chat API accepts (letters, digits, ``_``, ``-``; 64 at most)."""
    return _UNSAFE.sub("_", name)[:_MAX_NAME] or "tool"


def _server_of(exc: ActivityError, servers: Sequence[str]) -> str:
    activity_type = exc.activity_type or ""
    return next((s for s in servers if activity_type.startswith(f"smyth.mcp.{s}.")), "?")
