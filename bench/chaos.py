"""Chaos: random SIGKILLs of workers and of the Temporal server under a mixed agent load.

From the repository root::

    .venv/bin/python -m bench.chaos [--kills 100] [--concurrency 6] [--seed 1]
        [--max-minutes 10] [--json bench/results/chaos.json]

An embedded dev server (``smyth_temporal.devserver``, its state in a SQLite file) and
three worker processes (``bench._chaos_worker``) serve a steady mixed load, several
runs at a time:

- ``approval``: a quote, then a sale that waits for a person; the bench approves it;
- ``session``: a session answers two messages (a quote each), then closes;
- ``continue_as_new``: four steps, continuing as new after every one;
- ``mcp``: two writes through a stdio MCP server (``tests.helpers.mcp_ledger_server``);
- ``streamed``: a quote, then a 60-word answer streamed a word at a time.

Every run has an event reader (``AgentClient.events``) that resumes after its last
offset when the stream breaks. Meanwhile the bench SIGKILLs, every 0.8-3.2 s, one of three workers
(replaced at once) or, one time in four, the server (restarted on the same file and
port). It stops killing after ``--kills`` kills, lets the runs finish, and reports:

- runs lost: runs that did not complete with the expected answer;
- completed tool calls re-run: a tool execution beyond what Temporal attempted (a
  key executed more times than the attempts its activities had), or a call
  scheduled again after it completed (a key completed twice);
- events duplicated / missing: a reader's events, against a full read afterwards
  (an offset twice; an offset never read and not announced by a ``gap``), and
  streamed messages whose text the reader got cut or garbled;
- approvals lost: approvals the server acknowledged whose sale never ran.

Attempts re-run after a kill cut them off (the at-least-once retries the tools'
idempotency keys exist for) are counted apart. Every figure but those must be 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import shutil
import signal
import socket
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from temporalio.api.enums.v1 import EventType, WorkflowTaskFailedCause
from temporalio.client import Client
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError

from bench._chaos_agents import ChaosDesk, ChaosLong, ChaosStreamer, ChaosTrader
from bench._chaos_worker import STREAMED_WORDS
from bench._results import headline, write_json
from smyth_temporal import AgentClient, AgentInput, SmythPlugin, configure_logging
from smyth_temporal.devserver import DevServer
from smyth_temporal.exceptions import AgentFailedError, InvalidDecisionError
from smyth_temporal.testing import new_task_queue
from smyth_temporal.types.events import TextAssembler
from smyth_temporal.types.sessions import session_workflow_id
from tests.helpers.agents import read_ledger
from tests.helpers.cli_support import free_port
from tests.helpers.mcp_agents import Scribe
from tests.helpers.worker_process import WorkerProcess, start_until_ready

T = TypeVar("T")

KINDS = ("approval", "session", "continue_as_new", "mcp", "streamed")
WORKERS = 3
SERVER_SHARE = 0.25
"""The share of kills that hit the server rather than a worker."""
KILL_GAP = (0.8, 3.2)
"""Seconds between kills (uniform), counted once the server is back."""
DRAIN_SECONDS = 150.0
"""How long the runs in flight get to finish once the killing stops."""
RETRY_PAUSE = 0.5
READY_SECONDS = 120.0
"""How long a worker may take to poll before it is started again."""


@dataclass
class RunRecord:
    """One run of the load, as the bench drove it."""

    kind: str
    workflow_id: str
    expected: str
    """Text the answer must contain (or, for a session, each reply)."""
    started: bool = False
    completed: bool = False
    problem: str = ""
    approvals_acknowledged: int = 0
    events: list[Any] = field(default_factory=list)
    reader_resumes: int = 0


@dataclass
class Tally:
    """What happened to the machinery."""

    worker_kills: int = 0
    server_kills: int = 0
    worker_exits: int = 0
    """Workers that ended without being killed (restarted too)."""
    worker_spawn_failures: int = 0
    server_restart_seconds: list[float] = field(default_factory=list)
    decisions_refused_after_applied: int = 0
    """Approvals retried after a server kill lost the answer, refused because the first
    one had been applied (the run shows it decided)."""
    decisions_refused: Counter[str] = field(default_factory=Counter)
    """Every refused decision, by message (then the bench looks at the run again)."""
    client_errors: Counter[str] = field(default_factory=Counter)
    """Errors the bench's client calls met and retried, by type."""


class Chaos:
    """The server, the workers, the load and the killing."""

    def __init__(self, args: argparse.Namespace, scratch: Path) -> None:
        self.args = args
        self.scratch = scratch
        self.random = random.Random(args.seed)
        self.port = _free_port_pair()
        self.db = scratch / "temporal.db"
        self.ledger = scratch / "ledger.jsonl"
        self.task_queue = new_task_queue("chaos")
        self.tally = Tally()
        self.runs: list[RunRecord] = []
        self.server: DevServer | None = None
        self.server_up = asyncio.Event()
        self.workers: list[WorkerProcess | None] = [None] * WORKERS
        self.killing = True
        self.loading = True
        self.began = time.monotonic()
        self.deadline = self.began + args.max_minutes * 60
        self.agents: AgentClient
        self.tasks: set[asyncio.Future[None]] = set()
        self.task_failures: Counter[str] = Counter()
        """Workflow tasks that failed (not timed out), by cause and message, from history."""

    def clock(self) -> str:
        """Seconds since the bench started, for the progress lines."""
        return f"{time.monotonic() - self.began:6.1f}s"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    # -- the server and the workers ---------------------------------------------------

    async def start_server(self) -> None:
        began = time.monotonic()
        self.server = DevServer(
            port=self.port,
            host="127.0.0.1",
            db_path=self.db,
            state_dir=self.scratch,
            die_with_parent=True,
        ).start()
        await self.server.wait_ready(timeout=90)
        self.tally.server_restart_seconds.append(time.monotonic() - began)
        self.server_up.set()

    def kill_server(self) -> None:
        assert self.server is not None and self.server.process is not None
        self.server_up.clear()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.server.process.pid, signal.SIGKILL)
        self.server.process.wait()
        self.server.stop()  # closes its log file; the process is gone already
        self.tally.server_kills += 1

    def background(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def spawn_worker(self, slot: int) -> None:
        """Start a worker in ``slot`` (again, if one dies before it polls)."""
        while self.workers[slot] is None and time.monotonic() < self.deadline:
            await self.server_up.wait()
            # A worker rides out server restarts while it starts (it keeps asking).
            starting = asyncio.ensure_future(
                start_until_ready(
                    "bench._chaos_worker",
                    [
                        "--address",
                        self.address,
                        "--task-queue",
                        self.task_queue,
                        "--ledger",
                        str(self.ledger),
                    ],
                    log=self.scratch / f"worker-{slot}.log",
                    timeout=READY_SECONDS,
                )
            )
            try:
                self.workers[slot] = await starting
            except (Exception, asyncio.CancelledError):
                self.tally.worker_spawn_failures += 1
                await asyncio.sleep(RETRY_PAUSE)

    async def supervise(self) -> None:
        """Replace workers that ended by themselves (a kill replaces its own)."""
        while self.loading or any(r.started and not r.completed for r in self.runs):
            for slot, worker in enumerate(self.workers):
                if worker is not None and worker.process.returncode is not None:
                    self.tally.worker_exits += 1
                    self.workers[slot] = None
                    self.background(self.spawn_worker(slot))
            await asyncio.sleep(0.5)
            if time.monotonic() > self.deadline:
                return

    async def kill_loop(self) -> None:
        kills = 0
        stop_at = self.deadline - DRAIN_SECONDS - 30
        while kills < self.args.kills and time.monotonic() < stop_at:
            await asyncio.sleep(self.random.uniform(*KILL_GAP))
            await self.server_up.wait()
            live = [s for s, w in enumerate(self.workers) if w is not None]
            # With every worker still starting (slow on a loaded machine), the server
            # is the target: the pace of kills does not wait for Python start-ups.
            if not live or self.random.random() < SERVER_SHARE:
                self.kill_server()
                print(f"  {self.clock()} kill {kills + 1}: server", flush=True)
                await self.start_server()
            else:
                slot = self.random.choice(live)
                worker = self.workers[slot]
                assert worker is not None
                worker.kill()
                await worker.process.wait()
                self.workers[slot] = None
                self.tally.worker_kills += 1
                print(f"  {self.clock()} kill {kills + 1}: worker {slot}", flush=True)
                self.background(self.spawn_worker(slot))
            kills += 1
        self.killing = False

    # -- client calls through the chaos -------------------------------------------------

    async def retried(self, call: Callable[[], Awaitable[T]]) -> T:
        """``call()`` until it answers, across server restarts (until the deadline)."""
        while True:
            try:
                return await call()
            except (InvalidDecisionError, AgentFailedError, WorkflowAlreadyStartedError):
                raise
            except Exception as exc:
                self.tally.client_errors[_error_name(exc)] += 1
                if time.monotonic() > self.deadline:
                    raise
                await asyncio.sleep(RETRY_PAUSE)
                await self.server_up.wait()

    async def start(self, record: RunRecord, agent: Any, prompt: str) -> None:
        # WorkflowAlreadyStartedError: an earlier attempt started it, and its answer was
        # lost with the server.
        with contextlib.suppress(WorkflowAlreadyStartedError):
            await self.retried(
                lambda: self.agents.start(agent, AgentInput(prompt=prompt), id=record.workflow_id)
            )
        record.started = True

    async def read_events(self, record: RunRecord) -> None:
        """Follow the run's events, resuming after the last offset whenever it breaks."""
        after: int | None = None
        while time.monotonic() < self.deadline:
            try:
                async for event in self.agents.events(record.workflow_id, after=after):
                    record.events.append(event)
                    if event.offset >= 0:
                        after = event.offset
                return
            except Exception as exc:
                self.tally.client_errors[f"events: {_error_name(exc)}"] += 1
                record.reader_resumes += 1
                await asyncio.sleep(RETRY_PAUSE)
                await self.server_up.wait()

    async def finish(self, record: RunRecord, reader: asyncio.Task[None]) -> None:
        try:
            result = await self.retried(lambda: self.agents.result(record.workflow_id))
        except AgentFailedError as exc:
            record.problem = f"failed: {exc}"
            return
        finally:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(reader), 30)
        if record.expected not in (result.output or ""):
            record.problem = f"answer {result.output!r} lacks {record.expected!r}"
            return
        record.completed = True

    # -- the load ---------------------------------------------------------------------

    async def one_run(self, number: int, kind: str) -> None:
        workflow_id = f"chaos-{kind}-{number}"
        expected = {
            "approval": "sold 5 ACME",
            "session": "re message 2",
            "continue_as_new": "42.0",
            "mcp": "wrote second",
            "streamed": f"w{STREAMED_WORDS - 1:02d} end.",
        }[kind]
        record = RunRecord(kind, workflow_id, expected)
        self.runs.append(record)
        if kind == "session":
            await self.session(record, str(number))
            return
        agent = {
            "approval": ChaosTrader,
            "continue_as_new": ChaosLong,
            "mcp": Scribe,
            "streamed": ChaosStreamer,
        }[kind]
        await self.start(record, agent, f"{kind} {number}")
        reader = asyncio.create_task(self.read_events(record))
        if kind == "approval":
            await self.approve(record)
        await self.finish(record, reader)

    async def approve(self, record: RunRecord) -> None:
        """Approve the sale as a careful client does: look, decide, and after a refusal
        look again (applied by an attempt whose answer was lost? not pending yet?)."""
        refused = False
        while time.monotonic() < self.deadline:
            state = await self.retried(lambda: self.agents.state(record.workflow_id))
            if any(a.decision is not None and a.decision.approved for a in state.approvals):
                record.approvals_acknowledged += 1
                self.tally.decisions_refused_after_applied += int(refused)
                return
            if state.output:
                return  # over without asking (the answer check will say so)
            pending = state.pending_approvals
            if not pending:
                await asyncio.sleep(0.2)
                continue
            request_id = pending[0].id
            try:
                await self.retried(
                    lambda rid=request_id: self.agents.approve(  # type: ignore[misc]
                        record.workflow_id, rid, by="chaos"
                    )
                )
            except InvalidDecisionError as exc:
                refused = True
                self.tally.decisions_refused[str(exc)[:80]] += 1
                await asyncio.sleep(RETRY_PAUSE)
                continue
            record.approvals_acknowledged += 1
            return
        record.problem = "the sale was never approved"

    async def session(self, record: RunRecord, session_id: str) -> None:
        for message in (1, 2):
            text = f"message {message}"
            reply = await self.send(record, session_id, text)
            if reply is None:
                record.problem = f"{text} never answered"
                return
            if not reply.startswith(f"re {text}"):
                record.problem = f"{text} answered {reply!r}"
                return
        await self.retried(lambda: self.agents.close_session(ChaosDesk, session_id))
        record.completed = True

    async def send(self, record: RunRecord, session_id: str, text: str) -> str | None:
        """Send once; after a failure, look before sending again (a send is not idempotent)."""
        workflow_id = session_workflow_id("ChaosDesk", "default", session_id)
        record.workflow_id = workflow_id
        record.started = True
        while time.monotonic() < self.deadline:
            try:
                reply = await self.agents.send(ChaosDesk, session_id, text)
                assert reply is not None
                return reply.text
            except Exception as exc:
                self.tally.client_errors[f"send: {_error_name(exc)}"] += 1
            await asyncio.sleep(RETRY_PAUSE)
            await self.server_up.wait()
            # Did it arrive? Then wait for its answer instead of sending it twice.
            try:
                state = await self.retried(lambda: self.agents.state(workflow_id))
            except Exception:
                continue
            texts = [m.content or "" for m in state.messages]
            if text in texts:
                while time.monotonic() < self.deadline:
                    answers = [t for t in texts if t.startswith(f"re {text}")]
                    if answers:
                        return answers[0]
                    await asyncio.sleep(0.3)
                    state = await self.retried(lambda: self.agents.state(workflow_id))
                    texts = [m.content or "" for m in state.messages]
        return None

    async def load(self) -> None:
        counter = 0
        running: set[asyncio.Task[None]] = set()
        while self.killing:
            while len(running) < self.args.concurrency and self.killing:
                kind = KINDS[counter % len(KINDS)]
                counter += 1
                task = asyncio.create_task(self.one_run(counter, kind))
                running.add(task)
                task.add_done_callback(running.discard)
            await asyncio.sleep(0.2)
        self.loading = False
        drain_until = time.monotonic() + DRAIN_SECONDS
        while running and time.monotonic() < min(drain_until, self.deadline):
            await asyncio.sleep(0.5)
        for task in list(running):
            task.cancel()
        for record in self.runs:
            if not record.completed and not record.problem:
                record.problem = "still running when the bench stopped"

    # -- verification -----------------------------------------------------------------

    async def verify(self) -> dict[str, Any]:
        ledger = read_ledger(self.ledger)
        executed: Counter[str] = Counter(
            e["key"] for e in ledger if e.get("key") and not str(e["tool"]).endswith(".start")
        )
        attempts: Counter[str] = Counter()
        completions: Counter[str] = Counter()
        for record in self.runs:
            if not record.started:
                continue
            a, c = await self.retried(lambda r=record: self.activity_keys(r.workflow_id))  # type: ignore[misc]
            attempts.update(a)
            completions.update(c)
        rerun_after_completion = sum(n - 1 for n in completions.values() if n > 1)
        beyond_attempts = sum(
            max(0, n - attempts[key]) for key, n in executed.items() if key in attempts
        )
        unknown = sum(n for key, n in executed.items() if key not in attempts)
        retried_cut = sum(
            max(0, min(n, attempts[key]) - completions[key]) for key, n in executed.items()
        )
        duplicated = missing = garbled = 0
        garbled_runs: list[dict[str, Any]] = []
        for record in self.runs:
            if not record.completed or record.kind == "session":
                continue  # (sessions are checked by their replies: no reader follows them)
            full = await self.retried(lambda r=record: self.all_events(r.workflow_id))  # type: ignore[misc]
            details: list[dict[str, Any]] = []
            d, m, g = _compare_events(record.events, full, details)
            for detail in details:
                garbled_runs.append({"id": record.workflow_id, **detail})
            duplicated, missing, garbled = duplicated + d, missing + m, garbled + g
        approvals = [r for r in self.runs if r.kind == "approval"]
        approvals_lost = sum(
            1
            for r in approvals
            if r.approvals_acknowledged
            and not any(e["tool"] == "sell" and r.workflow_id in str(e.get("key")) for e in ledger)
        )
        lost = [r for r in self.runs if r.started and not r.completed]
        return {
            "runs": sum(1 for r in self.runs if r.started),
            "runs_by_kind": dict(Counter(r.kind for r in self.runs if r.started)),
            "runs_lost": len(lost),
            "lost": [{"kind": r.kind, "id": r.workflow_id, "why": r.problem} for r in lost],
            "tool_executions": sum(executed.values()),
            "completed_tool_calls_rerun": rerun_after_completion + beyond_attempts,
            "executions_without_activity": unknown,
            "cut_attempts_retried": retried_cut,
            "events_read": sum(len(r.events) for r in self.runs),
            "reader_resumes": sum(r.reader_resumes for r in self.runs),
            "events_duplicated": duplicated,
            "events_missing": missing,
            "streamed_messages_garbled": garbled,
            "garbled": garbled_runs,
            "approvals": sum(r.approvals_acknowledged for r in approvals),
            "approvals_lost": approvals_lost,
            "workflow_task_failures": dict(self.task_failures),
        }

    async def activity_keys(self, workflow_id: str) -> tuple[Counter[str], Counter[str]]:
        """Per idempotency key: attempts Temporal made, and activities that completed."""
        client = self.agents.client
        attempts: Counter[str] = Counter()
        completions: Counter[str] = Counter()
        async for execution in client.list_workflows(f"WorkflowId = '{workflow_id}'"):
            history = await client.get_workflow_handle(
                workflow_id, run_id=execution.run_id
            ).fetch_history()
            keys: dict[int, str] = {}
            for event in history.events:
                if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
                    payloads = event.activity_task_scheduled_event_attributes.input.payloads
                    values = await client.data_converter.decode(payloads)
                    key = _find_key(values)
                    if key is not None:
                        keys[event.event_id] = key
                elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
                    started = event.activity_task_started_event_attributes
                    if started.scheduled_event_id in keys:
                        attempts[keys[started.scheduled_event_id]] += started.attempt
                elif event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
                    failed = event.workflow_task_failed_event_attributes
                    cause = WorkflowTaskFailedCause.Name(failed.cause)
                    self.task_failures[f"{cause}: {failed.failure.message[:100]}"] += 1
                elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
                    done = event.activity_task_completed_event_attributes
                    if done.scheduled_event_id in keys:
                        completions[keys[done.scheduled_event_id]] += 1
        return attempts, completions

    async def all_events(self, workflow_id: str) -> list[Any]:
        return [e async for e in self.agents.events(workflow_id, after=None)]


def _error_name(exc: BaseException) -> str:
    """An error's type, with its RPC status and the start of its message."""
    if isinstance(exc, RPCError):
        return f"RPCError {exc.status.name}: {exc.message[:60]}"
    return f"{type(exc).__name__}: {str(exc)[:60]}"


def _find_key(value: Any) -> str | None:
    """The ``idempotency_key`` somewhere in a decoded activity input."""
    if isinstance(value, dict):
        key = value.get("idempotency_key")
        if isinstance(key, str):
            return key
        value = list(value.values())
    if isinstance(value, list | tuple):
        for item in value:
            found = _find_key(item)
            if found is not None:
                return found
    return None


def _compare_events(
    read: list[Any], full: list[Any], garbled_details: list[dict[str, Any]] | None = None
) -> tuple[int, int, int]:
    """(duplicated, missing, garbled streamed messages) of a reader against a full read.

    Run events have an offset each: one read twice is a duplicate, one never read and
    not announced by a ``gap`` is missing. A streamed message is garbled when the text
    its deltas built (dropping superseded attempts, as ``TextAssembler`` does) is not
    the message that completed.
    """
    seen: Counter[int] = Counter()
    announced: set[int] = set()
    assembler = TextAssembler()
    streamed: set[str] = set()
    garbled = 0
    for event in read:
        if event.kind in ("text_delta", "text_reset"):
            assembler.add(event)
            if event.message_id is not None:
                streamed.add(event.message_id)
            continue
        if event.kind == "gap":
            announced.update(range(event.first_missing, event.first_available))
        if (
            event.kind == "message"
            and event.message_id in streamed
            and assembler.text(event.message_id) != (event.message.content or "")
        ):
            garbled += 1
            if garbled_details is not None:
                deltas = [
                    (e.kind, e.offset, getattr(e, "attempt", None), getattr(e, "text", ""))
                    for e in read
                    if e.kind in ("text_delta", "text_reset") and e.message_id == event.message_id
                ]
                garbled_details.append(
                    {
                        "message_id": event.message_id,
                        "read": assembler.text(event.message_id),
                        "content": event.message.content,
                        "deltas": deltas,
                    }
                )
        seen[event.offset] += 1
    duplicated = sum(n - 1 for n in seen.values() if n > 1)
    wanted = {e.offset for e in full if e.kind not in ("text_delta", "text_reset")}
    missing = len(wanted - set(seen) - announced)
    return duplicated, missing, garbled


def _free_port_pair() -> int:
    """A frontend port whose UI port (port + 1000) is free too."""
    for _ in range(50):
        port = free_port()
        with contextlib.suppress(OSError):
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", port + 1000))
            return port
    raise RuntimeError("no free port pair")


async def run(args: argparse.Namespace) -> dict[str, Any]:
    scratch = Path(tempfile.mkdtemp(prefix="smyth-chaos-"))
    os.environ["SMYTH_PAYLOAD_PATH"] = str(scratch / "payloads")  # workers inherit it
    chaos = Chaos(args, scratch)
    began = time.monotonic()
    try:
        await chaos.start_server()
        client = await Client.connect(chaos.address, plugins=[SmythPlugin()])
        chaos.agents = AgentClient(client, task_queue=chaos.task_queue)
        await asyncio.gather(*(chaos.spawn_worker(slot) for slot in range(WORKERS)))
        print(
            f"server {chaos.address} ({scratch}), {WORKERS} workers; "
            f"{args.kills} kills, {args.concurrency} runs at a time",
            flush=True,
        )
        supervisor = asyncio.create_task(chaos.supervise())
        await asyncio.gather(chaos.kill_loop(), chaos.load())
        chaos_seconds = time.monotonic() - began
        # Verification reads every history: give the workers and server a calm moment.
        await chaos.server_up.wait()
        figures = await chaos.verify()
        supervisor.cancel()
    finally:
        for task in list(chaos.tasks):
            task.cancel()  # a worker still starting is killed by start_until_ready
        await asyncio.gather(*chaos.tasks, return_exceptions=True)
        for worker in chaos.workers:
            if worker is not None:
                await worker.stop()
        if chaos.server is not None:
            chaos.server.stop()
    figures.update(
        kills=chaos.tally.server_kills + chaos.tally.worker_kills,
        worker_kills=chaos.tally.worker_kills,
        server_kills=chaos.tally.server_kills,
        worker_exits=chaos.tally.worker_exits,
        worker_spawn_failures=chaos.tally.worker_spawn_failures,
        decisions_refused_after_applied=chaos.tally.decisions_refused_after_applied,
        decisions_refused=dict(chaos.tally.decisions_refused),
        server_start_seconds_median=sorted(chaos.tally.server_restart_seconds)[
            len(chaos.tally.server_restart_seconds) // 2
        ],
        client_errors_retried=dict(chaos.tally.client_errors),
        seconds=round(chaos_seconds, 1),
        seed=args.seed,
        concurrency=args.concurrency,
        load_average=os.getloadavg()[0],
    )
    guarantees = (
        "runs_lost",
        "completed_tool_calls_rerun",
        "executions_without_activity",
        "events_duplicated",
        "events_missing",
        "streamed_messages_garbled",
        "approvals_lost",
    )
    figures["all_zero"] = all(figures[name] == 0 for name in guarantees)
    if figures["all_zero"] and not args.keep:
        shutil.rmtree(scratch, ignore_errors=True)
    else:
        figures["scratch"] = str(scratch)  # kept: the ledger, the logs, the database
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.chaos", description=__doc__)
    parser.add_argument("--kills", type=int, default=10, help="SIGKILLs in all (default 10)")
    parser.add_argument("--concurrency", type=int, default=8, help="runs at a time")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-minutes", type=float, default=10.0, help="hard bound")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument(
        "--keep", action="store_true", help="keep the scratch directory (logs, ledger, db)"
    )
    args = parser.parse_args()
    configure_logging("ERROR")
    figures = asyncio.run(run(args))
    print(json.dumps(figures, indent=2))
    if args.json is not None:
        split = f"{figures['worker_kills']} workers, {figures['server_kills']} server"
        headlines = [
            headline("chaos: SIGKILLs", figures["kills"], None, "", split),
            headline("chaos: runs", figures["runs"], None, "", "5 kinds, round robin"),
        ] + [
            headline(f"chaos: {name.replace('_', ' ')}", figures[name], None, "", "must be 0")
            for name in (
                "runs_lost",
                "completed_tool_calls_rerun",
                "events_duplicated",
                "events_missing",
                "streamed_messages_garbled",
                "approvals_lost",
            )
        ]
        write_json(args.json, "chaos", headlines, figures)


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    os._exit(0)  # temporalio's core threads may abort a normal teardown (sdk-python#300)
