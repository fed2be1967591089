"""``smyth demo``: watch an agent survive the crash of its worker, and wait for a person.

The demo runs the market monitor of ``examples/market_monitor`` (a scripted model by
default, so no model endpoint or key is needed):

1. make sure a Temporal server answers (reuse one, or start the embedded dev server);
2. start a worker process and, once it polls, an agent run;
3. print the run's progress from its ``state`` query, one line per step and result;
4. while a tool call is running (two steps in), kill the worker with SIGKILL;
5. start a new worker process, and show the same run carry on where it was;
6. when the agent asks to sell shares (an approval-gated tool), print the request,
   find it again through ``AgentClient.pending_approvals()`` (search attributes),
   and approve it from the script, pinning the hash of the arguments it printed; with
   ``--interactive`` on a terminal, print the ``smyth approve`` command and wait for
   the person running the demo to decide instead;
7. print the result and what the tools' ledgers and the run's history prove: every
   call that had completed before the kill ran exactly once, the call cut off re-ran
   with the same idempotency key, and the gated call ran once, after the approval.

Everything printed is measured during the run; nothing is canned. The files of a run
(ledgers, worker logs) are under ``.smyth/demo/``, fresh each time.

Added in 0.1.0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import getpass
import importlib.util
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any, Literal, TextIO

from temporalio.api.enums.v1 import EventType, TaskQueueType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import WorkflowQueryFailedError
from temporalio.service import RPCError

import smyth_temporal
from smyth_temporal.cli._devserver import DEFAULT_STATE_DIR, ensure_dev_server
from smyth_temporal.cli._output import error_line, format_usage, one_line
from smyth_temporal.cli.main import CORE_SETTLE_DELAY
from smyth_temporal.client import AgentClient
from smyth_temporal.exceptions import ClientError, SmythError
from smyth_temporal.settings import Settings
from smyth_temporal.storage._defaults import DEFAULT_PAYLOAD_PATH
from smyth_temporal.testing import register_search_attributes
from smyth_temporal.types.agent import AgentInput, AgentResult, AgentState
from smyth_temporal.types.approvals import APPROVAL_SIGNAL, APPROVAL_UPDATE, ApprovalRequest
from smyth_temporal.types.messages import Message, ToolCall
from smyth_temporal.types.visibility import PENDING_APPROVALS_ATTRIBUTE, SEARCH_ATTRIBUTES

__all__ = [
    "AGENT",
    "AGENT_NAME",
    "APPROVAL_PAUSE",
    "APPROVER",
    "DEFAULT_TIMEOUT",
    "GATED_TOOL",
    "KILL_FROM_STEP",
    "SCRIPTED_MODEL",
    "SLOW_TOOL",
    "ApprovalProof",
    "Decision",
    "DemoError",
    "Example",
    "Execution",
    "HistoryFacts",
    "Proof",
    "ToolScheduled",
    "add_arguments",
    "approve_command",
    "check_approval",
    "check_ledger",
    "find_example",
    "history_facts",
    "main",
    "read_executions",
]

AGENT = "examples.market_monitor.workflows:MarketMonitor"
"""The agent the demo's workers serve."""

AGENT_NAME = "MarketMonitor"
"""Its workflow type name."""

SCRIPTED_MODEL = "examples.market_monitor.script:model"
"""The worker's model provider when the demo runs offline."""

SLOW_TOOL = "get_volatility"
"""The example's slow tool (1.5 s): the kill lands in the middle of its first call."""

KILL_FROM_STEP = 3
"""The worker is also killed when a tool call of this step or a later one runs.

With the scripted model the first ``get_volatility`` call is made at step 3, so two
steps have completed by then: there is finished work that must not run again. A real
model may order its calls differently; any slow or late call serves.
"""

GATED_TOOL = "sell_position"
"""The example's tool that waits for a person's approval (large sales)."""

APPROVER = "demo-script"
"""Who approves, in the audit trail, when the demo decides itself."""

APPROVAL_PAUSE = 1.0
"""Seconds the demo leaves a request pending before it approves, so it can be seen
(and so ``AgentClient.pending_approvals()``, eventually consistent, can list it)."""

DEFAULT_TIMEOUT = 120.0
"""Seconds the whole demo may take before it gives up (a person's time to decide
with ``--interactive`` does not count)."""

_POLL_INTERVAL = 0.1
_QUERY_TIMEOUT = 2.0
"""A query needs a worker; while there is none it would hang, so it is cut short."""
_FINAL_QUERY_TIMEOUT = 10.0
_VISIBILITY_TIMEOUT = 10.0
"""Seconds to wait for the visibility store to list a pending request."""
_VISIBILITY_INTERVAL = 0.2
_WORKER_READY_TIMEOUT = 30.0
_WORKER_STOP_TIMEOUT = 10.0
_LINE_WIDTH = 76
_INDENT = " " * 19
"""Lines under a progress line's text (past its time and label columns)."""
_AT_DEADLINE = {"reject": "rejected", "approve": "approved", "fail": "the run fails"}
"""What happens to a request nobody decided, by its ``on_timeout``."""


class DemoError(ClientError):
    """The demo could not show what it set out to show; the message says why."""


# -- the example ---------------------------------------------------------------------


@dataclass(frozen=True)
class Example:
    """Where the market monitor example is, and the constants the demo needs from it."""

    root: Path
    """The directory that holds ``examples/`` (the workers run there)."""
    prompt: str
    """The task of the run."""
    ledger_env: str
    """The variable that tells the tools where the alert ledger is."""
    executions_file: str
    """The execution ledger's file name, beside the alert ledger."""
    trades_file: str
    """The trade ledger's file name, beside the alert ledger."""


def find_example(search: Sequence[Path] | None = None) -> Example:
    """Find ``examples/market_monitor`` and read its constants.

    The examples are not part of the installed package: they live in the source tree,
    found from the current directory or beside an editable install of the package.
    The package's ``__init__`` is loaded on its own, so this process imports none of
    the example's code (only the workers do).

    Args:
        search: Directories to look in (default: the current one, then the checkout
            that holds the ``smyth_temporal`` package).

    Raises:
        DemoError: No checkout with the example was found.
    """
    if search is None:
        search = [Path.cwd(), Path(smyth_temporal.__file__).resolve().parent.parent]
    for root in search:
        package = root / "examples" / "market_monitor"
        if (package / "workflows.py").is_file():
            break
    else:
        raise DemoError(
            "smyth demo runs examples/market_monitor from a smyth-temporal source "
            "checkout; run it from the repository's root"
        )
    spec = importlib.util.spec_from_file_location("_smyth_demo_example", package / "__init__.py")
    if spec is None or spec.loader is None:
        raise DemoError(f"cannot load {package / '__init__.py'}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def constant(name: str) -> str:
        value = getattr(module, name, None)
        if not isinstance(value, str):
            raise DemoError(f"{package / '__init__.py'} does not define the string {name}")
        return value

    return Example(
        root=root.resolve(),
        prompt=constant("PROMPT"),
        ledger_env=constant("LEDGER_ENV"),
        executions_file=constant("EXECUTIONS_FILE"),
        trades_file=constant("TRADES_FILE"),
    )


# -- the ledgers and what they prove -------------------------------------------------


@dataclass(frozen=True)
class Execution:
    """One execution of a tool, from the execution ledger the example's tools write."""

    tool: str
    """The tool's name."""
    arguments: dict[str, Any]
    """What it was called with."""
    key: str
    """The call's idempotency key (the same for every attempt of the call)."""
    call_id: str
    """The model's id for the call."""
    step: int
    """The agent step that made the call."""
    attempt: int
    """The activity attempt, from 1."""
    pid: int
    """The worker process that ran it."""
    started: float
    """Wall-clock time it started (seconds since the epoch)."""
    ended: float | None = None
    """Wall-clock time it ended; ``None`` while running, or when its worker died."""
    error: str | None = None
    """The exception that ended it, if one did."""

    @property
    def label(self) -> str:
        """``get_quote(ACME)``."""
        return f"{self.tool}({', '.join(str(v) for v in self.arguments.values())})"


def read_executions(path: Path) -> list[Execution]:
    """The executions in an execution ledger, in the order they started.

    Each execution writes a ``start`` line and, unless its process died, an ``end``
    line; they are paired by idempotency key, attempt and process.
    """
    executions: dict[tuple[str, int, int], Execution] = {}
    for entry in _read_lines(path):
        ident = (str(entry["key"]), int(entry["attempt"]), int(entry["pid"]))
        if entry.get("event") == "start":
            executions[ident] = Execution(
                tool=str(entry["tool"]),
                arguments=dict(entry.get("arguments") or {}),
                key=ident[0],
                call_id=str(entry.get("call_id", "")),
                step=int(entry["step"]),
                attempt=ident[1],
                pid=ident[2],
                started=float(entry["time"]),
            )
        elif ident in executions:
            executions[ident] = dataclasses.replace(
                executions[ident], ended=float(entry["time"]), error=entry.get("error")
            )
    return sorted(executions.values(), key=lambda e: e.started)


@dataclass
class Proof:
    """What the ledgers show about the calls around the kill."""

    completed: list[list[Execution]] = field(default_factory=list)
    """The executions of each call that had completed before the kill (one each)."""
    interrupted: list[list[Execution]] = field(default_factory=list)
    """The executions of each call running on the killed worker (cut off, then re-run)."""
    later: list[list[Execution]] = field(default_factory=list)
    """The executions of each call made after the kill."""
    alerts: int = 0
    """Alerts in the alert ledger."""
    trades: int = 0
    """Sales in the trade ledger."""
    problems: list[str] = field(default_factory=list)
    """Everything that contradicts "completed calls ran once"; empty when proven."""

    @property
    def executions(self) -> int:
        """Tool executions in all, re-runs included."""
        return sum(len(runs) for runs in self.completed + self.interrupted + self.later)


def check_ledger(
    executions: Sequence[Execution],
    alerts: Sequence[Mapping[str, Any]],
    *,
    completed_before_kill: Iterable[tuple[int, str]],
    killed_pid: int,
    trades: Sequence[Mapping[str, Any]] = (),
) -> Proof:
    """Check the ledgers against what Temporal had recorded when the worker was killed.

    Args:
        executions: The execution ledger (see ``read_executions``).
        alerts: The alert ledger's entries (each with the ``key`` of its call).
        trades: The trade ledger's entries (each with the ``key`` of its call).
        completed_before_kill: ``(step, call_id)`` of every tool result the agent's
            state showed before the kill: calls Temporal knew were done.
        killed_pid: The process id of the killed worker.

    Returns:
        The calls sorted into completed, interrupted and later, and any problems:
        a completed call that ran more or less than once, an interrupted call that
        did not re-run exactly once to the end, a later call that ran twice, an
        alert sent or a sale made twice, or no call cut off by the kill at all.
    """
    by_call: dict[tuple[int, str], list[Execution]] = {}
    for execution in executions:
        by_call.setdefault((execution.step, execution.call_id), []).append(execution)
    done = set(completed_before_kill)
    proof = Proof()
    cut_off = 0
    for call, runs in by_call.items():
        label = runs[0].label
        if call in done:
            proof.completed.append(runs)
            if len(runs) != 1 or runs[0].ended is None:
                proof.problems.append(
                    f"{label} had completed before the kill but ran {len(runs)} times"
                )
        elif any(run.pid == killed_pid for run in runs):
            proof.interrupted.append(runs)
            before = [run for run in runs if run.pid == killed_pid]
            after = [run for run in runs if run.pid != killed_pid]
            if any(run.ended is None for run in before):
                cut_off += 1
                if len(after) != 1 or after[0].ended is None:
                    proof.problems.append(
                        f"{label} was cut off by the kill and then ran {len(after)} times "
                        f"({sum(run.ended is not None for run in after)} to the end)"
                    )
                elif after[0].key != before[0].key:
                    proof.problems.append(f"{label} re-ran with another idempotency key")
            elif len(after) > 1:
                proof.problems.append(f"{label} ran {len(runs)} times")
        else:
            proof.later.append(runs)
            if len(runs) != 1:
                proof.problems.append(f"{label} ran {len(runs)} times")
    missing = done - set(by_call)
    if missing:
        proof.problems.append(
            f"{len(missing)} completed call(s) are missing from the execution ledger"
        )
    if cut_off == 0:
        proof.problems.append("the kill cut off no tool call")
    keys = [str(alert.get("key")) for alert in alerts]
    proof.alerts = len(keys)
    for key in sorted({k for k in keys if keys.count(k) > 1}):
        proof.problems.append(f"the alert of call {key} was sent {keys.count(key)} times")
    sales = [str(trade.get("key")) for trade in trades]
    proof.trades = len(sales)
    for key in sorted({k for k in sales if sales.count(k) > 1}):
        proof.problems.append(f"the sale of call {key} was made {sales.count(key)} times")
    return proof


# -- the approval and what proves it -------------------------------------------------


@dataclass(frozen=True)
class Decision:
    """An approval decision as the run's history recorded it."""

    event_id: int
    """The history event: an accepted ``decide_approval`` update, or an
    ``approval_decision`` signal (``smyth approve --no-wait``)."""
    kind: Literal["update", "signal"]
    """How the decision came (``smyth approve`` sends an update, ``--no-wait`` a signal)."""
    request_id: str | None
    """The request decided (``None``: "the only pending one")."""
    by: str
    """Who decided."""


@dataclass(frozen=True)
class ToolScheduled:
    """A tool call's activity as the run's history recorded its scheduling."""

    event_id: int
    tool: str
    step: int
    call_id: str


@dataclass
class HistoryFacts:
    """What the demo needs from a run's history (see ``history_facts``)."""

    decisions: list[Decision] = field(default_factory=list)
    scheduled: list[ToolScheduled] = field(default_factory=list)


def history_facts(events: Iterable[HistoryEvent]) -> HistoryFacts:
    """Pick the approval decisions and the scheduled tool calls out of a run's history.

    The inputs are read from the events' payloads: JSON, as ``SmythPlugin``'s pydantic
    converter writes them.
    """
    facts = HistoryFacts()
    for event in events:
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
            update = event.workflow_execution_update_accepted_event_attributes
            if update.accepted_request.input.name != APPROVAL_UPDATE:
                continue
            decision = _payload(update.accepted_request.input.args.payloads)
            facts.decisions.append(
                Decision(
                    event.event_id,
                    "update",
                    decision.get("request_id"),
                    str(decision.get("by")),
                )
            )
        elif event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
            signal_ = event.workflow_execution_signaled_event_attributes
            if signal_.signal_name != APPROVAL_SIGNAL:
                continue
            decision = _payload(signal_.input.payloads)
            facts.decisions.append(
                Decision(
                    event.event_id,
                    "signal",
                    decision.get("request_id"),
                    str(decision.get("by")),
                )
            )
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            activity = event.activity_task_scheduled_event_attributes
            if not activity.activity_type.name.startswith("smyth.tool."):
                continue
            invocation = _payload(activity.input.payloads)
            facts.scheduled.append(
                ToolScheduled(
                    event.event_id,
                    str(invocation.get("tool")),
                    int(invocation.get("step", 0)),
                    str(invocation.get("call_id")),
                )
            )
    return facts


@dataclass
class ApprovalProof:
    """What the ledger and the history show about one approval request."""

    request: ApprovalRequest
    """The request, as the run's final state has it (decision included)."""
    runs: list[Execution] = field(default_factory=list)
    """The executions of the gated call (from the execution ledger)."""
    decision: Decision | None = None
    """The decision in history that applies to the request."""
    scheduled: list[ToolScheduled] = field(default_factory=list)
    """The gated call's activity, as many times as history scheduled it."""
    problems: list[str] = field(default_factory=list)
    """Everything that contradicts "it ran once, after the approval, or not at all"."""


def check_approval(
    request: ApprovalRequest,
    executions: Sequence[Execution],
    history: HistoryFacts,
    *,
    not_before: float,
) -> ApprovalProof:
    """Check that a gated call ran once after its approval, or never when refused.

    Args:
        request: The request as the run's final state has it.
        executions: The execution ledger (see ``read_executions``).
        history: What the run's history recorded (see ``history_facts``).
        not_before: A wall-clock time known to precede the decision (the moment the
            demo sent it, or sent its last query that still found the request pending):
            no execution of the call may start earlier.

    Returns:
        The executions and events of the call, and any problems: an approved call
        that did not run exactly once, ran before ``not_before`` or was scheduled
        before the decision in history (or with no decision in history), and a
        refused call that ran at all.
    """
    proof = ApprovalProof(request=request)
    call = (request.step, request.call_id)
    proof.runs = [e for e in executions if (e.step, e.call_id) == call]
    proof.scheduled = [s for s in history.scheduled if (s.step, s.call_id) == call]
    # A decision naming no request applies to the only pending one (check_decision).
    proof.decision = next(
        (d for d in history.decisions if d.request_id in (request.id, None)), None
    )
    label = f"{request.tool} of request {request.id}"
    if request.status == "pending":
        proof.problems.append(f"{label} was never decided")
        return proof
    if request.status != "approved":
        if proof.runs or proof.scheduled:
            times = "once" if len(proof.runs) == 1 else f"{len(proof.runs)} times"
            proof.problems.append(f"{label} was {request.status} but ran {times}")
        return proof
    if len(proof.runs) != 1 or proof.runs[0].ended is None:
        finished = sum(run.ended is not None for run in proof.runs)
        proof.problems.append(
            f"{label} was approved and then ran {len(proof.runs)} times ({finished} to the end)"
        )
    early = [run for run in proof.runs if run.started < not_before]
    if early:
        proof.problems.append(f"{label} started before it was approved")
    if proof.decision is None:
        proof.problems.append(f"the history of the run has no decision for {label}")
    if len(proof.scheduled) != 1:
        proof.problems.append(f"history scheduled {label} {len(proof.scheduled)} times")
    elif proof.decision is not None and proof.scheduled[0].event_id < proof.decision.event_id:
        proof.problems.append(f"history scheduled {label} before its decision")
    return proof


def approve_command(
    workflow_id: str,
    request: ApprovalRequest,
    *,
    by: str,
    settings: Settings,
    defaults: Settings | None,
) -> str:
    """The ``smyth approve`` command line that approves ``request`` from another terminal.

    ``--address`` and ``--namespace`` are included when the command would not reach
    the demo's server without them (``defaults``: what a bare ``smyth`` command would
    use, ``None`` when that is unknown).
    """
    words = ["smyth", "approve", workflow_id, "--by", by, "--sha256", request.arguments_sha256]
    if defaults is None or defaults.address != settings.address:
        words += ["--address", settings.address]
    if defaults is None or defaults.namespace != settings.namespace:
        words += ["--namespace", settings.namespace]
    return shlex.join(words)


def _payload(payloads: Sequence[Any]) -> dict[str, Any]:
    """The first payload as a JSON object (empty when absent or not JSON)."""
    if not payloads:
        return {}
    try:
        value = json.loads(payloads[0].data)
    except (ValueError, UnicodeDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


# -- worker processes ----------------------------------------------------------------


@dataclass
class _Worker:
    """A worker subprocess of the demo, with its output in a log file."""

    number: int
    process: subprocess.Popen[bytes]
    log_path: Path
    log_file: IO[bytes]
    spawned: float
    """Wall-clock time it was started."""

    @classmethod
    def spawn(
        cls, number: int, command: Sequence[str], *, cwd: Path, env: Mapping[str, str], log: Path
    ) -> _Worker:
        log_file = log.open("wb")
        try:
            process = subprocess.Popen(
                list(command),
                cwd=cwd,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                # Its own session: a Ctrl-C in the terminal reaches only the demo, which
                # then stops the worker itself (and so never leaves one behind).
                start_new_session=True,
            )
        except BaseException:
            log_file.close()
            raise
        return cls(number, process, log, log_file, time.time())

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def name(self) -> str:
        return f"worker {self.number}"

    def check_alive(self) -> None:
        code = self.process.poll()
        if code is not None:
            raise DemoError(
                f"{self.name} (pid {self.pid}) exited with code {code}: {self.log_tail()}"
            )

    def kill(self) -> None:
        """SIGKILL: no shutdown, no goodbye to the server, as in a crash."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        """Stop it gracefully if it still runs (SIGKILL if it lingers); close its log."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(_WORKER_STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log_file.close()

    def log_tail(self, lines: int = 3) -> str:
        try:
            text = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            text = []
        tail = " | ".join(one_line(line) for line in text[-lines:] if line.strip())
        return f"{tail or 'no output'} (log: {self.log_path})"


async def _is_polling(agents: AgentClient, task_queue: str, worker: _Worker) -> bool:
    """Whether the server has seen ``worker`` poll the task queue.

    ``AgentClient.workers_polling`` counts pollers, but the server keeps listing a
    killed worker's poller for minutes, so the count cannot tell whether the
    replacement polls. A poller is this worker's when its identity (temporalio's
    default, ``pid@host``) names its process, or when it polled after it was spawned.
    """
    response = await agents.client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=agents.client.namespace,
            task_queue=TaskQueue(name=task_queue),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        ),
        timeout=timedelta(seconds=2),
    )
    return any(
        poller.identity.startswith(f"{worker.pid}@")
        or poller.last_access_time.ToMicroseconds() / 1e6 > worker.spawned
        for poller in response.pollers
    )


# -- the demo ------------------------------------------------------------------------


class _Printer:
    """Prints lines stamped with the seconds since the demo started, and a label."""

    def __init__(self, out: TextIO, started: float) -> None:
        self.out = out
        self.started = started

    def line(self, label: str, text: str, *, at: float | None = None, wrap: bool = False) -> None:
        """Print ``text``; with ``wrap``, whole, on as many lines as it takes."""
        seconds = (time.time() if at is None else at) - self.started
        if wrap:
            text = textwrap.fill(
                text,
                width=_LINE_WIDTH + 14,
                initial_indent=_INDENT,
                subsequent_indent=_INDENT,
                break_on_hyphens=False,
                break_long_words=False,
            )[len(_INDENT) :]
        print(f"{seconds:6.1f}s  {label:<9} {text}", file=self.out, flush=True)

    def text(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)


@dataclass
class _Approval:
    """An approval request the demo saw pending, and how it was decided."""

    request: ApprovalRequest
    """As seen pending, then as decided."""
    seen: float
    """Wall-clock time the demo first saw it pending."""
    listed: float | None = None
    """When ``AgentClient.pending_approvals()`` first listed it."""
    not_before: float = 0.0
    """A wall-clock time known to precede the decision (see ``check_approval``): when
    the demo sent its approval, or a query that still found the request pending."""
    sent: float | None = None
    """When the demo sent its approval (``None``: a person decided)."""
    decided: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once the decision is known (and printed)."""


@dataclass
class _Observed:
    """What the demo saw of the agent run; the summary is made of it."""

    workflow_id: str
    started: float = 0.0
    finished: float = 0.0
    run_ids: set[str] = field(default_factory=set)
    shown: int = 0
    """Messages of the conversation printed so far."""
    calls: dict[str, ToolCall] = field(default_factory=dict)
    results: list[tuple[int, str]] = field(default_factory=list)
    """``(step, call_id)`` of every tool result seen, in order."""
    killed_at: float | None = None
    killed_step: int = 0
    cut_off: list[Execution] = field(default_factory=list)
    completed_before_kill: list[tuple[int, str]] = field(default_factory=list)
    replacement_polling: float | None = None
    rerun_started: float | None = None
    first_progress: float | None = None
    approvals: dict[str, _Approval] = field(default_factory=dict)
    """Every approval request seen pending, by id, in the order seen."""
    final_state: AgentState | None = None
    """The state once the run had finished (``None`` if no worker answered)."""


class _Demo:
    """One run of the demo: its files, worker processes, and what it observed."""

    def __init__(self, args: argparse.Namespace, out: TextIO) -> None:
        self.started = time.time()
        self.printer = _Printer(out, self.started)
        self.example = find_example()
        self.timeout: float = getattr(args, "timeout", DEFAULT_TIMEOUT)
        self.keep_server: bool = getattr(args, "keep_server", False)
        self.wants_interactive: bool = getattr(args, "interactive", False)
        # A person can only answer on a terminal; without one (CI, a pipe) waiting
        # would hang until the timeout, so the script decides instead.
        self.interactive = self.wants_interactive and sys.stdin.isatty()
        self.human_wait = 0.0
        """Seconds spent waiting for a person's decision (not counted in the timeout)."""
        self.waiting_since: float | None = None
        self.approval_tasks: list[asyncio.Task[None]] = []
        self.model: str = getattr(args, "model", None) or (
            "openai" if os.environ.get("OPENAI_API_KEY") else "scripted"
        )
        if self.model == "openai" and not os.environ.get("OPENAI_API_KEY"):
            raise DemoError(
                "--model openai needs OPENAI_API_KEY (and OPENAI_BASE_URL for endpoints "
                "other than OpenAI's); --model scripted runs offline"
            )
        # A task queue of its own: no other worker can take the demo's tasks, and the
        # server's list of pollers shows exactly the demo's workers.
        self.settings = Settings.load(
            address=getattr(args, "address", None),
            namespace=getattr(args, "namespace", None),
            task_queue=f"smyth-demo-{uuid.uuid4().hex[:8]}",
        )
        self.files = DEFAULT_STATE_DIR.resolve() / "demo"
        self.alerts_path = self.files / "alerts.jsonl"
        self.executions_path = self.files / self.example.executions_file
        self.trades_path = self.files / self.example.trades_file
        self.workers: list[_Worker] = []
        self.observed = _Observed(workflow_id=f"market-monitor-demo-{uuid.uuid4().hex[:8]}")

    async def run(self) -> int:
        shutil.rmtree(self.files, ignore_errors=True)
        self.files.mkdir(parents=True)
        self.printer.text(
            "smyth demo: an agent's worker is killed mid-run, and the agent waits for a "
            "person's approval; it finishes anyway"
        )
        self.printer.text()
        if self.wants_interactive and not self.interactive:
            self.printer.text(
                "(--interactive needs a terminal on stdin; the script approves instead)"
            )
            self.printer.text()
        server = await ensure_dev_server(self.settings.address, namespace=self.settings.namespace)
        if server is None:
            self.printer.line("temporal", f"using the server at {self.settings.address}")
        else:
            self.printer.line(
                "temporal", f"started a dev server at {server.address} (UI {server.ui_url})"
            )
        try:
            agents = await AgentClient.connect(self.settings)
            await self._ensure_search_attributes(agents)
            result = await self._run_agent(agents)
            executions = read_executions(self.executions_path)
            proof = check_ledger(
                executions,
                _read_lines(self.alerts_path),
                completed_before_kill=self.observed.completed_before_kill,
                killed_pid=self.workers[0].pid,
                trades=_read_lines(self.trades_path),
            )
            approvals = await self._check_approvals(agents, executions)
            for approval in approvals:
                proof.problems += approval.problems
            self._summary(result, proof, approvals)
        finally:
            for task in self.approval_tasks:
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
            for worker in self.workers:
                worker.stop()
            if server is not None and self.keep_server:
                self.printer.text(
                    f"The dev server keeps running at {server.address}; the run's history: "
                    f"{server.ui_url}/namespaces/{self.settings.namespace}/workflows/"
                    f"{self.observed.workflow_id}"
                )
            elif server is not None:
                server.stop()
        if proof.problems:
            raise DemoError("; ".join(proof.problems))
        if len(self.observed.run_ids) != 1:
            raise DemoError(f"the workflow changed runs: {sorted(self.observed.run_ids)}")
        return 0

    async def _ensure_search_attributes(self, agents: AgentClient) -> None:
        """Make sure the server can list agents waiting for approvals.

        A dev server the demo (or ``smyth dev``) started has the search attributes;
        another one may not, and then the agent's first upsert would fail its workflow
        task over and over: register them (idempotent, like ``temporal operator
        search-attribute create``) rather than hang.
        """
        names = [key.name for key in SEARCH_ATTRIBUTES]
        try:
            listed = await agents.client.operator_service.list_search_attributes(
                ListSearchAttributesRequest(namespace=agents.client.namespace),
                timeout=timedelta(seconds=5),
            )
            missing = [name for name in names if name not in listed.custom_attributes]
            if missing:
                await register_search_attributes(agents.client)
        except RPCError as exc:
            raise DemoError(
                f"cannot check or register the search attributes {', '.join(names)} on "
                f"{self.settings.address} ({exc.message}); register them with `temporal "
                "operator search-attribute create --name SmythStatus --type Keyword --name "
                "SmythPendingApprovals --type Int`"
            ) from exc
        if missing:
            self.printer.line("temporal", f"registered the search attributes {', '.join(missing)}")

    # -- workers -----------------------------------------------------------------------

    def _spawn(self) -> _Worker:
        number = len(self.workers) + 1
        command = [
            sys.executable,
            "-m",
            "smyth_temporal.cli",
            "worker",
            AGENT,
            "--model",
            SCRIPTED_MODEL if self.model == "scripted" else "openai",
            "--task-queue",
            self.settings.task_queue,
            "--address",
            self.settings.address,
            "--namespace",
            self.settings.namespace,
        ]
        env = {
            **os.environ,
            self.example.ledger_env: str(self.alerts_path),
            # Workers run in the example's folder, this client wherever it was
            # started: both must find large payloads in the same store.
            "SMYTH_PAYLOAD_PATH": str(
                Path(os.environ.get("SMYTH_PAYLOAD_PATH") or DEFAULT_PAYLOAD_PATH).resolve()
            ),
            "PYTHONUNBUFFERED": "1",
        }
        worker = _Worker.spawn(
            number, command, cwd=self.example.root, env=env, log=self.files / f"worker-{number}.log"
        )
        self.workers.append(worker)
        return worker

    async def _wait_polling(self, agents: AgentClient, worker: _Worker) -> None:
        deadline = time.monotonic() + _WORKER_READY_TIMEOUT
        while not await _is_polling(agents, self.settings.task_queue, worker):
            worker.check_alive()
            if time.monotonic() > deadline:
                raise DemoError(
                    f"{worker.name} did not poll within {_WORKER_READY_TIMEOUT:g}s: "
                    f"{worker.log_tail()}"
                )
            await asyncio.sleep(_POLL_INTERVAL)

    # -- the run -----------------------------------------------------------------------

    async def _run_agent(self, agents: AgentClient) -> AgentResult:
        printer, observed = self.printer, self.observed
        first = self._spawn()
        printer.line(first.name, f"started, pid {first.pid}, {self.model} model")
        await self._wait_polling(agents, first)
        printer.line(first.name, f"polling task queue {self.settings.task_queue}")

        handle = await agents.start(
            AGENT_NAME, AgentInput(prompt=self.example.prompt), id=observed.workflow_id
        )
        observed.started = time.time()
        printer.line("agent", f"started {AGENT_NAME}, workflow id {handle.id}")
        printer.line("task", one_line(self.example.prompt, _LINE_WIDTH))
        result_task = asyncio.create_task(agents.result(handle.id))
        # Queries run in the background: while no worker answers them, the loop still
        # watches the ledger and the pollers every _POLL_INTERVAL, so what it measures
        # stays accurate.
        query: asyncio.Task[AgentState | None] | None = None
        query_sent = 0.0
        replacement: _Worker | None = None
        try:
            while not result_task.done():
                if time.time() > self.started + self.timeout + self._human_seconds():
                    raise DemoError(f"the run did not finish within {self.timeout:g}s")
                for deciding in self.approval_tasks:
                    if deciding.done():
                        deciding.result()  # an approval that went wrong ends the demo
                if query is None or query.done():
                    if query is not None:
                        self._observe(agents, query.result(), sent=query_sent)
                    query_sent = time.time()
                    query = asyncio.create_task(self._query(agents))
                executions = read_executions(self.executions_path)
                if replacement is None:
                    first.check_alive()
                    running = [e for e in executions if e.pid == first.pid and _kill_point(e)]
                    if running:
                        replacement = await self._crash(agents, first, running)
                else:
                    replacement.check_alive()
                    await self._watch_recovery(agents, replacement, executions)
                await asyncio.wait({result_task}, timeout=_POLL_INTERVAL)
            result = result_task.result()
            observed.finished = time.time()
        finally:
            for task in (result_task, query):
                if task is not None and not task.done():
                    task.cancel()
                    with contextlib.suppress(BaseException):
                        await task
        final_sent = time.time()
        observed.final_state = await self._query(agents, timeout=_FINAL_QUERY_TIMEOUT)
        self._observe(agents, observed.final_state, sent=final_sent)
        # A decision the demo has not printed yet (a person's, seen at the next look).
        if self.approval_tasks:
            done, _ = await asyncio.wait(self.approval_tasks, timeout=_FINAL_QUERY_TIMEOUT)
            for decided in done:
                decided.result()
        printer.line("agent", f"{result.status} after {result.steps} steps")
        if observed.killed_at is None:
            raise DemoError(
                f"the run finished before {SLOW_TOOL} or a tool call of step "
                f"{KILL_FROM_STEP} or later ran, so there was no moment to kill the worker "
                "(the scripted model always gives one: --model scripted)"
            )
        if not observed.approvals:
            raise DemoError(
                f"the run finished without asking for an approval (of {GATED_TOOL}), so "
                "there was nothing to approve (the scripted model always asks: --model "
                "scripted)"
            )
        return result

    # -- the approval ------------------------------------------------------------------

    def _observe(self, agents: AgentClient, state: AgentState | None, *, sent: float) -> None:
        """Take in a state, of a query sent at ``sent``.

        Decisions first, so that a decision is always printed before the tool result
        it let happen; then the new messages; then the new requests.
        """
        if state is None:
            return
        self._notice_decisions(state, sent=sent)
        self._show(state)
        self._notice_approvals(agents, state)

    def _notice_decisions(self, state: AgentState, *, sent: float) -> None:
        for request in state.approvals:
            approval = self.observed.approvals.get(request.id)
            if approval is None or approval.decided.is_set():
                continue
            if request.status == "pending":
                # Still undecided when this query left: nothing of it can have run before.
                approval.not_before = max(approval.not_before, sent)
            else:
                self._decided(approval, request)

    def _decided(self, approval: _Approval, request: ApprovalRequest) -> None:
        """Record and print a decision, once.

        It comes from the update's answer or from a state, whichever the demo gets first.
        """
        if approval.decided.is_set():
            return
        approval.request = request
        approval.decided.set()
        self._print_decided(request)

    def _notice_approvals(self, agents: AgentClient, state: AgentState | None) -> None:
        """Start deciding every pending request not seen before.

        Each is decided in a task of its own, so the loop keeps printing and measuring
        meanwhile.
        """
        if state is None:
            return
        for request in state.pending_approvals:
            if request.id in self.observed.approvals:
                continue
            approval = _Approval(request=request, seen=time.time())
            self.observed.approvals[request.id] = approval
            self.approval_tasks.append(asyncio.create_task(self._decide(agents, approval)))

    async def _decide(self, agents: AgentClient, approval: _Approval) -> None:
        """Show a pending request, find it by search attribute, and get it decided."""
        request, workflow_id = approval.request, self.observed.workflow_id
        self._print_request(request)
        await self._find_listed(agents, approval)
        if self.interactive:
            await self._wait_for_person(agents, approval)
            return
        # Leave it pending for a moment: a person would take minutes, the demo a second.
        await asyncio.sleep(max(0.0, approval.seen + APPROVAL_PAUSE - time.time()))
        self.printer.line(
            "approve",
            f"AgentClient.approve(workflow_id, {request.id!r}, by={APPROVER!r}, "
            f"arguments_sha256='{request.arguments_sha256[:16]}…'): the hash printed above",
            wrap=True,
        )
        approval.sent = approval.not_before = time.time()
        outcome = await agents.approve(
            workflow_id,
            request.id,
            by=APPROVER,
            comment="approved by smyth demo",
            arguments_sha256=request.arguments_sha256,
        )
        if outcome is None:  # only with wait=False
            raise DemoError(f"the agent did not answer the approval of {request.id}")
        self._decided(approval, outcome.request)

    async def _find_listed(self, agents: AgentClient, approval: _Approval) -> None:
        """Wait until ``AgentClient.pending_approvals()`` lists the request.

        It finds waiting agents through the ``SmythPendingApprovals`` search attribute,
        with no workflow id. Visibility is eventually consistent, so it may take a
        moment; the summary reports a request it never listed as a problem.
        """
        deadline = approval.seen + _VISIBILITY_TIMEOUT
        while time.time() < deadline:
            # One slow answer (a busy visibility store) must not stall the demo.
            with contextlib.suppress(TimeoutError, SmythError, RPCError):
                async with asyncio.timeout(_QUERY_TIMEOUT * 2):
                    listed = await agents.pending_approvals()
                if any(
                    pending.workflow_id == self.observed.workflow_id
                    and pending.request.id == approval.request.id
                    for pending in listed
                ):
                    approval.listed = time.time()
                    self.printer.line(
                        "approvals",
                        f"AgentClient.pending_approvals() finds it too, with no workflow "
                        f"id ({PENDING_APPROVALS_ATTRIBUTE.name} > 0), "
                        f"{approval.listed - approval.seen:.1f}s after it was seen",
                        wrap=True,
                    )
                    return
            await asyncio.sleep(_VISIBILITY_INTERVAL)
        self.printer.line(
            "approvals",
            f"AgentClient.pending_approvals() did not list it within {_VISIBILITY_TIMEOUT:g}s",
            wrap=True,
        )

    async def _wait_for_person(self, agents: AgentClient, approval: _Approval) -> None:
        """``--interactive``: print the command that decides, then wait for a decision.

        The demo's loop keeps polling the state; it notices the decision (or the
        request's expiry) and prints it.
        """
        request, workflow_id = approval.request, self.observed.workflow_id
        by = _user()
        defaults: Settings | None
        try:
            defaults = Settings.load()
        except SmythError:
            defaults = None
        command = approve_command(
            workflow_id, request, by=by, settings=self.settings, defaults=defaults
        )
        reject = shlex.join(["smyth", "reject", workflow_id, "--by", by, "--reason", "why"])
        self.printer.line("you", "decide, from another terminal:")
        self.printer.text(f"{_INDENT}{command}")
        self.printer.text(f"{_INDENT}or: {reject}")
        self.printer.text(f"{_INDENT}waiting for the decision (Ctrl-C stops the demo)")
        self.waiting_since = time.time()
        try:
            await approval.decided.wait()
        finally:
            self.human_wait += time.time() - self.waiting_since
            self.waiting_since = None

    def _human_seconds(self) -> float:
        """Seconds a person has taken to decide so far (they do not count as the demo's)."""
        waiting = 0.0 if self.waiting_since is None else time.time() - self.waiting_since
        return self.human_wait + waiting

    def _print_request(self, request: ApprovalRequest) -> None:
        minutes = (request.deadline - request.requested_at).total_seconds() / 60
        self.printer.line(
            "APPROVAL",
            f"the run waits for a decision on {_request_label(request)}; nothing has run",
        )
        details = [
            ("request", f"{request.id} (step {request.step})"),
            ("tool", f"{request.tool} {json.dumps(request.arguments, sort_keys=True)}"),
            ("sha256", request.arguments_sha256),
            ("reason", request.reason or "(the model gave none)"),
            (
                "deadline",
                f"{_utc(request.deadline)}, in {minutes:g} min "
                f"(then {_AT_DEADLINE.get(request.on_timeout, request.on_timeout)})",
            ),
        ]
        for name, value in details:
            self.printer.text(
                textwrap.fill(
                    value,
                    width=_LINE_WIDTH + 14,
                    initial_indent=f"{_INDENT}{name:<9} ",
                    subsequent_indent=" " * (len(_INDENT) + 10),
                    break_on_hyphens=False,
                    break_long_words=False,
                )
            )

    def _print_decided(self, request: ApprovalRequest) -> None:
        decision = request.decision
        by = decision.by if decision else "nobody"
        waited = _seconds_between(request.requested_at, request.decided_at)
        when = f"at {_utc(request.decided_at)}" if request.decided_at else ""
        if request.status == "approved":
            edited = (
                " with edited arguments"
                if decision is not None and decision.arguments is not None
                else ""
            )
            self.printer.line(
                "approved",
                f"by {by}{edited} {when}, {waited} after the request; the run resumes",
                wrap=True,
            )
        else:
            why = f" ({decision.comment})" if decision and decision.comment else ""
            self.printer.line(
                request.status,
                f"by {by}{why} {when}, {waited} after the request; {request.tool} will not "
                "run, the model is told why",
                wrap=True,
            )

    async def _check_approvals(
        self, agents: AgentClient, executions: Sequence[Execution]
    ) -> list[ApprovalProof]:
        """Check every request the demo saw against the ledger and the run's history."""
        final = self.observed.final_state
        handle = agents.client.get_workflow_handle(self.observed.workflow_id)
        facts = history_facts([event async for event in handle.fetch_history_events()])
        proofs = []
        for approval in self.observed.approvals.values():
            request = approval.request
            if final is not None:
                request = next((r for r in final.approvals if r.id == request.id), request)
            proof = check_approval(request, executions, facts, not_before=approval.not_before)
            if approval.listed is None:
                proof.problems.append(
                    f"AgentClient.pending_approvals() never listed request {request.id}"
                )
            proofs.append(proof)
        return proofs

    async def _crash(
        self, agents: AgentClient, worker: _Worker, running: Sequence[Execution]
    ) -> _Worker:
        observed = self.observed
        # What Temporal has recorded as done, as late as possible before the kill.
        sent = time.time()
        self._observe(agents, await self._query(agents), sent=sent)
        worker.kill()
        observed.killed_at = time.time()
        observed.killed_step = max(e.step for e in running)
        observed.cut_off = list(running)
        observed.completed_before_kill = list(observed.results)
        labels = ", ".join(e.label for e in running)
        self.printer.line(
            "CRASH", f"{labels} running on {worker.name}: SIGKILL to pid {worker.pid}"
        )
        replacement = self._spawn()
        self.printer.line(replacement.name, f"started, pid {replacement.pid}, to take over")
        return replacement

    async def _watch_recovery(
        self, agents: AgentClient, worker: _Worker, executions: Sequence[Execution]
    ) -> None:
        observed = self.observed
        assert observed.killed_at is not None
        if observed.replacement_polling is None and await _is_polling(
            agents, self.settings.task_queue, worker
        ):
            observed.replacement_polling = time.time()
            self.printer.line(
                worker.name,
                f"polling, {observed.replacement_polling - observed.killed_at:.1f}s after the kill",
            )
        if observed.rerun_started is None:
            keys = {e.key for e in observed.cut_off}
            rerun = [e for e in executions if e.pid == worker.pid and e.key in keys]
            if rerun:
                observed.rerun_started = rerun[0].started
                self.printer.line(
                    "retry",
                    f"{rerun[0].label} attempt {rerun[0].attempt} starts on {worker.name}, "
                    f"{observed.rerun_started - observed.killed_at:.1f}s after the kill",
                    at=rerun[0].started,
                )

    async def _query(
        self, agents: AgentClient, *, timeout: float = _QUERY_TIMEOUT
    ) -> AgentState | None:
        """The agent's state, or ``None`` when no worker answers in time."""
        try:
            async with asyncio.timeout(timeout):
                return await agents.state(self.observed.workflow_id)
        except (TimeoutError, SmythError, RPCError, WorkflowQueryFailedError):
            return None  # no worker answers right now (or the server is busy): ask again

    def _show(self, state: AgentState | None) -> None:
        """Print the messages of the conversation not printed yet."""
        if state is None:
            return
        observed = self.observed
        observed.run_ids.add(state.run_id)
        offset = state.message_count - len(state.messages)
        if offset > observed.shown:
            self.printer.line("...", f"{offset - observed.shown} messages not shown")
        # A state older than what was shown (a slow query) gives an empty slice here.
        new = state.messages[max(observed.shown, offset) - offset :]
        observed.shown = max(observed.shown, state.message_count)
        if new and observed.killed_at is not None and observed.first_progress is None:
            observed.first_progress = time.time()
        for message in new:
            self._print_message(message)

    def _print_message(self, message: Message) -> None:
        label = f"step {message.step}"
        if message.role == "assistant" and message.tool_calls:
            for call in message.tool_calls:
                self.observed.calls[call.id] = call
            if message.content:  # why it calls: what an approver is shown
                self.printer.line(label, one_line(f"model says: {message.content}", _LINE_WIDTH))
            calls = ", ".join(_call_label(call) for call in message.tool_calls)
            self.printer.line(label, one_line(f"model calls {calls}", _LINE_WIDTH))
        elif message.role == "assistant":
            self.printer.line(label, one_line(f"model answers: {message.content}", _LINE_WIDTH))
        elif message.role == "tool" and message.step is not None and message.tool_call_id:
            self.observed.results.append((message.step, message.tool_call_id))
            asked = self.observed.calls.get(message.tool_call_id)
            name = _call_label(asked) if asked else message.name or "tool"
            text = f"{name} -> {_brief(message.content or '')}"
            self.printer.line(label, one_line(text, _LINE_WIDTH))

    # -- the summary -------------------------------------------------------------------

    def _summary(
        self, result: AgentResult, proof: Proof, approvals: Sequence[ApprovalProof]
    ) -> None:
        """Print the output and what was measured; every claim is computed, none canned."""
        observed, text = self.observed, self.printer.text
        assert observed.killed_at is not None
        killed_at = observed.killed_at
        workers = {worker.pid: worker.name for worker in self.workers}

        def after_kill(at: float | None) -> str:
            return "not seen" if at is None else f"{at - killed_at:4.1f}s after the kill"

        def attempt(run: Execution) -> str:
            where = workers.get(run.pid, f"pid {run.pid}")
            how = "ran to the end" if run.ended is not None else "never finished"
            return f"attempt {run.attempt} on {where} {how}"

        text()
        text(f"Output ({result.status}):")
        for line in result.output.splitlines():
            text(f"  {line}")
        text()
        text("Summary:")
        one_run = "one workflow run" if len(observed.run_ids) == 1 else "SEVERAL runs"
        text(
            f"  run        {observed.workflow_id}: {result.steps} steps, {one_run}, "
            f"{_plural(len(self.workers), 'worker')}"
        )
        text(f"  usage      {format_usage(result.usage)}")
        text(
            f"  time       {observed.finished - self.started:.1f}s from `smyth demo` to the "
            f"output, {observed.finished - observed.started:.1f}s of it for the run"
        )
        cut_off = ", ".join(e.label for e in observed.cut_off)
        text(
            f"  crash      SIGKILL to worker 1 (pid {self.workers[0].pid}) at step "
            f"{observed.killed_step}, during {cut_off}"
        )
        text(f"  recovery   worker 2 polling       {after_kill(observed.replacement_polling)}")
        text(f"             cut-off call re-run    {after_kill(observed.rerun_started)}")
        text(f"             first new result       {after_kill(observed.first_progress)}")
        text(f"             steps went on from {observed.killed_step} to {result.steps}")
        calls = len(proof.completed) + len(proof.interrupted) + len(proof.later)
        text(
            f"  proof      {_relative(self.executions_path)}: "
            f"{_plural(proof.executions, 'execution')} of {_plural(calls, 'call')}"
        )
        once = [runs[0].label for runs in proof.completed if len(runs) == 1]
        text(
            _wrap(
                f"- {len(once)} of {_plural(len(proof.completed), 'call')} completed before "
                f"the kill ran exactly once: {', '.join(once) or 'none'}"
            )
        )
        for runs in proof.interrupted:
            keys = {run.key for run in runs}
            key = f"the same idempotency key {runs[0].key}" if len(keys) == 1 else "other keys"
            text(
                _wrap(
                    f"- {runs[0].label} was running at the kill: "
                    + "; ".join(attempt(run) for run in runs)
                    + f"; {key}"
                )
            )
        later_once = sum(len(runs) == 1 for runs in proof.later)
        text(
            _wrap(
                f"- {later_once} of {_plural(len(proof.later), 'call')} made after the "
                "kill ran exactly once"
            )
        )
        twice = sum("alert of call" in problem for problem in proof.problems)
        text(
            _wrap(
                f"- {_plural(proof.alerts, 'alert')} in {_relative(self.alerts_path)}, "
                f"{twice or 'none'} sent twice"
            )
        )
        for approval in approvals:
            self._summarize_approval(approval, proof)
        text(f"  files      {_relative(self.files)}/ (ledgers, worker logs)")
        for problem in proof.problems:
            text(f"  PROBLEM    {problem}")

    def _summarize_approval(self, approval: ApprovalProof, proof: Proof) -> None:
        """The approval lines of the summary: who decided when, and what ran after."""
        text, request = self.printer.text, approval.request
        seen = self.observed.approvals.get(request.id)
        decision = request.decision
        by = decision.by if decision else "nobody"
        text(
            _wrap(
                f"{_request_label(request)}, step {request.step}: {request.status} by {by} "
                f"after {_seconds_between(request.requested_at, request.decided_at)}",
                first="  approval   ",
            )
        )
        if seen is not None and seen.listed is not None:
            text(
                _wrap(
                    f"- AgentClient.pending_approvals() listed it "
                    f"{seen.listed - seen.seen:.1f}s after it was seen "
                    f"(search attribute {PENDING_APPROVALS_ATTRIBUTE.name})"
                )
            )
        else:
            text(_wrap("- AgentClient.pending_approvals() never listed it"))
        sales = sum("sale of call" in problem for problem in proof.problems)
        trades = (
            f"{_plural(proof.trades, 'sale')} in {_relative(self.trades_path)}, "
            f"{sales or 'none'} made twice"
        )
        if request.status != "approved":
            text(_wrap(f"- {request.tool} did not run: {len(approval.runs)} executions; {trades}"))
        elif approval.runs:
            run = approval.runs[0]
            after = ""
            if seen is not None and seen.sent is not None:
                after = f", {run.started - seen.sent:.2f}s after the approval was sent"
            elif seen is not None and seen.not_before:
                after = f", {run.started - seen.not_before:.2f}s after it was last seen pending"
            times = "once" if len(approval.runs) == 1 else f"{len(approval.runs)} times"
            text(_wrap(f"- {request.tool} ran {times}{after}; {trades}"))
        else:
            text(_wrap(f"- {request.tool} never ran; {trades}"))
        if approval.decision is not None:
            kind = (
                f"update {APPROVAL_UPDATE} accepted"
                if approval.decision.kind == "update"
                else f"signal {APPROVAL_SIGNAL}"
            )
            events = ", ".join(str(s.event_id) for s in approval.scheduled)
            scheduled = f"scheduled at event {events}" if events else "never scheduled"
            text(
                _wrap(
                    f"- history: {kind} from {approval.decision.by} at event "
                    f"{approval.decision.event_id}; smyth.tool.{request.tool} {scheduled}"
                )
            )
        else:
            text(_wrap("- history: no decision found"))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``smyth demo`` to its parser.

    The parser already has the connection options every command shares
    (``--address``, ``--namespace``); without a server at the address, the demo starts
    a dev server there.
    """
    parser.add_argument(
        "--model",
        choices=["scripted", "openai"],
        help="scripted (offline) or openai (OPENAI_API_KEY, OPENAI_BASE_URL); "
        "default: openai when OPENAI_API_KEY is set, else scripted",
    )
    parser.add_argument(
        "--keep-server",
        action="store_true",
        help="leave running a dev server the demo started",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        help=f"seconds the demo may take (default: {DEFAULT_TIMEOUT:g}; the time you "
        "take to decide with --interactive does not count)",
    )
    parser.add_argument(
        "--interactive",
        action="store_true",
        help="decide the approval yourself, with `smyth approve` (or `smyth reject`) "
        "from another terminal, instead of letting the demo approve it; needs a "
        "terminal on stdin",
    )


def main(args: argparse.Namespace) -> int:
    """Run the demo.

    Args:
        args: The options ``add_arguments`` defines.

    Returns:
        0 when the run recovered from the crash and the ledgers prove that no
        completed call ran twice; 1 otherwise (with a one-line reason on stderr);
        130 or 143 when interrupted by SIGINT or SIGTERM. Every process the demo
        started is stopped on every path.
    """
    try:
        return asyncio.run(_main(args, sys.stdout))
    except SmythError as exc:
        print(error_line(f"demo: {exc}"), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(error_line("demo interrupted; its processes were stopped"), file=sys.stderr)
        return 130
    except asyncio.CancelledError:  # SIGTERM, see _main
        print(error_line("demo terminated; its processes were stopped"), file=sys.stderr)
        return 143


async def _main(args: argparse.Namespace, out: TextIO) -> int:
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    installed = False
    if task is not None:
        # SIGTERM cancels the demo as Ctrl-C does, so the finally blocks stop the
        # workers and the server instead of leaving them behind.
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGTERM, task.cancel)
            installed = True
    try:
        return await _Demo(args, out).run()
    finally:
        if installed:
            loop.remove_signal_handler(signal.SIGTERM)
        # As every smyth command does: temporalio's core threads still release Python
        # objects for a moment after the last call, and an interpreter that finalizes
        # meanwhile can abort the process (temporalio/sdk-python#300).
        await asyncio.sleep(CORE_SETTLE_DELAY)


def _kill_point(execution: Execution) -> bool:
    """Whether the worker running ``execution`` now is killed."""
    return execution.ended is None and (
        execution.tool == SLOW_TOOL or execution.step >= KILL_FROM_STEP
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


def _request_label(request: ApprovalRequest) -> str:
    """``sell_position(ACME, 5000)``, as ``Execution.label`` writes the same call."""
    return f"{request.tool}({', '.join(str(v) for v in request.arguments.values())})"


def _utc(moment: datetime | None) -> str:
    """``2025-01-15 15:30:01.234 UTC``."""
    if moment is None:
        return "unknown"
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def _seconds_between(start: datetime, end: datetime | None) -> str:
    return "?s" if end is None else f"{(end - start).total_seconds():.1f}s"


def _user() -> str:
    """Who runs the demo, for the ``--by`` of the command it prints."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no USER/LOGNAME and no passwd entry (containers)
        return "you"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _wrap(text: str, *, first: str = " " * 13) -> str:
    """A summary bullet (or a ``first``-labelled line), wrapped under the second column."""
    return textwrap.fill(
        text,
        width=_LINE_WIDTH + 14,
        initial_indent=first,
        subsequent_indent=" " * 15,
        break_on_hyphens=False,
    )


def _relative(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _read_lines(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    entries: list[dict[str, Any]] = []
    for line in text.splitlines():
        # A line a worker is writing right now may be cut short; it is read next time.
        with contextlib.suppress(json.JSONDecodeError):
            entries.append(json.loads(line))
    return entries
