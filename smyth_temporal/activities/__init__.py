"""What workers run: the model activity, one activity per tool, the memory activities.

Worker side only: workflow code schedules these by name (see
``smyth_temporal.agent._commands``) and never imports this package. Each activity
holds its dependencies (a model provider, a memory manager) and calls the providers
below it; errors leave as ``ApplicationError``s classified retryable or not.

- ``ModelActivities``: ``smyth.model.complete``.
- ``tool_activities(tools)``: ``smyth.tool.<name>`` for each ``@tool``.
- ``MemoryActivities``: ``smyth.memory.*``.
- ``auto_heartbeat()``: heartbeats while a long call runs (the MCP activities use it).

Added in 0.3.0 (before, inside ``models``, ``tools`` and ``memory``).
"""

from smyth_temporal.activities._heartbeat import auto_heartbeat
from smyth_temporal.activities.memory import MemoryActivities
from smyth_temporal.activities.model import ModelActivities
from smyth_temporal.activities.tools import render_output, tool_activities

__all__ = [
    "MemoryActivities",
    "ModelActivities",
    "auto_heartbeat",
    "render_output",
    "tool_activities",
]
