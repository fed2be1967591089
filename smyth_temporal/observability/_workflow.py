"""Spans made from workflow code: the agent run's span and the hooks' spans.

A workflow cannot hold a span open across tasks (a replay would open it again), so,
as ``temporalio.contrib.opentelemetry`` does for its own workflow spans, these are
completed spans of zero length, made only when the workflow is not replaying.
"""

from __future__ import annotations

from typing import Any

import temporalio.worker
from temporalio import workflow
from temporalio.contrib.opentelemetry import TracingWorkflowInboundInterceptor
from temporalio.contrib.opentelemetry import workflow as otel_workflow
from temporalio.exceptions import FailureError

from smyth_temporal._telemetry import SpanAttributes, completed_span
from smyth_temporal.types.agent import AgentInput, AgentResult

__all__ = ["AgentRunInterceptor", "emit_span"]


def emit_span(name: str, attributes: SpanAttributes) -> None:
    """The span sink of ``smyth_temporal._telemetry``: a span in the run's trace.

    Nothing happens unless ``TracingInterceptor`` runs this workflow (it puts its
    workflow interceptor on the OpenTelemetry context), so a worker without tracing
    makes no span even if another part of the process installed the sink.
    """
    if TracingWorkflowInboundInterceptor._from_context() is None:
        return
    otel_workflow.completed_span(name, attributes=dict(attributes))


class AgentRunInterceptor(temporalio.worker.Interceptor):
    """Adds an ``invoke_agent <Agent>`` span, with the run's totals, when a run ends.

    Goes after ``TracingInterceptor`` (inside it), whose context the span joins.

    Added in 0.5.0.
    """

    def workflow_interceptor_class(
        self, input: temporalio.worker.WorkflowInterceptorClassInput
    ) -> type[temporalio.worker.WorkflowInboundInterceptor] | None:
        """The inbound interceptor of every workflow; it acts on agents only."""
        return _AgentRunInbound


class _AgentRunInbound(temporalio.worker.WorkflowInboundInterceptor):
    async def execute_workflow(self, input: temporalio.worker.ExecuteWorkflowInput) -> Any:
        agent_input = input.args[0] if input.args else None
        if not isinstance(agent_input, AgentInput):
            return await super().execute_workflow(input)
        try:
            result = await super().execute_workflow(input)
        except workflow.ContinueAsNewError:
            _run_span(agent_input, None, "continued_as_new")
            raise
        except FailureError:
            # Only failures end the run; any other exception fails the workflow task,
            # which Temporal retries, and the retry would make the span again.
            _run_span(agent_input, None, "failed")
            raise
        if isinstance(result, AgentResult):
            _run_span(agent_input, result, result.status)
        return result


def _run_span(agent_input: AgentInput, result: AgentResult | None, status: str) -> None:
    info = workflow.info()
    attributes: dict[str, str | bool | int | float] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": info.workflow_type,
        "gen_ai.conversation.id": info.workflow_id,
        "smyth.tenant": agent_input.tenant,
        "smyth.status": status,
    }
    config = getattr(workflow.instance(), "config", None)
    model = getattr(config, "model", None)
    if isinstance(model, str):
        attributes["gen_ai.request.model"] = model
    if result is not None:
        attributes.update(
            {
                "smyth.steps": result.steps,
                "gen_ai.usage.input_tokens": result.usage.input_tokens,
                "gen_ai.usage.output_tokens": result.usage.output_tokens,
                "smyth.cost": result.usage.cost,
                "smyth.tool_calls": result.usage.tool_calls,
            }
        )
    completed_span(f"invoke_agent {info.workflow_type}", attributes)
