"""Tracing: Temporal's OpenTelemetry interceptor, smyth's spans, and an OTLP setup."""

from __future__ import annotations

import temporalio.client
import temporalio.worker
from opentelemetry import trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from temporalio.contrib.opentelemetry import TracingInterceptor

from smyth_temporal._telemetry import set_span_sink
from smyth_temporal.observability._workflow import AgentRunInterceptor, emit_span
from smyth_temporal.settings import ObservabilitySettings

__all__ = ["TRACER_NAME", "configure_tracing", "tracing_interceptors"]

TRACER_NAME = "smyth_temporal"
"""The instrumentation scope of smyth's spans."""


def tracing_interceptors(
    tracer_provider: trace.TracerProvider | None = None,
) -> list[temporalio.client.Interceptor | temporalio.worker.Interceptor]:
    """The interceptors that trace agents: give them to a client, its workers inherit them.

    ``temporalio.contrib.opentelemetry.TracingInterceptor`` makes the spans of starts,
    workflows and activities, and carries the trace context through Temporal headers,
    so one run is one trace (when the client that starts it traces too). Workflow
    spans are made only when the workflow is not replaying: a worker restart adds no
    duplicate. ``AgentRunInterceptor`` adds the agent run's span; the model and tool
    activities add the GenAI attributes to their spans. ``SmythPlugin(tracing=True)``
    uses this.

    Args:
        tracer_provider: Where spans go (default: OpenTelemetry's global provider,
            see ``configure_tracing``).

    Added in 0.5.0.
    """
    set_span_sink(emit_span)
    tracer = (tracer_provider or trace.get_tracer_provider()).get_tracer(TRACER_NAME)
    return [TracingInterceptor(tracer), AgentRunInterceptor()]


def configure_tracing(
    service_name: str = "smyth-worker",
    *,
    exporter: SpanExporter | None = None,
    set_global: bool = True,
) -> TracerProvider:
    """A tracer provider that batches spans to an exporter, set as the global one.

    Args:
        service_name: The ``service.name`` resource attribute (``OTEL_SERVICE_NAME``
            wins when set).
        exporter: Where spans go. Default: OTLP over HTTP to
            ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``;
            ``http://localhost:4318`` when unset), e.g. the collector of
            ``docker-compose.yml``.
        set_global: Make it OpenTelemetry's global tracer provider (which can be set
            once per process).

    Returns:
        The provider; it flushes its spans when the process exits.

    Added in 0.5.0.
    """
    if exporter is None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter()
    name = ObservabilitySettings.load().otel_service_name or service_name
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: name}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    if set_global:
        trace.set_tracer_provider(provider)
    return provider
