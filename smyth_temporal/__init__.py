"""smyth-temporal: durable, long-running AI agents on Temporal.

Agents are workflow classes (``AgentWorkflow``); every model call and every tool call
is an activity, so Temporal's event history is the agent's state, and crash recovery,
retries, timeouts and the audit trail come from the engine.

Layers, top to bottom (imports only go downward):

- interfaces: ``AgentClient`` (and its ``ScheduleClient``), the ``smyth`` CLI
- agent runtime (workflow code): ``AgentWorkflow``, ``AgentConfig`` and the data types
- tools: ``@tool``, ``tool_context()``
- providers (worker side only): ``smyth_temporal.models``
- ``SmythPlugin`` wires them into a Temporal client and its workers.
"""

from smyth_temporal._memory_client import MemoryClient
from smyth_temporal._schedules import ScheduleClient, ScheduledRun, ScheduleSummary
from smyth_temporal.agent import (
    AgentCheckpoint,
    AgentConfig,
    AgentInput,
    AgentLimits,
    AgentResult,
    AgentState,
    AgentStatus,
    AgentWorkflow,
    Message,
    ToolCall,
    Usage,
)
from smyth_temporal.client import AgentClient, PendingApproval
from smyth_temporal.exceptions import (
    AgentFailedError,
    AgentNotFoundError,
    ClientError,
    ConfigurationError,
    InvalidDecisionError,
    InvalidMessageError,
    ModelError,
    ModelHTTPError,
    ScheduleExistsError,
    ScheduleNotFoundError,
    ServerUnavailableError,
    SmythError,
    ToolDefinitionError,
    UnknownAgentError,
    UserError,
)
from smyth_temporal.memory import MemoryHit, MemoryRecord
from smyth_temporal.plugin import SmythPlugin
from smyth_temporal.settings import Settings
from smyth_temporal.tools import Tool, ToolContext, tool, tool_context
from smyth_temporal.types.approvals import ApprovalDecision, ApprovalOutcome, ApprovalRequest
from smyth_temporal.types.compaction import Compaction
from smyth_temporal.types.sessions import SessionMessage, SessionReply
from smyth_temporal.types.tools import ToolEffect

__version__ = "0.2.0"

__all__ = [
    "AgentCheckpoint",
    "AgentClient",
    "AgentConfig",
    "AgentFailedError",
    "AgentInput",
    "AgentLimits",
    "AgentNotFoundError",
    "AgentResult",
    "AgentState",
    "AgentStatus",
    "AgentWorkflow",
    "ApprovalDecision",
    "ApprovalOutcome",
    "ApprovalRequest",
    "ClientError",
    "Compaction",
    "ConfigurationError",
    "InvalidDecisionError",
    "InvalidMessageError",
    "MemoryClient",
    "MemoryHit",
    "MemoryRecord",
    "Message",
    "ModelError",
    "ModelHTTPError",
    "PendingApproval",
    "ScheduleClient",
    "ScheduleExistsError",
    "ScheduleNotFoundError",
    "ScheduleSummary",
    "ScheduledRun",
    "ServerUnavailableError",
    "SessionMessage",
    "SessionReply",
    "Settings",
    "SmythError",
    "SmythPlugin",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolDefinitionError",
    "ToolEffect",
    "UnknownAgentError",
    "Usage",
    "UserError",
    "__version__",
    "tool",
    "tool_context",
]
