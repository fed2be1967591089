"""The interface of whatever runs a tool call: ``ToolExecutor``."""

from __future__ import annotations

from typing import Any, Protocol

from smyth_temporal.tools._tool import Tool
from smyth_temporal.types.messages import ToolCall

__all__ = ["ToolExecutor"]


class ToolExecutor(Protocol):
    """Runs validated (and, if gated, approved) calls of the tools that name it.

    ``@tool`` functions run as activities; the built-in tools, tools an agent class
    runs itself (``@tool(executor=...)`` with ``AgentWorkflow.tool_executors``) and MCP
    tools have executors of their own. Executors run in workflow code: they schedule
    activities or child workflows, never I/O of their own.

    Added in 0.3.0.
    """

    async def __call__(self, spec: Tool, call: ToolCall, arguments: dict[str, Any]) -> str:
        """Run the call and return the text the model sees.

        Raises:
            ToolCallError: The call failed; the message is reported to the model.
        """
        ...
