"""Tools: the ``@tool`` decorator, tool specs, executors, and what a running tool can know.

Workflow-side and pure: a ``Tool`` is data plus the user's function; workflow code
reads its schema, validates arguments and hands the call to the tool's executor (its
activity, for ``@tool`` functions; see ``smyth_temporal.activities`` for the worker
side). ``tool_context()`` is what a tool function reads inside its activity, and
``serving_tool_call(context)`` what sets it (the activity does; so can a test).
``MCPTool`` is a tool of an MCP server, as an agent offers it (see ``agent.mcp``);
``effect_from_annotations`` and ``is_destructive`` read a server's annotations.

The defaults a ``@tool`` takes (``DEFAULT_TOOL_TIMEOUT``,
``DEFAULT_TOOL_HEARTBEAT_TIMEOUT``), ``ApprovalPolicy`` (who approves which calls, with
its ``Reviewer``; ``ApprovalRequirement``, what ``requires_approval`` takes) and
the executor names (``ACTIVITY_EXECUTOR``, ``MCP_EXECUTOR``) are here too, and
``ARGUMENT_BOUNDS_PATCH``, the ``workflow.patched`` id agents validate arguments under.
``Reconciled`` is what a side-effect tool's ``reconcile`` hook answers (see
``_reconcile``), under ``RECONCILE_PATCH``.
"""

from smyth_temporal.tools._context import ToolContext, serving_tool_call, tool_context
from smyth_temporal.tools._executor import ToolExecutor
from smyth_temporal.tools._mcp import MCP_EXECUTOR, MCPTool, effect_from_annotations, is_destructive
from smyth_temporal.tools._policy import (
    DEFAULT_REVIEW_PROMPT,
    ApprovalPolicy,
    ApprovalRequirement,
    Reviewer,
    policies_reviewers,
)
from smyth_temporal.tools._reconcile import (
    RECONCILE_PATCH,
    RECONCILE_UNKNOWN,
    Reconciled,
    ReconcileFunction,
    reconcile_activity_name,
)
from smyth_temporal.tools._tool import (
    ACTIVITY_EXECUTOR,
    ARGUMENT_BOUNDS_PATCH,
    DEFAULT_TOOL_HEARTBEAT_TIMEOUT,
    DEFAULT_TOOL_TIMEOUT,
    Tool,
    run_blocking,
    tool,
    value_depth,
)
from smyth_temporal.types.tools import ToolEffect

__all__ = [
    "ACTIVITY_EXECUTOR",
    "ARGUMENT_BOUNDS_PATCH",
    "DEFAULT_REVIEW_PROMPT",
    "DEFAULT_TOOL_HEARTBEAT_TIMEOUT",
    "DEFAULT_TOOL_TIMEOUT",
    "MCP_EXECUTOR",
    "RECONCILE_PATCH",
    "RECONCILE_UNKNOWN",
    "ApprovalPolicy",
    "ApprovalRequirement",
    "MCPTool",
    "ReconcileFunction",
    "Reconciled",
    "Reviewer",
    "Tool",
    "ToolContext",
    "ToolEffect",
    "ToolExecutor",
    "effect_from_annotations",
    "is_destructive",
    "policies_reviewers",
    "reconcile_activity_name",
    "run_blocking",
    "serving_tool_call",
    "tool",
    "tool_context",
    "value_depth",
]
