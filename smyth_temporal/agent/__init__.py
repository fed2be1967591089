"""The agent runtime (workflow side, deterministic): the base class, its config and data.

``WorkflowLogger`` is the type of ``Run.log``, the logger a run hands its components (a
component an agent's author writes is typed with it): silent while the workflow replays,
it tags each event with the workflow id, run id and agent.
"""

from smyth_temporal._logging import WorkflowLogger
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
    "WorkflowLogger",
]
