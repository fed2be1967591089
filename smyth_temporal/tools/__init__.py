"""Tools: the ``@tool`` decorator, tool specs, executors, and what a running tool can know.

Workflow-side and pure: a ``Tool`` is data plus the user's function; workflow code
reads its schema, validates arguments and hands the call to the tool's executor (its
activity, for ``@tool`` functions; see ``smyth_temporal.activities`` for the worker
side). ``tool_context()`` is what a tool function reads inside its activity.
``MCPTool`` is a tool of an MCP server, as an agent offers it (see ``agent.mcp``).
"""

from smyth_temporal.tools._context import ToolContext, tool_context
from smyth_temporal.tools._executor import ToolExecutor
from smyth_temporal.tools._mcp import MCPTool
from smyth_temporal.tools._tool import ACTIVITY_EXECUTOR, Tool, tool, value_depth
from smyth_temporal.types.tools import ToolEffect

__all__ = [
    "ACTIVITY_EXECUTOR",
    "MCPTool",
    "Tool",
    "ToolContext",
    "ToolEffect",
    "ToolExecutor",
    "tool",
    "tool_context",
    "value_depth",
]
