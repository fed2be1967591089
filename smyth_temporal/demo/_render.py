"""The demo's narration: one line per thing that happens, stamped with the time.

Lines are laid out by hand (a time column, a label column, the text), so they read
the same in a terminal, a pipe and a CI log. On a terminal Rich adds colour (labels,
the crash, the approval, problems); anywhere else the output is plain text, with no
escape codes, so tests and logs can match it.
"""

from __future__ import annotations

import json
import textwrap
import time
from datetime import UTC, datetime
from typing import TextIO

from rich.console import Console
from rich.text import Text

from smyth_temporal._text import error_line, format_usage, one_line, plural
from smyth_temporal.types.approvals import ApprovalRequest
from smyth_temporal.types.messages import Message, ToolCall

__all__ = [
    "LINE_WIDTH",
    "Narrator",
    "error_line",
    "format_usage",
    "one_line",
    "plural",
    "request_label",
    "seconds_between",
]

LINE_WIDTH = 76
"""Width of a progress line's text; wrapped text may take 14 more columns."""

_INDENT = " " * 19
"""Lines under a progress line's text (past its time and label columns)."""

_AT_DEADLINE = {"reject": "rejected", "approve": "approved", "fail": "the run fails"}
"""What happens to a request nobody decided, by its ``on_timeout``."""

_LABEL_STYLES = {
    "CRASH": "bold red",
    "APPROVAL": "bold yellow",
    "approve": "yellow",
    "approved": "bold green",
    "rejected": "bold red",
    "expired": "bold red",
    "retry": "cyan",
    "you": "bold magenta",
    "temporal": "blue",
    "agent": "bold",
}
"""Colours of the label column on a terminal (``worker N`` and steps use defaults)."""


class Narrator:
    """Prints the demo's lines, stamped with the seconds since the demo started."""

    def __init__(self, out: TextIO, started: float) -> None:
        """Print to ``out``; times are counted from ``started`` (wall clock)."""
        isatty = getattr(out, "isatty", None)
        # Colour only on a terminal, whatever FORCE_COLOR says: piped output is read
        # by tests and scripts.
        self.console = Console(
            file=out, force_terminal=bool(isatty and isatty()), highlight=False, emoji=False
        )
        self.started = started

    def line(self, label: str, text: str, *, at: float | None = None, wrap: bool = False) -> None:
        """Print ``text`` under ``label``; with ``wrap``, whole, on as many lines as it takes.

        Args:
            label: The label column (``worker 1``, ``step 3``, ``CRASH``).
            text: What happened.
            at: When it happened (wall clock; default: now).
            wrap: Wrap ``text`` under itself instead of printing one long line.
        """
        seconds = (time.time() if at is None else at) - self.started
        if wrap:
            text = _fill(text, initial_indent=_INDENT, subsequent_indent=_INDENT)[len(_INDENT) :]
        style = _LABEL_STYLES.get(label, "bold" if label.startswith("worker") else "")
        self._print(Text.assemble((f"{seconds:6.1f}s  ", "dim"), (f"{label:<9}", style), " ", text))

    def text(self, text: str = "", *, style: str = "") -> None:
        """Print ``text`` as it is."""
        self._print(Text(text, style=style))

    def row(self, label: str, text: str, *, style: str = "") -> None:
        """A line of the summary: ``label`` in its first column, ``text`` after it."""
        self._print(Text.assemble((f"  {label:<11}", "bold"), (text, style)))

    def bullet(self, text: str, *, label: str = "", style: str = "") -> None:
        """A summary point (or a ``label``-led row), wrapped under its second column."""
        first = f"  {label:<11}"
        wrapped = _fill(
            text, initial_indent=first, subsequent_indent=" " * 15, break_long_words=True
        )
        self._print(Text.assemble((first, "bold"), (wrapped[len(first) :], style)))

    def request(self, request: ApprovalRequest) -> None:
        """A pending approval request, with what a person needs to decide it."""
        minutes = (request.deadline - request.requested_at).total_seconds() / 60
        self.line(
            "APPROVAL",
            f"the run waits for a decision on {request_label(request)}; nothing has run",
        )
        details = [
            ("request", f"{request.id} (step {request.step})"),
            ("tool", f"{request.tool} {json.dumps(request.arguments, sort_keys=True)}"),
            ("sha256", request.arguments_sha256),
            ("reason", request.reason or "(the model gave none)"),
            (
                "deadline",
                f"{utc(request.deadline)}, in {minutes:g} min "
                f"(then {_AT_DEADLINE.get(request.on_timeout, request.on_timeout)})",
            ),
        ]
        for name, value in details:
            first = f"{_INDENT}{name:<9} "
            wrapped = _fill(value, initial_indent=first, subsequent_indent=" " * len(first))
            self._print(Text.assemble((first, "yellow"), wrapped[len(first) :]))

    def decided(self, request: ApprovalRequest) -> None:
        """A decision on a request: who, when, and what happens next."""
        decision = request.decision
        by = decision.by if decision else "nobody"
        waited = seconds_between(request.requested_at, request.decided_at)
        when = f"at {utc(request.decided_at)}" if request.decided_at else ""
        if request.status == "approved":
            edited = (
                " with edited arguments"
                if decision is not None and decision.arguments is not None
                else ""
            )
            self.line(
                "approved",
                f"by {by}{edited} {when}, {waited} after the request; the run resumes",
                wrap=True,
            )
        else:
            why = f" ({decision.comment})" if decision and decision.comment else ""
            self.line(
                request.status,
                f"by {by}{why} {when}, {waited} after the request; {request.tool} will not "
                "run, the model is told why",
                wrap=True,
            )

    def ask(self, command: str, reject: str) -> None:
        """Ask the person running the demo to decide, with the commands that do."""
        self.line("you", "decide, from another terminal:")
        self._print(Text.assemble(_INDENT, (command, "bold")))
        self._print(Text.assemble(f"{_INDENT}or: ", (reject, "bold")))
        self.text(f"{_INDENT}waiting for the decision (Ctrl-C stops the demo)")

    def message(self, message: Message, asked: ToolCall | None = None) -> None:
        """A message of the conversation (``asked``: the call a tool result answers)."""
        label = f"step {message.step}"
        if message.role == "assistant" and message.tool_calls:
            if message.content:  # why it calls: what an approver is shown
                self.line(label, one_line(f"model says: {message.content}", LINE_WIDTH))
            calls = ", ".join(_call_label(call) for call in message.tool_calls)
            self.line(label, one_line(f"model calls {calls}", LINE_WIDTH))
        elif message.role == "assistant":
            self.line(label, one_line(f"model answers: {message.content}", LINE_WIDTH))
        elif message.role == "tool" and message.step is not None and message.tool_call_id:
            name = _call_label(asked) if asked else message.name or "tool"
            self.line(label, one_line(f"{name} -> {_brief(message.content or '')}", LINE_WIDTH))

    def _print(self, text: Text) -> None:
        # soft_wrap: the layout above is final; Rich must not wrap it again.
        self.console.print(text, soft_wrap=True)


def request_label(request: ApprovalRequest) -> str:
    """``sell_position(ACME, 5000)``, as ``Execution.label`` writes the same call."""
    return f"{request.tool}({', '.join(str(v) for v in request.arguments.values())})"


def seconds_between(start: datetime, end: datetime | None) -> str:
    """``1.2s`` (``?s`` when ``end`` is unknown)."""
    return "?s" if end is None else f"{(end - start).total_seconds():.1f}s"


def utc(moment: datetime | None) -> str:
    """``2025-01-15 15:30:01.234 UTC``."""
    if moment is None:
        return "unknown"
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def _fill(
    text: str, *, initial_indent: str, subsequent_indent: str, break_long_words: bool = False
) -> str:
    return textwrap.fill(
        text,
        width=LINE_WIDTH + 14,
        initial_indent=initial_indent,
        subsequent_indent=subsequent_indent,
        break_on_hyphens=False,
        break_long_words=break_long_words,
    )


def _call_label(call: ToolCall) -> str:
    """``get_quote(ACME)``: the tool and its argument values."""
    try:
        arguments = json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        return f"{call.name}({call.arguments})"
    if not isinstance(arguments, dict):
        return f"{call.name}({call.arguments})"
    values = ", ".join(one_line(value, 24) for value in arguments.values())
    return f"{call.name}({values})"


def _brief(content: str) -> str:
    """A tool result in a few words: ``price=101.5 change_pct=-6.8 ...``."""
    try:
        value = json.loads(content)
    except json.JSONDecodeError:
        return content
    if isinstance(value, dict):
        return " ".join(f"{key}={item}" for key, item in value.items() if key != "symbol")
    if isinstance(value, list) and value:
        first = value[0]
        summary = first.get("title", first) if isinstance(first, dict) else first
        return f"{len(value)} items, first: {summary}"
    return content
