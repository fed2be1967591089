"""Telemetry hooks for workflow code: replay-safe metrics, and spans when tracing is on.

Workflow code (approvals, compaction, continue-as-new) calls these; they add no
command to history, so recorded histories replay unchanged. Metrics go through
``workflow.metric_meter()``, which Temporal skips while a workflow replays, so a
worker restart counts nothing twice; they show wherever the worker's ``Runtime``
exports metrics (``smyth worker --metrics``). Spans go to a sink that
``smyth_temporal.observability`` installs (it needs the ``otel`` extra); without it,
or while replaying, no span is made. Outside a workflow (unit tests of the
components) every hook does nothing.

Added in 0.5.0.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import timedelta

from temporalio import workflow

__all__ = [
    "APPROVALS_DECIDED",
    "APPROVALS_REQUESTED",
    "APPROVAL_WAIT",
    "COMPACTIONS",
    "CONTINUE_AS_NEW",
    "SpanAttributes",
    "SpanSink",
    "approval_decided",
    "approval_requested",
    "compacted",
    "completed_span",
    "continued_as_new",
    "set_span_sink",
]

APPROVALS_REQUESTED = "smyth_approvals_requested"
"""Counter of approval requests (labels ``tool``); waiting = requested - decided."""
APPROVALS_DECIDED = "smyth_approvals_decided"
"""Counter of approval decisions (labels ``tool``, ``outcome``)."""
APPROVAL_WAIT = "smyth_approval_wait_seconds"
"""Histogram of how long a request waited for its decision (labels ``tool``, ``outcome``)."""
COMPACTIONS = "smyth_compactions"
"""Counter of context compactions (labels ``tenant``, ``fallback``)."""
CONTINUE_AS_NEW = "smyth_continue_as_new"
"""Counter of continue-as-new (no label besides the workflow type)."""

SpanAttributes = Mapping[str, str | bool | int | float]
"""Attributes of a span, as OpenTelemetry takes them."""
SpanSink = Callable[[str, SpanAttributes], None]
"""Makes a completed span in the current workflow's trace."""

_sink: SpanSink | None = None


def set_span_sink(sink: SpanSink | None) -> None:
    """Install what ``completed_span`` hands spans to (``None``: no spans).

    Called once per process by ``smyth_temporal.observability``.
    """
    global _sink
    _sink = sink


def completed_span(name: str, attributes: SpanAttributes) -> None:
    """A zero-length span in the run's trace, made only the first time (never on replay)."""
    if _sink is None or not workflow.in_workflow() or workflow.unsafe.is_replaying():
        return
    _sink(name, attributes)


def approval_requested(tool: str) -> None:
    """Count an approval request for ``tool``."""
    if not workflow.in_workflow():
        return
    meter = workflow.metric_meter()
    meter.create_counter(APPROVALS_REQUESTED, "Approval requests made.").add(1, {"tool": tool})


def approval_decided(tool: str, outcome: str, waited: timedelta) -> None:
    """Count a decision on a request for ``tool`` and how long it waited.

    Args:
        tool: The gated tool.
        outcome: ``approved``, ``rejected`` or ``expired``.
        waited: From the request to the decision (workflow time).
    """
    if not workflow.in_workflow():
        return
    labels = {"tool": tool, "outcome": outcome}
    meter = workflow.metric_meter()
    meter.create_counter(APPROVALS_DECIDED, "Approval requests decided.").add(1, labels)
    seconds = max(waited.total_seconds(), 0.0)
    meter.create_histogram_float(
        APPROVAL_WAIT, "How long approval requests waited for a decision.", "s"
    ).record(seconds, labels)
    completed_span(
        f"approval {tool}",
        {
            "gen_ai.tool.name": tool,
            "smyth.approval.outcome": outcome,
            "smyth.approval.wait_seconds": seconds,
        },
    )


def compacted(tenant: str, *, fallback: bool) -> None:
    """Count a compaction of ``tenant``'s agent's context."""
    if not workflow.in_workflow():
        return
    workflow.metric_meter().create_counter(COMPACTIONS, "Context compactions.").add(
        1, {"tenant": tenant, "fallback": str(fallback).lower()}
    )


def continued_as_new() -> None:
    """Count a continue-as-new of the current run."""
    if not workflow.in_workflow():
        return
    workflow.metric_meter().create_counter(CONTINUE_AS_NEW, "Runs continued as new.").add(1)
