"""Telemetry of model and tool calls, recorded inside their activities.

Activity code runs once per attempt and never on replay, so what it records is never
duplicated by a worker restart. Two outputs:

- metrics through ``activity.metric_meter()``: they show on the worker's ``Runtime``
  endpoint (``smyth worker --metrics``) next to Temporal's own, and cost nothing when
  the runtime exports no metrics;
- the GenAI semantic-convention attributes on the activity's current span (the one
  ``temporalio.contrib.opentelemetry.TracingInterceptor`` opened), when OpenTelemetry
  is installed (the ``otel`` extra) and a span is recording; otherwise nothing.

Added in 0.5.0.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import activity

from smyth_temporal.types.model import ModelRequest, ModelResponse
from smyth_temporal.types.tools import ToolInvocation

try:
    from opentelemetry import trace as _trace
except ImportError:  # pragma: no cover - without the otel extra there is no span
    _trace = None  # type: ignore[assignment]

__all__ = [
    "MODEL_CALLS",
    "MODEL_COST",
    "MODEL_TOKENS",
    "TOOL_LATENCY",
    "model_called",
    "tool_called",
]

MODEL_CALLS = "smyth_model_calls"
"""Counter of completed model calls (labels ``tenant``, ``model``, ``purpose``)."""
MODEL_TOKENS = "smyth_model_tokens"
"""Counter of tokens (labels ``tenant``, ``model``, ``direction``: input or output)."""
MODEL_COST = "smyth_model_cost"
"""Histogram of what each model call cost (labels ``tenant``, ``model``); its ``_sum``
is the total, in the price table's currency."""
TOOL_LATENCY = "smyth_tool_latency_seconds"
"""Histogram of tool call durations (labels ``tool``, ``effect``, ``outcome``)."""


def model_called(request: ModelRequest, response: ModelResponse) -> None:
    """Record a completed model call: metrics, and the span's GenAI attributes."""
    usage = response.usage
    labels = {"tenant": request.tenant, "model": request.model}
    meter = activity.metric_meter()
    meter.create_counter(MODEL_CALLS, "Completed model calls.").add(
        1, {**labels, "purpose": request.purpose}
    )
    tokens = meter.create_counter(MODEL_TOKENS, "Model tokens.")
    tokens.add(usage.input_tokens, {**labels, "direction": "input"})
    tokens.add(usage.output_tokens, {**labels, "direction": "output"})
    meter.create_histogram_float(MODEL_COST, "What model calls cost.").record(usage.cost, labels)
    _annotate(
        f"chat {request.model}",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": request.model,
            "gen_ai.response.model": response.model or request.model,
            "gen_ai.usage.input_tokens": usage.input_tokens,
            "gen_ai.usage.output_tokens": usage.output_tokens,
            "gen_ai.agent.name": request.agent,
            "smyth.cost": usage.cost,
            "smyth.tenant": request.tenant,
            "smyth.step": request.step,
            "smyth.purpose": request.purpose,
        },
    )


def tool_called(
    invocation: ToolInvocation, *, effect: str, elapsed: timedelta, outcome: str
) -> None:
    """Record a tool call that ended (``outcome``: ``ok`` or ``error``)."""
    labels = {"tool": invocation.tool, "effect": effect, "outcome": outcome}
    activity.metric_meter().create_histogram_float(
        TOOL_LATENCY, "How long tool calls took.", "s"
    ).record(elapsed.total_seconds(), labels)
    _annotate(
        f"execute_tool {invocation.tool}",
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": invocation.tool,
            "gen_ai.tool.call.id": invocation.call_id,
            "gen_ai.agent.name": invocation.agent,
            "smyth.tool.effect": effect,
            "smyth.tool.outcome": outcome,
            "smyth.tenant": invocation.tenant,
            "smyth.step": invocation.step,
        },
    )


def _annotate(name: str, attributes: dict[str, Any]) -> None:
    if _trace is None:
        return
    span = _trace.get_current_span()
    if not span.is_recording():
        return
    # The GenAI conventions name spans "{operation} {model or tool}"; Temporal's
    # "RunActivity:<type>" stays in the attributes.
    attributes["temporalActivityType"] = activity.info().activity_type
    span.update_name(name)
    span.set_attributes(attributes)
