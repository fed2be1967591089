"""``smyth watch`` and ``smyth interrupt``: follow a live agent, and stop its turn.

``watch`` reads the run's event stream (``AgentClient.events``) and shows it as it
happens; ``interrupt`` sends the agent's ``interrupt`` update.

Added in 0.3.0.
"""

from __future__ import annotations

import asyncio
import json
import shlex
from datetime import UTC, datetime
from typing import Annotated, Any

import typer
from rich.text import Text
from temporalio.client import WorkflowExecutionStatus, WorkflowUpdateRPCTimeoutOrCancelledError

from smyth_temporal.cli._common import (
    CommonOptions,
    command,
    non_empty,
    non_negative,
    run,
    status,
)
from smyth_temporal.cli._live import LiveText, stdout_console
from smyth_temporal.cli._output import format_deadline, format_decided, format_usage, one_line
from smyth_temporal.clients import AgentClient
from smyth_temporal.exceptions import ClientError
from smyth_temporal.types.agent import AgentStatus
from smyth_temporal.types.approvals import ApprovalRequest
from smyth_temporal.types.events import (
    AgentEvent,
    ApprovalDecided,
    ApprovalEscalated,
    ApprovalExpired,
    ApprovalRequested,
    ApprovalVoted,
    CompactionDone,
    ContinuedAsNew,
    EventsMissed,
    MessageCompleted,
    RunFinished,
    RunStarted,
    StatusChanged,
    TextAssembler,
    TextDelta,
    TextReset,
    ToolCallFinished,
    ToolCallScheduled,
    TurnFinished,
    UsageReported,
)
from smyth_temporal.types.messages import ToolCall, Usage

__all__ = ["INTERRUPT_TIMEOUT", "LINE_WIDTH", "app"]

app = typer.Typer()

INTERRUPT_TIMEOUT = 30.0
"""Seconds ``smyth interrupt`` waits for a worker to take the interrupt (an update)."""

LINE_WIDTH = 160
"""Characters a tool call or result line is cut to when stdout is not a terminal (on a
terminal: its width)."""

_WATCH_EPILOG = "\n\n".join(
    [
        "Streamed text is shown as the model writes it; tool calls (→) and results (←), "
        "approval requests with the commands that decide them, decisions, compactions, "
        "continue-as-new and events no longer kept (!) one line each. On a terminal a "
        "status line (status, step, usage) stays at the bottom. Ctrl-C stops watching (the "
        "agent goes on) and prints the offset to resume from.",
        "examples:",
        "  smyth watch Analyst-3f9a0c1d2e4b",
        "  smyth watch Analyst-3f9a0c1d2e4b --after 41",
        "  smyth watch Analyst-3f9a0c1d2e4b --json | jq -r .kind",
    ]
)

_WorkflowId = Annotated[
    str, typer.Argument(metavar="WORKFLOW_ID", help="the agent run's workflow id")
]


@command(
    app,
    "watch",
    epilog=_WATCH_EPILOG,
    help="Follow an agent run as it works, from its first event (or after --after) to its end.",
)
def watch(
    options: CommonOptions,
    workflow_id: _WorkflowId,
    after: Annotated[
        int | None,
        typer.Option(
            "--after",
            parser=non_negative,
            metavar="OFFSET",
            help="start after this event offset (what Ctrl-C printed, or an event's offset)",
        ),
    ] = None,
    json_: Annotated[
        bool, typer.Option("--json", help="print each event as one JSON object per line")
    ] = False,
) -> None:
    """Show an agent run's events as they happen."""
    run(_watch(options, workflow_id, after, json_))


async def _watch(
    options: CommonOptions, workflow_id: str, after: int | None, as_json: bool
) -> None:
    agents = await AgentClient.connect(options.settings())
    seen = after
    try:
        with LiveText(stdout_console()) as view:
            shown = _Watch(workflow_id, view, _connection(options))
            async for event in agents.events(workflow_id, after=after):
                if as_json:
                    print(json.dumps(event.model_dump(mode="json")), flush=True)
                else:
                    shown.add(event)
                seen = event.offset
            if not as_json and not shown.finished:
                # Terminated, timed out or failed before it could say so on the stream.
                shown.ended(await agents.status(workflow_id))
    except (asyncio.CancelledError, KeyboardInterrupt):
        again = (f" --after {seen}" if seen is not None else "") + (" --json" if as_json else "")
        command = f"smyth watch {shlex.quote(workflow_id)}{again}{_connection(options)}"
        status(f"resume with: {command}")
        raise


def _connection(options: CommonOptions) -> str:
    """The connection options given on the command line, for commands printed to run."""
    given = (("--address", options.address), ("--namespace", options.namespace))
    return "".join(f" {flag} {shlex.quote(value)}" for flag, value in given if value)


class _Watch:
    """Shows a run's events on a ``LiveText``, one at a time."""

    def __init__(self, workflow_id: str, view: LiveText, connection: str) -> None:
        self.workflow_id = workflow_id
        self.view = view
        self.connection = connection
        self.finished = False
        self._texts = TextAssembler()
        self._said: str | None = None  # the last answer shown (the output, usually)
        self._status: AgentStatus | None = None
        self._step = 0
        self._usage: Usage | None = None

    def add(self, event: AgentEvent) -> None:
        """Show one event."""
        match event:
            case TextDelta() | TextReset():
                text = self._texts.add(event)
                if text is not None:
                    self.view.show(event.message_id, text)
            case MessageCompleted(message=message):
                if message.role == "assistant":
                    self.view.end(event.message_id, message.content or None)
                    self._said = message.content or self._said
                elif message.role == "user" and message.content:
                    self._line(f"» {message.content}", "bold")
            case ToolCallScheduled(call=call):
                self._line(f"→ {_call(call)}", "cyan")
            case ToolCallFinished(name=name, content=content, error=error):
                self._line(
                    f"← {name}{' failed' if error else ''}: {content}", "red" if error else ""
                )
            case ApprovalRequested(request=request):
                self._approval_requested(request)
            case ApprovalDecided(request=request) | ApprovalVoted(request=request):
                self._line(format_decided(self.workflow_id, request), "yellow")
            case ApprovalEscalated(request=request, escalation=step, roles=roles):
                self._line(
                    f"{request.id} ({request.tool}) escalated (step {step}): "
                    f"{', '.join(roles)} may decide",
                    "yellow",
                )
            case ApprovalExpired(request=request):
                self._line(
                    f"{request.id} ({request.tool}) expired without a decision: {request.status}",
                    "yellow",
                )
            case CompactionDone(compaction=done):
                self._line(f"compacted {done.message_count} messages into a summary ({done.id})")
            case ContinuedAsNew(generation=generation):
                self._line(f"continued as new (generation {generation})", "dim")
            case RunStarted(agent=agent, mode=mode, generation=generation):
                again = f", generation {generation}" if generation > 1 else ""
                self._line(f"{agent} started a {mode} ({self.workflow_id}{again})", "bold")
            case TurnFinished(interrupted=True):
                self._line("the turn was interrupted", "yellow")
            case StatusChanged(status=now):
                self._status, self._step = now, event.step
                self._footer()
            case UsageReported(usage=usage):
                self._usage = usage
                self._footer()
            case RunFinished():
                self._finished(event)
            case EventsMissed(first_missing=first, first_available=available):
                self._line(
                    f"! events {first} to {available - 1} are gone (the run keeps its latest "
                    f"events only across continue-as-new); going on from {available}",
                    "bold red",
                )

    def ended(self, ended: WorkflowExecutionStatus | None) -> None:
        """The stream ended without ``run_finished``: say how the run ended."""
        how = ended.name.lower().replace("_", " ") if ended is not None else "gone"
        self._line(f"the run ended: {how}", "bold")

    def _finished(self, event: RunFinished) -> None:
        self.finished = True
        if event.output and event.output != self._said:
            self.view.end(None, event.output)
        usage = f"; {format_usage(self._usage)}" if self._usage is not None else ""
        self._line(f"{event.status} after {event.step} steps{usage}", "bold")

    def _approval_requested(self, request: ApprovalRequest) -> None:
        deadline = format_deadline(request.deadline, datetime.now(UTC))
        self._line(
            f"? {request.tool}({_arguments(request.arguments)}) waits for approval "
            f"(request {request.id}, deadline {deadline})",
            "yellow",
        )
        target = f"{shlex.quote(self.workflow_id)} --request {shlex.quote(request.id)}"
        for verb in ("approve", "reject"):
            self.view.print(Text(f"    smyth {verb} {target}{self.connection}"))

    def _line(self, text: str, style: str = "") -> None:
        width = self.view.console.width if self.view.interactive else LINE_WIDTH
        self.view.print(Text(one_line(text, width), style=style))

    def _footer(self) -> None:
        if self._status is None:
            return
        usage = f" · {format_usage(self._usage)}" if self._usage is not None else ""
        self.view.footer = Text(f"{self._status} · step {self._step}{usage}", style="dim")
        self.view.refresh()


def _call(call: ToolCall) -> str:
    """``get_quote(symbol=ACME)``: a call as its arguments read (verbatim when not JSON)."""
    try:
        arguments = json.loads(call.arguments)
    except json.JSONDecodeError:
        return f"{call.name}({call.arguments})"
    if not isinstance(arguments, dict):
        return f"{call.name}({call.arguments})"
    return f"{call.name}({_arguments(arguments)})"


def _arguments(arguments: dict[str, Any]) -> str:
    return ", ".join(f"{name}={_value(value)}" for name, value in arguments.items())


def _value(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# -- interrupt --------------------------------------------------------------------


@command(
    app,
    "interrupt",
    help="Stop an agent's current turn at its next safe point: the model call in flight is "
    "cancelled, running tool calls finish, the others do not start, a pending approval is "
    "withdrawn. A task then ends 'interrupted'; a session waits for its next message.",
)
def interrupt(
    options: CommonOptions,
    workflow_id: _WorkflowId,
    reason: Annotated[
        str | None,
        typer.Option("--reason", metavar="TEXT", help="why; the model is told at its next turn"),
    ] = None,
    by: Annotated[
        str | None,
        typer.Option(
            "--by", parser=non_empty, metavar="NAME", help="who interrupts, for the audit trail"
        ),
    ] = None,
) -> None:
    """Interrupt an agent's current turn."""
    run(_interrupt(options, workflow_id, reason, by))


async def _interrupt(
    options: CommonOptions, workflow_id: str, reason: str | None, by: str | None
) -> None:
    agents = await AgentClient.connect(options.settings())
    try:
        async with asyncio.timeout(INTERRUPT_TIMEOUT):
            outcome = await agents.interrupt(workflow_id, reason=reason, by=by)
    except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError):
        # temporalio reports a cancelled wait for an update (our deadline, the server's,
        # or Ctrl-C) as its own error.
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise asyncio.CancelledError from None
        raise ClientError(
            f"no worker took the interrupt of {workflow_id!r} within {INTERRUPT_TIMEOUT:g}s "
            "(is a worker for its agent running?); it may still be applied when one picks "
            f"the run up: check with `smyth state {workflow_id}`"
        ) from None
    print(f"interrupted {workflow_id} while {outcome.status} at step {outcome.step}")
