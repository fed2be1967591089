"""Sub-agents as the model sees them (workflow side, pure): the built-in delegate tool."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from smyth_temporal._names import workflow_type_name
from smyth_temporal.exceptions import UserError
from smyth_temporal.tools._tool import Tool, tool

__all__ = ["DELEGATE_TOOL", "delegate_tool_for"]

DELEGATE_TOOL = "delegate"
"""The built-in tool's name."""


async def delegate(agent: str, task: str) -> str:
    """Hand a self-contained task to a sub-agent and get its answer.

    Args:
        agent: The sub-agent's name.
        task: Everything the sub-agent needs to know to do the task.
    """
    raise UserError("the built-in delegate tool is run by the agent itself")


_DELEGATE: Tool = tool(delegate)


@functools.cache
def delegate_tool_for(subagents: tuple[Any, ...]) -> Tool:
    """The delegate tool, its description naming the sub-agents an agent may use.

    Cached, so an agent offers the same tool object (and its cached schema) each turn.
    """
    names = ", ".join(workflow_type_name(a) or a.__qualname__ for a in subagents)
    return dataclasses.replace(
        _DELEGATE, description=f"{_DELEGATE.description} Sub-agents: {names}."
    )
