"""smyth-temporal: durable, long-running AI agents on Temporal.

Agents are workflow classes (``AgentWorkflow``); every model call and every tool call
is an activity, so Temporal's event history is the agent's state, and crash recovery,
retries, timeouts and the audit trail come from the engine.

Layers, top to bottom (imports only go downward; this is the list ``LAYERS`` of
``tests/architecture/test_architecture.py``, which checks the imports and this text):

1. interfaces: ``cli``, ``demo``, ``gateway``, ``codec_server``, ``mcp_server``
2. clients and workers: ``clients`` (``AgentClient``, ``MemoryClient``,
   ``ScheduleClient``), ``worker``, ``plugin`` (``SmythPlugin`` wires the layers below
   into a Temporal client and its workers), ``testing``, ``devserver``, and the plugin's
   ``_passthrough``, ``_model_queue``, ``_probe``
3. agent runtime (workflow code, deterministic): ``agent``
4. context engine and worker-side activities: ``context`` (pure), ``activities``,
   ``mcp``, ``a2a``, ``notifications``
5. tools and providers: ``tools`` (``@tool``), ``memory``, ``models``, ``storage``,
   ``security``, ``observability``, ``_live``
6. wire types and shared helpers: ``types``, ``exceptions``, ``settings``, ``_names``,
   ``_logging``, ``_text``, ``_payloads``, ``_files``, ``_redaction``, ``_telemetry``,
   ``_prometheus``

Each package has one public face: its ``__init__`` (or a public module, such as
``clients.agents``); a module whose name starts with ``_`` is private to its package and
imported from nowhere else. The top-level ``_`` modules are private to smyth_temporal:
any of its modules may import them, code outside it may not.

Importing this package loads only the deterministic layers (agent runtime, tools,
types, exceptions), so workflow modules can import it inside Temporal's sandbox; the
clients, the plugin and the settings load when first used.
"""

from typing import TYPE_CHECKING, Any

from smyth_temporal._logging import configure_logging
from smyth_temporal.agent import AgentConfig, AgentWorkflow
from smyth_temporal.exceptions import (
    AccessDeniedError,
    AgentFailedError,
    AgentInterruptedError,
    AgentNotFoundError,
    AgentPausedError,
    ApprovalExpiredError,
    ClientError,
    ConfigurationError,
    InvalidDecisionError,
    InvalidInterruptError,
    InvalidMessageError,
    MCPServerError,
    MemoryNotFoundError,
    ModelError,
    ModelHTTPError,
    PauseUnavailableError,
    PayloadDecryptionError,
    RunError,
    ScheduleExistsError,
    ScheduleNotFoundError,
    ServerUnavailableError,
    SmythError,
    ToolCallError,
    ToolDefinitionError,
    UnknownAgentError,
    UserError,
)
from smyth_temporal.tools import (
    ApprovalPolicy,
    Reconciled,
    Reviewer,
    Tool,
    ToolContext,
    ToolExecutor,
    tool,
    tool_context,
)
from smyth_temporal.types import (
    AgentCheckpoint,
    AgentEvent,
    AgentInput,
    AgentLimits,
    AgentResult,
    AgentState,
    AgentStatus,
    ApprovalDecision,
    ApprovalOutcome,
    ApprovalRequest,
    Compaction,
    EscalationStep,
    MemoryHit,
    MemoryRecord,
    Message,
    SessionMessage,
    SessionReply,
    ToolCall,
    ToolEffect,
    Usage,
)
from smyth_temporal.types.secrets import SecretRef, secret

if TYPE_CHECKING:
    from smyth_temporal.a2a import a2a_agent
    from smyth_temporal.clients import (
        AgentClient,
        MemoryClient,
        PendingApproval,
        ScheduleClient,
        ScheduledRun,
        ScheduleSummary,
    )
    from smyth_temporal.plugin import SmythPlugin
    from smyth_temporal.security import Principal
    from smyth_temporal.settings import Settings

__version__ = "0.11.0"

_LAZY = {
    "a2a_agent": "smyth_temporal.a2a",
    "AgentClient": "smyth_temporal.clients",
    "MemoryClient": "smyth_temporal.clients",
    "PendingApproval": "smyth_temporal.clients",
    "ScheduleClient": "smyth_temporal.clients",
    "ScheduleSummary": "smyth_temporal.clients",
    "ScheduledRun": "smyth_temporal.clients",
    "Principal": "smyth_temporal.security",
    "Settings": "smyth_temporal.settings",
    "SmythPlugin": "smyth_temporal.plugin",
}
"""Public names whose modules do I/O or import the Temporal client: loaded on first use."""


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'smyth_temporal' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "AccessDeniedError",
    "AgentCheckpoint",
    "AgentClient",
    "AgentConfig",
    "AgentEvent",
    "AgentFailedError",
    "AgentInput",
    "AgentInterruptedError",
    "AgentLimits",
    "AgentNotFoundError",
    "AgentPausedError",
    "AgentResult",
    "AgentState",
    "AgentStatus",
    "AgentWorkflow",
    "ApprovalDecision",
    "ApprovalExpiredError",
    "ApprovalOutcome",
    "ApprovalPolicy",
    "ApprovalRequest",
    "ClientError",
    "Compaction",
    "ConfigurationError",
    "EscalationStep",
    "InvalidDecisionError",
    "InvalidInterruptError",
    "InvalidMessageError",
    "MCPServerError",
    "MemoryClient",
    "MemoryHit",
    "MemoryNotFoundError",
    "MemoryRecord",
    "Message",
    "ModelError",
    "ModelHTTPError",
    "PauseUnavailableError",
    "PayloadDecryptionError",
    "PendingApproval",
    "Principal",
    "Reconciled",
    "Reviewer",
    "RunError",
    "ScheduleClient",
    "ScheduleExistsError",
    "ScheduleNotFoundError",
    "ScheduleSummary",
    "ScheduledRun",
    "SecretRef",
    "ServerUnavailableError",
    "SessionMessage",
    "SessionReply",
    "Settings",
    "SmythError",
    "SmythPlugin",
    "Tool",
    "ToolCall",
    "ToolCallError",
    "ToolContext",
    "ToolDefinitionError",
    "ToolEffect",
    "ToolExecutor",
    "UnknownAgentError",
    "Usage",
    "UserError",
    "__version__",
    "a2a_agent",
    "configure_logging",
    "secret",
    "tool",
    "tool_context",
]
