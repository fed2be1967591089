"""``smyth demo``: watch an agent survive the crash of its worker, offline, in seconds.

The demo runs the market monitor of ``examples/market_monitor`` (a scripted model by
default, so no model endpoint or key is needed):

1. make sure a Temporal server answers (reuse one, or start the embedded dev server);
2. start a worker process and, once it polls, an agent run;
3. print the run's progress from its ``state`` query, one line per step and result;
4. while a tool call is running (two steps in), kill the worker with SIGKILL;
5. start a new worker process, and show the same run carry on where it was;
6. print the result and what the tools' ledgers prove: every call that had completed
   before the kill ran exactly once, and the call cut off re-ran with the same
   idempotency key.

Everything printed is measured during the run; nothing is canned. The files of a run
(ledgers, worker logs) are under ``.smyth/demo/``, fresh each time.

Added in 0.1.0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import IO, Any, TextIO

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import WorkflowQueryFailedError
from temporalio.service import RPCError

import smyth_temporal
from smyth_temporal.agent.messages import Message, ToolCall
from smyth_temporal.agent.types import AgentInput, AgentResult, AgentState
from smyth_temporal.cli._devserver import DEFAULT_STATE_DIR, ensure_dev_server
from smyth_temporal.cli._output import error_line, format_usage, one_line
from smyth_temporal.client import AgentClient
from smyth_temporal.exceptions import ClientError, SmythError
from smyth_temporal.settings import Settings

__all__ = [
    "AGENT",
    "AGENT_NAME",
    "DEFAULT_TIMEOUT",
    "KILL_FROM_STEP",
    "SCRIPTED_MODEL",
    "SLOW_TOOL",
    "DemoError",
    "Example",
    "Execution",
    "Proof",
    "add_arguments",
    "check_ledger",
    "find_example",
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

DEFAULT_TIMEOUT = 120.0
"""Seconds the whole demo may take before it gives up."""

_POLL_INTERVAL = 0.1
_QUERY_TIMEOUT = 2.0
"""A query needs a worker; while there is none it would hang, so it is cut short."""
_FINAL_QUERY_TIMEOUT = 10.0
_WORKER_READY_TIMEOUT = 30.0
_WORKER_STOP_TIMEOUT = 10.0
_LINE_WIDTH = 76


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
) -> Proof:
    """Check the ledgers against what Temporal had recorded when the worker was killed.

    Args:
        executions: The execution ledger (see ``read_executions``).
        alerts: The alert ledger's entries (each with the ``key`` of its call).
        completed_before_kill: ``(step, call_id)`` of every tool result the agent's
            state showed before the kill: calls Temporal knew were done.
        killed_pid: The process id of the killed worker.

    Returns:
        The calls sorted into completed, interrupted and later, and any problems:
        a completed call that ran more or less than once, an interrupted call that
        did not re-run exactly once to the end, a later call that ran twice, an
        alert sent twice, or no call cut off by the kill at all.
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
    return proof


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

    def line(self, label: str, text: str, *, at: float | None = None) -> None:
        seconds = (time.time() if at is None else at) - self.started
        print(f"{seconds:6.1f}s  {label:<9} {text}", file=self.out, flush=True)

    def text(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)


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


class _Demo:
    """One run of the demo: its files, worker processes, and what it observed."""

    def __init__(self, args: argparse.Namespace, out: TextIO) -> None:
        self.started = time.time()
        self.printer = _Printer(out, self.started)
        self.example = find_example()
        self.timeout: float = getattr(args, "timeout", DEFAULT_TIMEOUT)
        self.keep_server: bool = getattr(args, "keep_server", False)
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
        self.workers: list[_Worker] = []
        self.observed = _Observed(workflow_id=f"market-monitor-demo-{uuid.uuid4().hex[:8]}")

    async def run(self) -> int:
        shutil.rmtree(self.files, ignore_errors=True)
        self.files.mkdir(parents=True)
        self.printer.text(
            "smyth demo: an agent's worker is killed mid-run; the agent finishes anyway"
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
            result = await self._run_agent(agents)
            proof = check_ledger(
                read_executions(self.executions_path),
                _read_lines(self.alerts_path),
                completed_before_kill=self.observed.completed_before_kill,
                killed_pid=self.workers[0].pid,
            )
            self._summary(result, proof)
        finally:
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
        replacement: _Worker | None = None
        try:
            while not result_task.done():
                if time.time() > self.started + self.timeout:
                    raise DemoError(f"the run did not finish within {self.timeout:g}s")
                if query is None or query.done():
                    if query is not None:
                        self._show(query.result())
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
        self._show(await self._query(agents, timeout=_FINAL_QUERY_TIMEOUT))
        printer.line("agent", f"{result.status} after {result.steps} steps")
        if observed.killed_at is None:
            raise DemoError(
                f"the run finished before {SLOW_TOOL} or a tool call of step "
                f"{KILL_FROM_STEP} or later ran, so there was no moment to kill the worker "
                "(the scripted model always gives one: --model scripted)"
            )
        return result

    async def _crash(
        self, agents: AgentClient, worker: _Worker, running: Sequence[Execution]
    ) -> _Worker:
        observed = self.observed
        # What Temporal has recorded as done, as late as possible before the kill.
        self._show(await self._query(agents))
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

    def _summary(self, result: AgentResult, proof: Proof) -> None:
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
        text(f"  files      {_relative(self.files)}/ (ledgers, worker logs)")
        for problem in proof.problems:
            text(f"  PROBLEM    {problem}")


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
        help=f"seconds the demo may take (default: {DEFAULT_TIMEOUT:g})",
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


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _wrap(text: str) -> str:
    """A summary bullet, wrapped under the summary's second column."""
    return textwrap.fill(
        text,
        width=_LINE_WIDTH + 14,
        initial_indent=" " * 13,
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
