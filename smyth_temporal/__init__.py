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
    AgentConfig,
    AgentInput,
    AgentResult,
    AgentState,
    AgentStatus,
    AgentWorkflow,
    Message,
    ToolCall,
    Usage,
)
from smyth_temporal.agent.approvals import ApprovalDecision, ApprovalOutcome, ApprovalRequest
from smyth_temporal.client import AgentClient, PendingApproval
from smyth_temporal.exceptions import (
    AgentFailedError,
    AgentNotFoundError,
    ClientError,
    ConfigurationError,
    InvalidDecisionError,
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
from smyth_temporal.tools import Tool, ToolContext, ToolEffect, tool, tool_context

__version__ = "0.1.0"

__all__ = [
    "AgentClient",
    "AgentConfig",
    "AgentFailedError",
    "AgentInput",
    "AgentNotFoundError",
    "AgentResult",
    "AgentState",
    "AgentStatus",
    "AgentWorkflow",
    "ApprovalDecision",
    "ApprovalOutcome",
    "ApprovalRequest",
    "ClientError",
    "ConfigurationError",
    "InvalidDecisionError",
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
