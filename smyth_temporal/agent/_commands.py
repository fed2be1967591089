"""The activities an agent schedules, by name: the model, tools and memory.

Workflow code. Each function is one ``workflow.execute_activity`` with the options
the agent's config (or the tool) gives; nothing here holds state. Keeping every
activity command in one module makes the agent's command sequence, which recorded
histories pin, easy to audit.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, TypeVar

from temporalio import workflow
from temporalio.common import Priority, RetryPolicy

from smyth_temporal.agent.config import AgentConfig
from smyth_temporal.tools import Reconciled, Tool
from smyth_temporal.types.mcp import (
    MCPCallOutcome,
    MCPCallRequest,
    MCPListRequest,
    MCPToolList,
    mcp_activity_name,
)
from smyth_temporal.types.model import (
    MODEL_ACTIVITY,
    ModelRequest,
    ModelResponse,
    model_task_queue,
)
from smyth_temporal.types.tools import ToolInvocation, ToolOutcome

__all__ = [
    "MCP_LIST_RETRY",
    "MCP_LIST_TIMEOUT",
    "call_mcp_tool",
    "call_memory",
    "call_model",
    "call_reconcile",
    "call_tool_activity",
    "fairness_key",
    "list_mcp_tools",
    "start_model",
]

MCP_LIST_TIMEOUT = timedelta(minutes=1)
"""How long one attempt at listing a server's tools may take (connecting included)."""

MCP_LIST_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=15),
    maximum_attempts=6,
)
"""Listing a server that is down is retried for about half a minute, then the run fails
naming the server: an agent without the tools it was given would answer wrongly."""

_FAIRNESS_KEY_BYTES = 64

_R = TypeVar("_R")


def start_model(
    config: AgentConfig, request: ModelRequest, *, summary: str
) -> workflow.ActivityHandle[ModelResponse]:
    """Start the model activity; a ``summary`` request gets the summarizer's options.

    A handle, so that an interrupt can cancel the call in flight.
    """
    turn = request.purpose == "turn"
    own_queue = config.model_task_queue
    return workflow.start_activity(
        MODEL_ACTIVITY,
        request,
        result_type=ModelResponse,
        task_queue=model_task_queue(workflow.info().task_queue) if own_queue else None,
        start_to_close_timeout=config.model_timeout if turn else config.summary_timeout,
        heartbeat_timeout=config.model_heartbeat_timeout,
        retry_policy=config.model_retry if turn else config.summary_retry,
        summary=summary,
        # Neither the queue nor the priority is part of the command's identity: runs
        # recorded before either existed replay unchanged. So SmythPlugin's workers may
        # keep the call on the agent's queue (eagerly dispatched, 50 ms less a step)
        # while the model queue has no limit (``smyth_temporal._model_queue``).
        priority=Priority(fairness_key=fairness_key(request.tenant)),
    )


def fairness_key(tenant: str) -> str:
    """The tenant as a fairness key (at most 64 bytes, what the server accepts)."""
    encoded = tenant.encode()
    if len(encoded) <= _FAIRNESS_KEY_BYTES:
        return tenant
    return encoded[:_FAIRNESS_KEY_BYTES].decode(errors="ignore")


async def call_model(config: AgentConfig, request: ModelRequest, *, summary: str) -> ModelResponse:
    """Ask the model activity and wait for its answer (see ``start_model``)."""
    return await start_model(config, request, summary=summary)


async def call_tool_activity(spec: Tool, invocation: ToolInvocation) -> ToolOutcome:
    """Run a tool's activity with the tool's own timeouts and retry policy."""
    summary = f"{spec.name} (step {invocation.step})"
    return await _tool_activity(spec, invocation, ToolOutcome, summary)


async def call_reconcile(spec: Tool, invocation: ToolInvocation) -> Reconciled:
    """Ask a tool's reconcile hook (``smyth.reconcile.<tool>``) about an earlier call.

    An ordinary activity with the tool's timeouts and retry policy: the hook only looks
    the call up, so retrying it is safe. Added in 0.10.0.
    """
    result: Reconciled = await workflow.execute_activity(
        spec.reconcile_activity_name,
        invocation,
        result_type=Reconciled,
        start_to_close_timeout=spec.timeout,
        heartbeat_timeout=spec.heartbeat_timeout,
        retry_policy=spec.retry,
        summary=f"reconcile {spec.name} (step {invocation.step})",
    )
    return result


async def _tool_activity(spec: Tool, argument: Any, result_type: type[_R], summary: str) -> _R:
    """Run ``spec``'s activity (a ``@tool`` or an MCP call) with the tool's own options.

    A ``local`` tool runs as a local activity of the same name: in this worker, recorded
    as a marker, without a round trip through the task queue (and without heartbeats).
    """
    if spec.local:
        local: _R = await workflow.execute_local_activity(
            spec.activity_name,
            argument,
            result_type=result_type,
            start_to_close_timeout=spec.timeout,
            retry_policy=spec.retry,
            summary=summary,
        )
        return local
    result: _R = await workflow.execute_activity(
        spec.activity_name,
        argument,
        result_type=result_type,
        start_to_close_timeout=spec.timeout,
        heartbeat_timeout=spec.heartbeat_timeout,
        retry_policy=spec.retry,
        summary=summary,
    )
    return result


async def call_memory(
    config: AgentConfig, name: str, request: Any, result_type: type[_R] | Any, summary: str
) -> _R:
    """Run one memory activity (remember, recall, forget, supersede)."""
    result: _R = await workflow.execute_activity(
        name,
        request,
        result_type=result_type,
        start_to_close_timeout=config.memory_timeout,
        summary=summary,
    )
    return result


async def list_mcp_tools(request: MCPListRequest, heartbeat_timeout: timedelta) -> MCPToolList:
    """List one MCP server's tools (every page) through its ``list_tools`` activity."""
    listed: MCPToolList = await workflow.execute_activity(
        mcp_activity_name(request.server, "list_tools"),
        request,
        result_type=MCPToolList,
        start_to_close_timeout=MCP_LIST_TIMEOUT,
        heartbeat_timeout=heartbeat_timeout,
        retry_policy=MCP_LIST_RETRY,
        summary=f"list the tools of MCP server {request.server}",
    )
    return listed


async def call_mcp_tool(spec: Tool, request: MCPCallRequest) -> MCPCallOutcome:
    """Run one MCP tool call through its server's ``call_tool`` activity."""
    summary = f"{spec.name} on {request.server} (step {request.invocation.step})"
    return await _tool_activity(spec, request, MCPCallOutcome, summary)
