"""Tools: the ``@tool`` decorator, tool specs, and what a running tool can know."""

from smyth_temporal.tools._context import ToolContext, tool_context
from smyth_temporal.tools._tool import Tool, tool
from smyth_temporal.types.tools import ToolEffect

__all__ = ["Tool", "ToolContext", "ToolEffect", "tool", "tool_context"]
