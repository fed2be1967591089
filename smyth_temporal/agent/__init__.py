"""The agent runtime (workflow side, deterministic): the base class, its config and data."""

from smyth_temporal.agent.config import AgentConfig
from smyth_temporal.agent.workflow import AgentWorkflow
from smyth_temporal.types.agent import (
    AgentCheckpoint,
    AgentInput,
    AgentLimits,
    AgentResult,
    AgentState,
    AgentStatus,
)
from smyth_temporal.types.messages import Message, ToolCall, Usage

__all__ = [
    "AgentCheckpoint",
    "AgentConfig",
    "AgentInput",
    "AgentLimits",
    "AgentResult",
    "AgentState",
    "AgentStatus",
    "AgentWorkflow",
    "Message",
    "ToolCall",
    "Usage",
]
