"""MCP tools behind the one tool interface: ``MCPTool`` and the side-effect contract.

Workflow-side and pure. An ``MCPTool`` is a ``Tool`` built from a server's recorded
tool list: its schema is the server's ``inputSchema`` (validated here, in the
workflow, before any call), and its effect and approval rule come from the server's
annotations, read on the safe side, as the MCP specification says a client must.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pydantic

from smyth_temporal.exceptions import UserError
from smyth_temporal.tools._jsonschema import schema_problems
from smyth_temporal.tools._tool import Bounded, Tool
from smyth_temporal.types.mcp import MCPToolAnnotations, mcp_activity_name
from smyth_temporal.types.tools import ToolEffect

__all__ = ["MCP_EXECUTOR", "MCPTool", "effect_from_annotations", "is_destructive"]

MCP_EXECUTOR = "mcp"
"""The executor of MCP tools: the agent's MCP component, through the server's activity."""


def effect_from_annotations(annotations: MCPToolAnnotations | None) -> ToolEffect:
    """The effect class an MCP tool's hints imply.

    ``readOnlyHint`` → ``read_only`` (concurrent, retried); else ``idempotentHint`` →
    ``idempotent``; else ``side_effect`` (only infrastructure failures retried).
    Missing hints take the specification's defaults: not read-only, not idempotent.
    """
    hints = annotations or MCPToolAnnotations()
    if hints.read_only_hint is True:
        return "read_only"
    if hints.idempotent_hint is True:
        return "idempotent"
    return "side_effect"


def is_destructive(annotations: MCPToolAnnotations | None) -> bool:
    """Whether a tool may destroy or overwrite: its calls then need an approval by default.

    The specification's default is destructive, and ``destructiveHint`` means something
    only for a tool that is not read-only.
    """
    hints = annotations or MCPToolAnnotations()
    return hints.read_only_hint is not True and hints.destructive_hint is not False


class _AnyArguments(pydantic.BaseModel):
    """Stands in for the arguments model: MCP arguments are checked against a JSON schema."""

    model_config = pydantic.ConfigDict(extra="allow")


async def _on_server(**arguments: Any) -> Any:
    raise UserError("an MCP tool runs on its server, through the agent's MCP activities")


@dataclass(frozen=True, eq=False)
class MCPTool(Tool):
    """A tool of an MCP server, as one agent offers it to its model.

    Made by the agent runtime (``MCPTool.listed``) from the server's recorded tool list
    and the agent's ``AgentConfig`` (filters, effect and approval overrides); the model
    calls it by ``name``, which is the server's name for it unless two tools would
    share it.

    Added in 0.3.0.
    """

    server: str = ""
    """The server's name on the worker."""
    mcp_name: str = ""
    """The server's name for the tool."""
    input_schema: Mapping[str, Any] = field(default_factory=dict)
    """The JSON schema of its arguments, as the server listed it."""

    @classmethod
    def listed(cls, *, server: str, mcp_name: str, **fields: Any) -> MCPTool:
        """A tool of ``server`` called ``mcp_name`` there; ``fields`` as for ``Tool``."""
        return cls(
            fn=_on_server,
            arguments_model=_AnyArguments,
            server=server,
            mcp_name=mcp_name,
            **fields,
        )

    @property
    def activity_name(self) -> str:
        """The server's ``call_tool`` activity (one per server, not per tool)."""
        return mcp_activity_name(self.server, "call_tool")

    @property
    def qualified_name(self) -> str:
        """``server.tool``: the same tool in every agent, whatever name it is offered as."""
        return f"{self.server}.{self.mcp_name}"

    def schema(self) -> dict[str, Any]:
        """The tool's definition in the chat-completions ``tools`` shape (read-only)."""
        return self._mcp_schema

    @functools.cached_property
    def _mcp_schema(self) -> dict[str, Any]:
        parameters = {k: v for k, v in self.input_schema.items() if k != "title"}
        parameters.setdefault("type", "object")
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": parameters,
            },
        }

    def validate_arguments(
        self, raw: str | Mapping[str, Any], *, bounded: Bounded = True
    ) -> dict[str, Any]:
        """Validate the model's arguments against the server's ``inputSchema``.

        Raises:
            ToolArgumentsError: Not a JSON object, too large or too deeply nested, or
                it does not fit; worded for the model, with the schema.
        """
        self.check_bounds(raw, bounded)  # before json.loads and the schema walk (recursive)
        if isinstance(raw, str):
            try:
                parsed = json.loads(raw or "{}")
            except json.JSONDecodeError as exc:
                raise self.arguments_error([f"(arguments): invalid JSON ({exc.msg})"]) from None
        else:
            parsed = dict(raw)
        if not isinstance(parsed, dict):
            raise self.arguments_error(["(arguments): expected a JSON object"])
        problems = schema_problems(parsed, self.input_schema or {"type": "object"})
        if problems:
            raise self.arguments_error(problems)
        return parsed

    def bind_arguments(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments as keyword arguments of an approval predicate (JSON values)."""
        return dict(arguments)
