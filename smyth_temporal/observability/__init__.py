"""Traces and metrics of agents: OpenTelemetry spans and a Prometheus endpoint.

- ``tracing_interceptors`` (what ``SmythPlugin(tracing=True)`` adds): Temporal's
  ``TracingInterceptor`` plus smyth's agent-run span; the model and tool activities
  put the GenAI semantic-convention attributes on their spans. Replay-safe: workflow
  spans are made only when a workflow does not replay.
- ``configure_tracing``: a tracer provider exporting over OTLP (the collector).
- ``prometheus_runtime``: a Temporal ``Runtime`` serving ``/metrics``, Temporal's
  worker metrics and smyth's (``smyth worker --metrics``; it needs no extra).

Metric names are the constants of ``smyth_temporal._telemetry`` (workflow side) and
``smyth_temporal.activities._telemetry`` (model and tool calls).

It needs the ``otel`` extra (the OpenTelemetry SDK and OTLP exporter): importing it
without them fails with the command that installs them.

Added in 0.5.0.
"""

try:
    import opentelemetry.exporter.otlp.proto.http
    import opentelemetry.sdk.trace  # noqa: F401
except ImportError as exc:
    raise ImportError(
        "smyth_temporal.observability needs the otel extra: pip install 'smyth-temporal[otel]'"
    ) from exc

from smyth_temporal._prometheus import prometheus_runtime
from smyth_temporal.observability._tracing import (
    TRACER_NAME,
    configure_tracing,
    tracing_interceptors,
)
from smyth_temporal.observability._workflow import AgentRunInterceptor

__all__ = [
    "TRACER_NAME",
    "AgentRunInterceptor",
    "configure_tracing",
    "prometheus_runtime",
    "tracing_interceptors",
]
