"""Pin the exported API, so that a change to it is a decision, not an accident."""

from __future__ import annotations

import smyth_temporal
import smyth_temporal.testing
from smyth_temporal import exceptions


def test_top_level_exports() -> None:
    assert sorted(smyth_temporal.__all__) == [
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
    for name in smyth_temporal.__all__:
        assert hasattr(smyth_temporal, name), name


def test_testing_exports() -> None:
    for name in ("ScriptedModel", "tool_call", "reply", "raw_tool_call", "FakeOpenAIServer"):
        assert name in smyth_temporal.testing.__all__
    for name in smyth_temporal.testing.__all__:
        assert hasattr(smyth_temporal.testing, name), name


def test_exception_tree() -> None:
    tree = {
        name: [base.__name__ for base in getattr(exceptions, name).__bases__]
        for name in exceptions.__all__
    }
    assert tree == {
        "AgentFailedError": ["ClientError"],
        "AgentNotFoundError": ["ClientError"],
        "ClientError": ["SmythError"],
        "ConfigurationError": ["UserError"],
        "InvalidDecisionError": ["ClientError"],
        "InvalidMessageError": ["ClientError"],
        "ModelError": ["SmythError"],
        "ModelHTTPError": ["ModelError"],
        "ScheduleExistsError": ["ClientError"],
        "ScheduleNotFoundError": ["ClientError"],
        "ServerUnavailableError": ["ClientError"],
        "SmythError": ["Exception"],
        "ToolDefinitionError": ["UserError"],
        "UnknownAgentError": ["ClientError"],
        "UserError": ["SmythError"],
    }
    # Every class in the tree is drawn in the module docstring.
    for name in exceptions.__all__:
        assert name in (exceptions.__doc__ or ""), name
