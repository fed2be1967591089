"""The wire types: every value that crosses a workflow, activity or client boundary.

Pure data (pydantic models, literals, names of handlers and activities). This package
imports nothing that does I/O, so workflow code, activities, providers and clients
can all depend on it and on nothing above it.

- ``messages``: the conversation (``Message``, ``ToolCall``, ``Usage``).
- ``agent``: a run's input, result, state and checkpoint.
- ``approvals``, ``sessions``: what people and apps send to a running agent;
  ``quorum``: how decisions on a request made under a policy are counted.
- ``model``, ``tools``, ``memory``, ``mcp``: what the workflow hands to its activities.
- ``compaction``: the lineage record of a summary.
- ``events``: what a run publishes to its event stream (``AgentEvent``).
- ``visibility``: the search attributes and memo keys agents publish.
- ``audit``: an agent's audit trail (``AuditTrail``), read from history.
- ``secrets``: ``secret("NAME")``, a credential by name, resolved on workers.
- ``versions``: what a model step ran with (``StepVersions``).
"""

from smyth_temporal.types.agent import (
    INTERRUPT_UPDATE,
    TERMINAL_STATUSES,
    AgentCheckpoint,
    AgentInput,
    AgentLimits,
    AgentResult,
    AgentState,
    AgentStatus,
    Interrupt,
    InterruptOutcome,
)
from smyth_temporal.types.approvals import (
    APPROVAL_SIGNAL,
    APPROVAL_UPDATE,
    ApprovalDecision,
    ApprovalOutcome,
    ApprovalRequest,
    ApprovalReview,
    ApprovalRule,
    ApprovalStatus,
    EscalationStep,
    ReviewRequest,
    ReviewVerdict,
    arguments_sha256,
)
from smyth_temporal.types.audit import AuditEntry, AuditKind, AuditTrail
from smyth_temporal.types.compaction import Compaction
from smyth_temporal.types.events import (
    EVENTS_TOPIC,
    AgentEvent,
    ApprovalDecided,
    ApprovalEscalated,
    ApprovalExpired,
    ApprovalRequested,
    ApprovalVoted,
    CompactionDone,
    ContinuedAsNew,
    EventKind,
    EventsMissed,
    MessageCompleted,
    NotificationFailed,
    RunFinished,
    RunStarted,
    StatusChanged,
    TextAssembler,
    TextDelta,
    TextReset,
    ToolCallFinished,
    ToolCallScheduled,
    TurnFinished,
    TurnStarted,
    UsageReported,
    parse_event,
)
from smyth_temporal.types.mcp import (
    MCP_IDEMPOTENCY_KEY_META,
    MCPCallOutcome,
    MCPCallRequest,
    MCPListRequest,
    MCPToolAnnotations,
    MCPToolInfo,
    MCPToolList,
)
from smyth_temporal.types.memory import MemoryHit, MemoryRecord, MemoryScope, Provenance
from smyth_temporal.types.messages import Message, Role, ToolCall, Usage
from smyth_temporal.types.model import MODEL_ACTIVITY, ModelRequest, ModelResponse
from smyth_temporal.types.notifications import (
    NOTIFY_ACTIVITY,
    ApprovalNotice,
    NoticeKind,
    NotificationReceipt,
)
from smyth_temporal.types.sessions import (
    CLOSE_SESSION_SIGNAL,
    SESSION_EVENT_SIGNAL,
    SESSION_MESSAGE_UPDATE,
    SessionMessage,
    SessionReply,
    WhileBusy,
    session_workflow_id,
)
from smyth_temporal.types.tools import OnTimeout, ToolEffect, ToolInvocation, ToolOutcome
from smyth_temporal.types.versions import VERSIONS_KEPT, StepVersions

__all__ = [
    "APPROVAL_SIGNAL",
    "APPROVAL_UPDATE",
    "CLOSE_SESSION_SIGNAL",
    "EVENTS_TOPIC",
    "INTERRUPT_UPDATE",
    "MCP_IDEMPOTENCY_KEY_META",
    "MODEL_ACTIVITY",
    "NOTIFY_ACTIVITY",
    "SESSION_EVENT_SIGNAL",
    "SESSION_MESSAGE_UPDATE",
    "TERMINAL_STATUSES",
    "VERSIONS_KEPT",
    "AgentCheckpoint",
    "AgentEvent",
    "AgentInput",
    "AgentLimits",
    "AgentResult",
    "AgentState",
    "AgentStatus",
    "ApprovalDecided",
    "ApprovalDecision",
    "ApprovalEscalated",
    "ApprovalExpired",
    "ApprovalNotice",
    "ApprovalOutcome",
    "ApprovalRequest",
    "ApprovalRequested",
    "ApprovalReview",
    "ApprovalRule",
    "ApprovalStatus",
    "ApprovalVoted",
    "AuditEntry",
    "AuditKind",
    "AuditTrail",
    "Compaction",
    "CompactionDone",
    "ContinuedAsNew",
    "EscalationStep",
    "EventKind",
    "EventsMissed",
    "Interrupt",
    "InterruptOutcome",
    "MCPCallOutcome",
    "MCPCallRequest",
    "MCPListRequest",
    "MCPToolAnnotations",
    "MCPToolInfo",
    "MCPToolList",
    "MemoryHit",
    "MemoryRecord",
    "MemoryScope",
    "Message",
    "MessageCompleted",
    "ModelRequest",
    "ModelResponse",
    "NoticeKind",
    "NotificationFailed",
    "NotificationReceipt",
    "OnTimeout",
    "Provenance",
    "ReviewRequest",
    "ReviewVerdict",
    "Role",
    "RunFinished",
    "RunStarted",
    "SessionMessage",
    "SessionReply",
    "StatusChanged",
    "StepVersions",
    "TextAssembler",
    "TextDelta",
    "TextReset",
    "ToolCall",
    "ToolCallFinished",
    "ToolCallScheduled",
    "ToolEffect",
    "ToolInvocation",
    "ToolOutcome",
    "TurnFinished",
    "TurnStarted",
    "Usage",
    "UsageReported",
    "WhileBusy",
    "arguments_sha256",
    "parse_event",
    "session_workflow_id",
]
