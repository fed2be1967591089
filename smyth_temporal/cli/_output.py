"""How the CLI shows things: errors, progress, state summaries, approvals, memories.

Results go to stdout (so ``ID=$(smyth run ...)`` works); progress and errors go to
stderr. Tables are drawn by Rich, without borders, so scripts can still cut columns.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from smyth_temporal._text import error_line, format_usage, one_line
from smyth_temporal.clients import PendingApproval
from smyth_temporal.types import ApprovalDecision, ApprovalRequest
from smyth_temporal.types.agent import AgentState
from smyth_temporal.types.lineage import ForkRef, RewindRecord
from smyth_temporal.types.memory import MemoryHit, MemoryRecord
from smyth_temporal.types.messages import Message, ToolCall, Usage
from smyth_temporal.types.quorum import Quorum

__all__ = [
    "compact_json",
    "error_line",
    "format_approvals",
    "format_deadline",
    "format_decided",
    "format_duration",
    "format_forks",
    "format_hits",
    "format_memories",
    "format_sent",
    "format_state",
    "format_usage",
    "last_tool",
    "one_line",
    "progress_line",
    "short_id",
    "status",
    "table",
]

_CONTENT_WIDTH = 160
_ARGUMENTS_WIDTH = 80
_APPROVAL_ARGUMENTS_WIDTH = 60
_MEMORY_TEXT_WIDTH = 80
_WORKFLOW_ID_WIDTH = 40
_NAMESPACE_WIDTH = 24
_TABLE_WIDTH = 100_000  # wide enough never to wrap: a row is one line, whatever it holds

SHORT_ID_LENGTH = 8
"""Characters of a memory id the tables show (``smyth memory forget`` takes them too)."""

# Largest unit first: a duration is shown in its largest non-zero units.
_DURATION_UNITS = (("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1))


def status(text: str, *, file: TextIO | None = None) -> None:
    """Print a progress or status line to stderr (flushed, so pipes see it at once)."""
    print(text, file=file or sys.stderr, flush=True)


def last_tool(state: AgentState) -> str | None:
    """The tool the agent runs now, or else the last one it called."""
    if state.pending_tool_calls:
        return ", ".join(call.name for call in state.pending_tool_calls)
    for message in reversed(state.messages):
        if message.tool_calls:
            return ", ".join(call.name for call in message.tool_calls)
        if message.role == "tool" and message.name:
            return message.name
    return None


def progress_line(state: AgentState) -> str:
    """One line of progress: ``step 2/8  acting  (tool: get_quote)``."""
    line = f"step {state.step}/{state.max_steps}  {state.status}"
    tool = last_tool(state)
    if tool:
        line += f"  (tool: {tool})"
    return line


def _cache_share(usage: Usage) -> str:
    """``; 0.92 read from cache``, as ``smyth audit`` words it; nothing before any input.

    A run whose every call reads nothing from the cache shows ``0.00``: caching that
    never hits is worth seeing.
    """
    return f"; {usage.cache_read_share:.2f} read from cache" if usage.input_tokens else ""


def format_state(state: AgentState) -> str:
    """A human summary of an agent's state, several lines."""
    session = f", session {state.session_id}" if state.session_id else ""
    lines = [
        f"{state.workflow_id}  (agent {state.agent}, tenant {state.tenant}{session})",
        f"status   {state.status}, step {state.step}/{state.max_steps}",
        f"usage    {format_usage(state.usage)}{_cache_share(state.usage)}",
    ]
    if state.fork_of is not None:
        origin = state.fork_of
        line = f"forked   from {origin.workflow_id} after step {origin.step}"
        while origin.parent is not None:  # a fork of a fork: the whole line back
            origin = origin.parent
            line += f", itself from {origin.workflow_id} after step {origin.step}"
        lines.append(line)
    if state.forks:
        lines.append(f"forks    {format_forks(state.forks)}")
    lines.extend(f"rewound  {_rewind(r)}" for r in state.rewinds)
    if state.pending_tool_calls:
        lines.append("pending  " + "; ".join(_call(c) for c in state.pending_tool_calls))
    else:
        lines.append("pending  no tool calls")
    if state.output is not None:
        lines.append(f"output   {one_line(state.output, _CONTENT_WIDTH)}")
    if state.messages:
        lines.append(f"last messages ({len(state.messages)} of {state.message_count}):")
        lines.extend(f"  {_message(m)}" for m in state.messages)
    return "\n".join(lines)


def format_forks(forks: Sequence[ForkRef]) -> str:
    """``a (after step 1, completed); b (after step 2, running)``."""
    return "; ".join(
        f"{f.workflow_id} (after step {'?' if f.step is None else f.step}, {f.status})"
        for f in forks
    )


def _rewind(rewind: RewindRecord) -> str:
    """``to step 1 by alice, 2026-...: 1 side-effect call not undone (get_quote at step 2)``."""
    by = f" by {rewind.by}" if rewind.by else ""
    line = f"to step {rewind.to_step}{by}, {rewind.time:%Y-%m-%d %H:%M:%S} UTC"
    line += f" (abandoned run {rewind.abandoned_run_id})"
    if rewind.side_effects:
        calls = ", ".join(f"{c.tool} at step {c.step}" for c in rewind.side_effects)
        line += f": {len(rewind.side_effects)} side-effect call(s) not undone ({calls})"
    return line


def _message(message: Message) -> str:
    if message.role == "tool":
        text = f"{message.name or 'tool'}: {one_line(message.content or '', _CONTENT_WIDTH)}"
    elif message.tool_calls:
        calls = "; ".join(_call(c) for c in message.tool_calls)
        prefix = f"{one_line(message.content, _CONTENT_WIDTH)} " if message.content else ""
        text = f"{prefix}-> {calls}"
    else:
        text = one_line(message.content or "", _CONTENT_WIDTH)
    return f"{message.role:<10} {text}"


def _call(call: ToolCall) -> str:
    return f"{call.name}({one_line(call.arguments, _ARGUMENTS_WIDTH)})"


# -- approvals --------------------------------------------------------------------


def compact_json(value: Mapping[str, Any], width: int | None = None) -> str:
    """``{"symbol":"ACME","quantity":10}``: JSON without spaces, cut to ``width``."""
    return one_line(json.dumps(value, separators=(",", ":"), ensure_ascii=False), width)


def format_duration(seconds: float, *, parts: int = 1) -> str:
    """A duration in its largest units, rounded down: ``45s``, ``3m``, ``2h``, ``4d``.

    Args:
        seconds: The duration; negative counts as zero.
        parts: How many units to show at most: ``parts=2`` gives ``6d 23h``.
    """
    remaining = max(int(seconds), 0)
    shown: list[str] = []
    for suffix, size in _DURATION_UNITS:
        count, remaining = divmod(remaining, size)
        if count and len(shown) < parts:
            shown.append(f"{count}{suffix}")
        elif shown:
            break  # "2d 5m" would skip the hours and read as more precise than it is
    return " ".join(shown) or "0s"


def format_deadline(deadline: datetime, now: datetime) -> str:
    """``in 6d 23h``, or ``overdue 5m`` when the deadline has passed.

    A request still pending after its deadline means no worker applied the timeout
    policy yet (typically: none is running), which is worth seeing at a glance.
    """
    left = (deadline - now).total_seconds()
    if left >= 0:
        return f"in {format_duration(left, parts=2)}"
    return f"overdue {format_duration(-left, parts=2)}"


def format_approvals(pending: Sequence[PendingApproval], now: datetime) -> str:
    """A table of pending approvals, one row per request, columns aligned.

    Args:
        pending: The requests, in the order to show them.
        now: The current time (aware), for ages and deadlines.
    """
    header: tuple[str, ...] = ("AGENT", "WORKFLOW ID", "REQUEST", "TOOL", "ARGUMENTS", "AGE")
    header += ("DEADLINE",)
    rows: list[tuple[str, ...]] = [header] + [
        (
            p.agent,
            p.workflow_id,
            p.request.id,
            p.request.tool,
            compact_json(p.request.arguments, _APPROVAL_ARGUMENTS_WIDTH),
            format_duration((now - p.request.requested_at).total_seconds()),
            format_deadline(p.request.deadline, now),
        )
        for p in pending
    ]
    if any(p.request.policy is not None for p in pending):
        # Only where a policy is involved, so tables of plain requests stay as they were.
        rows = [(*row, quorum_cell(p.request)) for row, p in zip(rows[1:], pending, strict=True)]
        rows.insert(0, (*header, "APPROVED"))
    return table(rows)


def quorum_cell(request: ApprovalRequest) -> str:
    """``1 of 2 (alice)``: a policy request's quorum progress; ``-`` without a policy.

    Added in 0.9.0.
    """
    quorum = Quorum.of(request)
    if quorum is None:
        return "-"
    who = f" ({', '.join(quorum.approvers)})" if quorum.approvers else ""
    return quorum.progress + who


def table(rows: Sequence[Sequence[str]]) -> str:
    """Rows (the header first) as aligned columns, two spaces apart, drawn by Rich.

    Cells are plain text (a ``[`` is not markup) and never wrapped or cut here: what
    is too long is cut by the caller, with an ellipsis.
    """
    grid = Table.grid(padding=(0, 2, 0, 0))
    for _ in rows[0]:
        grid.add_column(no_wrap=True, overflow="ignore")
    for row in rows:
        grid.add_row(*(Text(cell) for cell in row))
    out = io.StringIO()
    Console(file=out, width=_TABLE_WIDTH, color_system=None, legacy_windows=False).print(grid)
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines())


def format_decided(workflow_id: str, request: ApprovalRequest) -> str:
    """``approved apr-1-call_1_0 (sell) on Trader-3f9a by alice``, after an update.

    A rejection ends with its reason, as the model will read it; an approval says when
    the tool runs with edited arguments.
    """
    decision = request.decision
    quorum = Quorum.of(request)
    if request.status == "pending" and quorum is not None and quorum.votes:
        vote = quorum.votes[-1]
        kind = "approval" if vote.approved else "rejection"
        return (
            f"counted {kind} of {request.id} ({request.tool}) on {workflow_id} by {vote.by}: "
            f"{quorum.progress} approvals, still pending"
        )
    by = decision.by if decision else "nobody"
    line = f"{request.status} {request.id} ({request.tool}) on {workflow_id} by {by}"
    if decision is not None and decision.arguments is not None:
        line += f" with edited arguments {compact_json(decision.arguments, _ARGUMENTS_WIDTH)}"
    if decision is not None and decision.comment:
        line += f": {one_line(decision.comment, _CONTENT_WIDTH)}"
    return line


def format_sent(workflow_id: str, decision: ApprovalDecision) -> str:
    """``sent approval for apr-1-call_1_0 on Trader-3f9a by alice (signal; not validated)``.

    A signal is not answered, so this says what was sent, not what happened.
    """
    kind = "approval" if decision.approved else "rejection"
    target = decision.request_id or "the only pending request"
    return f"sent {kind} for {target} on {workflow_id} by {decision.by} (signal; not validated)"


# -- memory -----------------------------------------------------------------------


def short_id(memory_id: str) -> str:
    """The first characters of a memory id, as tables show it."""
    return memory_id[:SHORT_ID_LENGTH]


def format_memories(records: Sequence[MemoryRecord], now: datetime) -> str:
    """A table of memories: id (short), kind, created (UTC), agent, workflow, text (cut).

    Args:
        records: The memories, in the order to show them.
        now: The current time (aware), to mark expired memories.
    """
    header = ("ID", "KIND", "CREATED", "AGENT", "WORKFLOW", "TEXT")
    return table([header] + [_memory_row(r, now) for r in records])


def format_hits(hits: Sequence[MemoryHit], now: datetime, *, namespaces: bool = False) -> str:
    """A table of search hits, best first: ``format_memories`` with a score column.

    Args:
        hits: The hits, in the order to show them.
        now: The current time (aware), to mark expired memories.
        namespaces: Add a column with each memory's namespace (for a search of every
            namespace of a tenant).
    """
    header: tuple[str, ...] = ("SCORE", "ID", "KIND", "CREATED", "AGENT", "WORKFLOW", "TEXT")
    rows: list[tuple[str, ...]] = [(f"{h.score:.3f}", *_memory_row(h.record, now)) for h in hits]
    if namespaces:
        header = ("SCORE", "NAMESPACE", *header[1:])
        rows = [
            (row[0], one_line(h.record.scope.namespace, _NAMESPACE_WIDTH), *row[1:])
            for row, h in zip(rows, hits, strict=True)
        ]
    return table([header, *rows])


def _memory_row(record: MemoryRecord, now: datetime) -> tuple[str, ...]:
    source = record.provenance
    marks = []
    if record.superseded_by:
        marks.append(f"[superseded by {short_id(record.superseded_by)}]")
    if record.expires_at is not None and record.expires_at <= now:
        marks.append("[expired]")
    text = " ".join([*marks, one_line(record.text)])
    return (
        short_id(record.id),
        record.kind,
        _utc_minute(record.created_at),
        source.agent or "-",
        one_line(source.workflow_id, _WORKFLOW_ID_WIDTH) or "-",
        one_line(text, _MEMORY_TEXT_WIDTH),
    )


def _utc_minute(moment: datetime) -> str:
    """``2025-05-03T14:02Z``: to the minute, in UTC (naive times are taken as UTC)."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%MZ")
