"""A Temporal ``Runtime`` that serves its metrics, and smyth's, for Prometheus to scrape.

Needs no extra: the endpoint is Temporal's core (Rust) exporter. Kept apart from
``smyth_temporal.observability`` (which needs OpenTelemetry) so that
``smyth worker --metrics`` works on a plain install.

Added in 0.5.0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig

__all__ = ["HISTOGRAM_BUCKETS", "prometheus_runtime"]

HISTOGRAM_BUCKETS: Mapping[str, Sequence[float]] = {
    "smyth_model_cost": (0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0),
    "smyth_tool_latency_seconds": (0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0, 120.0),
    "smyth_approval_wait_seconds": (1.0, 10.0, 60.0, 300.0, 1800.0, 3600.0, 14400.0, 86400.0),
}
"""Bucket bounds for smyth's histograms (the core's defaults suit milliseconds)."""


def prometheus_runtime(bind_address: str) -> Runtime:
    """A Temporal runtime serving ``/metrics`` on ``bind_address`` (``host:port``).

    Give it to the client a worker uses (``Client.connect(..., runtime=runtime)``):
    the endpoint then shows Temporal's worker metrics (``temporal_*``) and the ones
    smyth records (``smyth_*``: model calls, tokens, cost, tool latency, approvals,
    compactions, continue-as-new). Counters carry the OpenMetrics ``_total`` suffix.

    Args:
        bind_address: Where to listen, e.g. ``127.0.0.1:9464`` (``0.0.0.0:9464`` in a
            container).

    Raises:
        RuntimeError: The address is taken or invalid.

    Added in 0.5.0.
    """
    config = PrometheusConfig(
        bind_address=bind_address,
        counters_total_suffix=True,
        histogram_bucket_overrides=HISTOGRAM_BUCKETS,
    )
    return Runtime(telemetry=TelemetryConfig(metrics=config))
