"""Pin the exported API, so that a change to it is a decision, not an accident."""

from __future__ import annotations

import smyth_temporal
import smyth_temporal.testing
from smyth_temporal import exceptions


def test_top_level_exports() -> None:
    assert sorted(smyth_temporal.__all__) == [
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
    for name in smyth_temporal.__all__:
        assert hasattr(smyth_temporal, name), name


def test_testing_exports() -> None:
    for name in ("ScriptedModel", "tool_call", "reply", "raw_tool_call", "FakeOpenAIServer"):
        assert name in smyth_temporal.testing.__all__
    for name in smyth_temporal.testing.__all__:
        assert hasattr(smyth_temporal.testing, name), name


def test_exception_tree() -> None:
    classes = [name for name in exceptions.__all__ if isinstance(getattr(exceptions, name), type)]
    tree = {
        name: [base.__name__ for base in getattr(exceptions, name).__bases__] for name in classes
    }
    assert tree == {
        "AccessDeniedError": ["ClientError"],
        "AgentFailedError": ["ClientError"],
        "AgentInterruptedError": ["RunError"],
        "AgentNotFoundError": ["ClientError"],
        "AgentPausedError": ["ClientError"],
        "PauseUnavailableError": ["ClientError"],
        "ClientError": ["SmythError"],
        "ConfigurationError": ["UserError"],
        "ForkError": ["ClientError"],
        "RewindError": ["ClientError"],
        "InvalidDecisionError": ["ClientError"],
        "InvalidInterruptError": ["ClientError"],
        "InvalidMessageError": ["ClientError"],
        "ApprovalExpiredError": ["RunError"],
        "BudgetExceededError": ["RunError"],
        "MemoryNotFoundError": ["RunError"],
        "MCPServerError": ["RunError"],
        "ModelError": ["RunError"],
        "RunError": ["SmythError"],
        "ToolArgumentsError": ["ToolCallError", "ValueError"],
        "ToolCallError": ["RunError"],
        "ModelHTTPError": ["ModelError"],
        "PayloadDecryptionError": ["SmythError"],
        "ScheduleExistsError": ["ClientError"],
        "ScheduleNotFoundError": ["ClientError"],
        "ServerUnavailableError": ["ClientError"],
        "SmythError": ["Exception"],
        "ToolDefinitionError": ["UserError"],
        "UnknownAgentError": ["ClientError"],
        "UserError": ["SmythError"],
    }
    # Every class in the tree is drawn in the module docstring.
    for name in classes:
        assert name in (exceptions.__doc__ or ""), name


def test_failure_types_name_classes_of_the_tree() -> None:
    # A failure's type is the class name, and the class is found again from it.
    error = exceptions.application_error(exceptions.MemoryNotFoundError("no memory m-1"))
    assert (error.type, error.message, error.non_retryable) == (
        "MemoryNotFoundError",
        "no memory m-1",
        True,
    )
    assert exceptions.error_type(error.type) is exceptions.MemoryNotFoundError
    assert exceptions.error_type("ValueError") is None
    assert exceptions.error_type(None) is None


def test_wire_types_exports() -> None:
    import smyth_temporal.types as types

    for name in types.__all__:
        assert hasattr(types, name), name
    assert sorted(types.__all__) == sorted(set(types.__all__))


def test_observability_exports() -> None:
    import smyth_temporal.observability as observability

    assert sorted(observability.__all__) == [
        "AgentRunInterceptor",
        "TRACER_NAME",
        "configure_tracing",
        "prometheus_runtime",
        "tracing_interceptors",
    ]
    for name in observability.__all__:
        assert hasattr(observability, name), name
