"""``smyth audit``: what an agent did, across all its runs, read from Temporal's history."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from smyth_temporal.cli._common import CommonOptions, command, run
from smyth_temporal.cli._output import format_forks
from smyth_temporal.clients import AgentClient
from smyth_temporal.types.audit import AuditEntry, AuditTrail

__all__ = ["app"]

app = typer.Typer()

_SHOWN = (
    "model",
    "tool",
    "input_tokens",
    "output_tokens",
    "replayed",
    "outcome",
    "attempts",
    "approved",
    "by",
    "operation",
    "reason",
)
"""Fields worth a column's glance; the rest go in the details column."""

_PIPED_WIDTH = 400


@command(
    app,
    "audit",
    help="The audit trail of an agent: every model call (model, tokens, or replayed from a "
    "fork's parent and not paid), tool call (arguments "
    "hash, idempotency key, attempts, outcome), approval (who, when, pinned hash, edits), memory "
    "write and forget (with provenance), interrupt, lost worker, continue-as-new, reset and "
    "rewind (with the side-effect calls it could not undo), across all runs of the workflow id, "
    "read from history only; the run it was forked from and its forks.",
)
def audit(
    options: CommonOptions,
    workflow_id: Annotated[str, typer.Argument(metavar="ID", help="the agent's workflow id")],
    json_: Annotated[bool, typer.Option("--json", help="print one JSON document")] = False,
) -> None:
    """Show an agent's audit trail."""
    run(_audit(options, workflow_id, json_))


async def _audit(options: CommonOptions, workflow_id: str, as_json: bool) -> None:
    agents = await AgentClient.connect(options.settings())
    trail = await agents.audit(workflow_id)
    if as_json:
        print(trail.model_dump_json(indent=2))
    else:
        # Piped output keeps whole rows (grep-able) instead of folding to 80 columns.
        width = None if sys.stdout.isatty() else _PIPED_WIDTH
        console = Console(width=width)
        console.print(_table(trail))
        for line in _cache_lines(trail):
            console.print(line, highlight=False)


def _cache_lines(trail: AuditTrail) -> list[str]:
    """Per run with model calls: its input tokens and the share read from the prompt cache."""
    lines = []
    for run_id in trail.runs:
        tokens = sum(
            e.fields.get("input_tokens") or 0 for e in trail.of("model_call") if e.run_id == run_id
        )
        if tokens:
            share = trail.cache_read_share(run_id)
            lines.append(f"run {run_id[:8]}: {tokens} input tokens, {share:.2f} read from cache")
    if len(lines) > 1:
        lines.append(f"all runs: {trail.cache_read_share():.2f} read from cache")
    return lines


def _cell(value: Any) -> str:
    return "" if value is None else str(value)


def _details(entry: AuditEntry) -> str:
    rest = {k: v for k, v in entry.fields.items() if k not in _SHOWN}
    if "side_effects" in rest:  # a rewind's: tool@step (outcome, idempotency key) each
        rest["side_effects"] = ", ".join(
            f"{c.get('tool')}@{c.get('step')} ({c.get('outcome')}, {c.get('idempotency_key')})"
            for c in rest["side_effects"]
        )
    return " ".join(f"{k}={v}" for k, v in rest.items())


def _lineage(trail: AuditTrail) -> str | None:
    """``forked from X after step N; forks: ...`` (``None`` for a run with neither)."""
    parts = []
    if trail.fork_of is not None:
        parts.append(f"forked from {trail.fork_of.workflow_id} after step {trail.fork_of.step}")
    if trail.forks:
        parts.append(f"forks: {format_forks(trail.forks)}")
    return "; ".join(parts) or None


def _table(trail: AuditTrail) -> Table:
    table = Table(
        title=f"{trail.workflow_id}: {len(trail.runs)} run(s)",
        caption=_lineage(trail),
        show_lines=False,
    )
    for header in ("time (UTC)", "run", "event", "kind", "what", "outcome", "details"):
        table.add_column(header, overflow="fold")
    for entry in trail.entries:
        fields = entry.fields
        what = fields.get("tool") or fields.get("model") or fields.get("operation") or ""
        if fields.get("replayed"):
            what += " (replayed from the parent's record, not paid)"
        elif "input_tokens" in fields:
            what += f" ({fields['input_tokens']}+{fields.get('output_tokens', 0)} tokens)"
        if "approved" in fields:
            what = f"{'approved' if fields['approved'] else 'rejected'} by {fields.get('by')}"
        if entry.kind == "rewound":
            calls = fields.get("side_effects") or []
            what = f"to step {fields.get('to_step')} by {fields.get('by') or '?'}"
            what += f", {len(calls)} side effect(s) not undone" if calls else ""
        outcome = _cell(fields.get("outcome"))
        if (fields.get("attempts") or 1) > 1:
            outcome += f" after {fields['attempts']} attempts"
        table.add_row(
            entry.time.strftime("%Y-%m-%d %H:%M:%S"),
            entry.run_id[:8],
            str(entry.event_id),
            entry.kind,
            what,
            outcome,
            _details(entry),
        )
    return table
