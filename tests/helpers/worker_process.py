"""A smyth worker in a process of its own, so tests and benchmarks can SIGKILL it mid-run.

Run it from the repository root::

    .venv/bin/python -m tests.helpers.worker_process --address 127.0.0.1:7233 \
        --task-queue Q --ledger /tmp/ledger.jsonl --script crash-tool

It serves the test agents (``tests.helpers.agents``) plus ``RecoveryProbe`` with a
``ScriptedModel`` playing ``SCRIPTS[--script]``, prints ``READY`` on stdout once the
server sees it polling, and runs until it is killed (SIGTERM/SIGINT shut it down
cleanly). Logs go to stderr, so nothing but ``READY`` is ever written to stdout.

Every tool execution is appended to the ``--ledger`` JSON-lines file by
``tests.helpers.agents.record``; this worker records every model call there too
(``model.start`` when the call begins, ``model`` when it answers), so a test can tell
exactly which step ran on which process, with which attempt.

The parent side is here too: ``spawn_worker`` starts one and waits for ``READY``;
``read_ledger`` reads what all of them recorded.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio import activity, workflow
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.client import Client
from temporalio.worker import Worker

from smyth_temporal import AgentConfig, AgentInput, AgentResult, AgentWorkflow, configure_logging
from smyth_temporal.clients import pollers
from smyth_temporal.tools import Tool, tool, tool_context

# This module defines a workflow, so the sandbox re-imports it: its worker-side imports
# (the plugin, the model providers, the testing helpers) are passed through as is.
with workflow.unsafe.imports_passed_through():
    from smyth_temporal.models import ModelRequest, ModelResponse
    from smyth_temporal.plugin import DEFAULT_STICKY_QUEUE_TIMEOUT, SmythPlugin
    from smyth_temporal.testing import ScriptedModel, ScriptStep, reply, tool_call
from tests.helpers.agents import LEDGER_ENV, Analyst, Summarizer, get_quote, record
from tests.helpers.mcp_agents import Scribe
from tests.helpers.policy_agents import Treasurer
from tests.helpers.trader import Trader

READY = "READY"

# Module-level code here runs again inside the workflow sandbox (which re-imports the
# module of every workflow class it runs), so it must stay free of I/O: no
# ``Path.resolve()`` or environment reads outside functions.

# -- a probe agent for recovery measurements -----------------------------------------

PROBE_HEARTBEATS = (2, 5, 15, 30)
"""Heartbeat timeouts (seconds) of the ``lookup_hb<N>`` tools ``RecoveryProbe`` offers."""


def _probe_lookup(heartbeat_seconds: int) -> Tool:
    name = f"lookup_hb{heartbeat_seconds}"

    async def lookup(symbol: str, seconds: float = 2.0) -> str:
        """A slow read-only lookup.

        Args:
            symbol: The ticker.
            seconds: How long the lookup takes.
        """
        record(f"{name}.start", symbol=symbol)
        await asyncio.sleep(seconds)
        record(name, symbol=symbol)
        return f"{symbol} looked up"

    # The heartbeat timeout is the knob under test: it is how long the server waits
    # before it declares an attempt on a dead worker lost and retries it.
    return tool(name=name, heartbeat_timeout=timedelta(seconds=heartbeat_seconds))(lookup)


PROBE_TOOLS = tuple(_probe_lookup(seconds) for seconds in PROBE_HEARTBEATS)


@tool(local=True, timeout=timedelta(seconds=30))
async def local_lookup(symbol: str, seconds: float = 2.0) -> str:
    """A slow read-only lookup run as a local activity (in the agent's own worker).

    Args:
        symbol: The ticker.
        seconds: How long the lookup takes.
    """
    context = tool_context()
    record("local_lookup.start", symbol=symbol, key=context.idempotency_key)
    await asyncio.sleep(seconds)
    record("local_lookup", symbol=symbol, key=context.idempotency_key)
    return f"{symbol} looked up locally"


@tool
def blocking_lookup(symbol: str, seconds: float = 2.0, cpu_seconds: float = 0.0) -> str:
    """A slow lookup that blocks (a plain ``def``, every option the SDK's default).

    Args:
        symbol: The ticker.
        seconds: How long it sleeps (``time.sleep``, holding its thread).
        cpu_seconds: How long it then spins the CPU in pure Python (holding the GIL
            as much as the interpreter lets it).
    """
    context = tool_context()
    record("blocking_lookup.start", symbol=symbol, key=context.idempotency_key)
    time.sleep(seconds)
    spin_until = time.monotonic() + cpu_seconds
    spins = 0
    while time.monotonic() < spin_until:
        spins += 1
    record("blocking_lookup", symbol=symbol, key=context.idempotency_key, spins=spins)
    return f"{symbol} looked up, blocking"


@workflow.defn
class RecoveryProbe(AgentWorkflow):
    """The default loop, with slow tools of several heartbeat timeouts (for benchmarks)."""

    config = AgentConfig(
        model="test-model",
        tools=[get_quote, *PROBE_TOOLS, local_lookup, blocking_lookup],
        max_steps=8,
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


WORKFLOWS: tuple[type[AgentWorkflow], ...] = (
    Analyst,
    Summarizer,
    RecoveryProbe,
    Trader,
    Treasurer,
)
"""The agents every worker process serves; ``-mcp`` scripts add ``Scribe`` (it needs the
ledger MCP server, which only those workers have)."""

# -- scripts ---------------------------------------------------------------------------


def tool_results(request: ModelRequest) -> ModelResponse:
    """Answer with every tool result the model has seen, joined: proof that the results
    of the calls before and after a crash all reached the model."""
    return reply(" | ".join(m.content or "" for m in request.messages if m.role == "tool"))


@dataclass(frozen=True)
class Script:
    """A model script, plus model turns that take a while (to kill a worker during one)."""

    steps: Sequence[ScriptStep]
    model_delays: Mapping[int, float] = field(default_factory=dict)
    """Seconds the model takes on a given step (from 1) before it answers."""


SLOW_TOOL_SECONDS = 3.0
"""How long the in-flight call of the crash scripts takes: long enough that a test
sees it start and kills the worker before it ends, even on a loaded machine."""

SCRIPTS: dict[str, Script] = {
    # Analyst: three calls complete, the fourth (slow) one is in flight at the kill.
    "crash-tool": Script(
        [
            tool_call("get_quote", symbol="ACME"),
            tool_call("place_order", order={"symbol": "ACME", "quantity": 3}),
            tool_call("write_note", text="bought 3 ACME"),
            tool_call("slow_lookup", symbol="ACME", seconds=SLOW_TOOL_SECONDS),
            tool_call("get_quote", symbol="GLOBEX"),
            tool_results,
        ]
    ),
    # Analyst: two calls complete, then the model itself is in flight at the kill.
    "crash-model": Script(
        [
            tool_call("get_quote", symbol="ACME"),
            tool_call("place_order", order={"symbol": "ACME", "quantity": 3}),
            tool_call("write_note", text="bought 3 ACME"),
            tool_results,
        ],
        model_delays={3: SLOW_TOOL_SECONDS},
    ),
    # RecoveryProbe, one script per heartbeat timeout of the in-flight call.
    **{
        f"probe-hb{seconds}": Script(
            [
                tool_call("get_quote", symbol="ACME"),
                tool_call(f"lookup_hb{seconds}", symbol="ACME", seconds=2.0),
                tool_call("get_quote", symbol="GLOBEX"),
                tool_results,
            ]
        )
        for seconds in PROBE_HEARTBEATS
    },
    # RecoveryProbe with the SDK's defaults: a quote, then a blocking (plain ``def``)
    # call in flight at the kill, then another quote.
    "crash-blocking": Script(
        [
            tool_call("get_quote", symbol="ACME"),
            tool_call("blocking_lookup", symbol="ACME", seconds=SLOW_TOOL_SECONDS),
            tool_call("get_quote", symbol="GLOBEX"),
            tool_results,
        ]
    ),
    # The same with a 2 s call, for the recovery bench.
    "probe-default": Script(
        [
            tool_call("get_quote", symbol="ACME"),
            tool_call("blocking_lookup", symbol="ACME", seconds=2.0),
            tool_call("get_quote", symbol="GLOBEX"),
            tool_results,
        ]
    ),
    # RecoveryProbe: a healthy blocking call of 10 s (5 s asleep, 5 s of CPU), far
    # past the default 2 s heartbeat timeout; nothing crashes.
    "blocking-10s": Script(
        [
            tool_call("blocking_lookup", symbol="ACME", seconds=5.0, cpu_seconds=5.0),
            tool_results,
        ]
    ),
    # RecoveryProbe: a quote, then a slow local tool call in flight at the kill.
    "crash-local": Script(
        [
            tool_call("get_quote", symbol="ACME"),
            tool_call("local_lookup", symbol="ACME", seconds=SLOW_TOOL_SECONDS),
            tool_call("get_quote", symbol="GLOBEX"),
            tool_results,
        ]
    ),
    "echo": Script([reply("done")]),
    # Scribe (MCP, the stdio ledger server): a write, then a slow one in flight at the
    # kill, then another write.
    "crash-mcp": Script(
        [
            tool_call("write", text="before"),
            tool_call("slow_write", text="in flight", seconds=SLOW_TOOL_SECONDS),
            tool_call("write", text="after"),
            tool_results,
        ]
    ),
    # Treasurer: a hotfix whose request escalates after 2 s and is rejected after 4 s.
    "approval-hotfix": Script([tool_call("hotfix", service="db"), tool_results]),
    # Trader: a quote, then a sale that waits for a person's decision.
    "approval-sell": Script(
        [
            tool_call("sell", symbol="ACME", quantity=7),
            tool_results,
        ]
    ),
}


class LedgerModel:
    """A ``ScriptedModel`` that records each call in the ledger and is slow when told."""

    def __init__(self, script: Script) -> None:
        self._script = script
        self._model = ScriptedModel(script.steps)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        _record_model("model.start", request)
        delay = self._script.model_delays.get(request.step)
        if delay:
            await asyncio.sleep(delay)
        response = await self._model.complete(request)
        # ScriptedModel keeps every request for assertions, which nobody makes on a
        # worker process: a real provider keeps none, and the benches measure what a
        # parked agent costs the worker, not this list.
        self._model.requests.clear()
        _record_model("model", request)
        return response


def _record_model(event: str, request: ModelRequest) -> None:
    path = os.environ.get(LEDGER_ENV)
    if not path:
        return
    info = activity.info()
    entry = {
        "tool": event,
        "key": f"{info.workflow_id}/{request.step}",
        "step": request.step,
        "attempt": info.attempt,
        "pid": os.getpid(),
    }
    with Path(path).open("a") as ledger:
        ledger.write(json.dumps(entry) + "\n")


# -- the worker (child side) -------------------------------------------------------------


async def _wait_until_polling(client: Client, task_queue: str, identity: str) -> None:
    """Return once the server lists this worker among the queue's pollers of both kinds.

    ``Worker.__aenter__`` returns before the first poll reaches the server; a parent
    that starts a run (or kills another worker) on ``READY`` needs the real thing.
    """
    kinds = (TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY)
    while True:
        seen = 0
        for kind in kinds:
            polling = await pollers(client, task_queue, kind)
            seen += any(p.identity == identity for p in polling)
        if seen == len(kinds):
            return
        await asyncio.sleep(0.05)


async def serve(args: argparse.Namespace) -> None:
    """Run the worker until SIGTERM/SIGINT (or SIGKILL, which is the point)."""
    # tests.helpers.agents.record reads the ledger path from the environment at call time.
    os.environ[LEDGER_ENV] = args.ledger
    configure_logging(args.log_level)
    sticky = (
        timedelta(seconds=args.sticky_queue_timeout)
        if args.sticky_queue_timeout is not None
        else DEFAULT_STICKY_QUEUE_TIMEOUT
    )
    mcp_servers = None
    workflows: list[type[AgentWorkflow]] = list(WORKFLOWS)
    if args.script.endswith("-mcp"):
        from tests.helpers.mcp_servers import ledger_server

        mcp_servers = {"ledger": ledger_server(Path(args.ledger))}
        workflows.append(Scribe)
    plugin = SmythPlugin(
        model=LedgerModel(SCRIPTS[args.script]),
        sticky_queue_timeout=sticky,
        mcp_servers=mcp_servers,
    )
    client = await Client.connect(args.address, namespace=args.namespace, plugins=[plugin])
    identity = f"worker-process-{os.getpid()}"
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    options: dict[str, Any] = {}
    if args.max_cached_workflows is not None:
        options["max_cached_workflows"] = args.max_cached_workflows
    worker = Worker(
        client,
        task_queue=args.task_queue,
        workflows=workflows,
        identity=identity,
        graceful_shutdown_timeout=timedelta(seconds=1),
        **options,
    )
    async with worker:
        await asyncio.wait_for(_wait_until_polling(client, args.task_queue, identity), 60)
        print(READY, flush=True)
        await stop.wait()


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m tests.helpers.worker_process", description=__doc__
    )
    parser.add_argument("--address", required=True, help="Temporal frontend, host:port")
    parser.add_argument("--namespace", default="default")
    parser.add_argument("--task-queue", required=True)
    parser.add_argument("--ledger", required=True, help="JSON-lines file of executions")
    parser.add_argument("--script", required=True, choices=sorted(SCRIPTS))
    parser.add_argument(
        "--sticky-queue-timeout",
        type=float,
        default=None,
        help="seconds (default: the SDK's DEFAULT_STICKY_QUEUE_TIMEOUT)",
    )
    parser.add_argument("--max-cached-workflows", type=int, default=None)
    parser.add_argument("--log-level", default="WARNING")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    asyncio.run(serve(parse_args(argv)))
    # temporalio's Rust threads can outlive the interpreter and abort its teardown
    # ("PyGILState_Release ... finalizing", temporalio/sdk-python#300): after a clean
    # shutdown there is nothing left to tear down that matters.
    sys.stdout.flush()
    os._exit(0)


# -- the parent side ---------------------------------------------------------------------


class WorkerProcess:
    """A running ``tests.helpers.worker_process`` child: its pid, and how to kill it."""

    def __init__(self, process: asyncio.subprocess.Process, log: Path, started: float) -> None:
        self.process = process
        self.log = log
        self.ready_seconds = time.monotonic() - started
        """Seconds from spawning the process to its ``READY``."""

    @property
    def pid(self) -> int:
        return self.process.pid

    def kill(self) -> float:
        """SIGKILL the process (no cleanup of any kind runs); return the monotonic time."""
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGKILL)
        return time.monotonic()

    async def stop(self) -> None:
        """Kill the process if it still runs and reap it."""
        if self.process.returncode is None:
            self.kill()
        await self.process.wait()


async def spawn_worker(
    *,
    address: str,
    task_queue: str,
    ledger: Path,
    script: str,
    log: Path,
    sticky_queue_timeout: float | None = None,
    extra_args: Sequence[str] = (),
    ready_timeout: float = 60.0,
) -> WorkerProcess:
    """Start a worker process and wait for its ``READY``.

    Its stderr goes to ``log`` (appended), and is quoted if it dies before ``READY``.
    The caller owns the process: ``stop()`` it in a ``finally``.
    """
    args = [
        "--address",
        address,
        "--task-queue",
        task_queue,
        "--ledger",
        str(ledger),
        "--script",
        script,
        *extra_args,
    ]
    if sticky_queue_timeout is not None:
        args += ["--sticky-queue-timeout", str(sticky_queue_timeout)]
    return await start_until_ready(
        "tests.helpers.worker_process", args, log=log, timeout=ready_timeout
    )


async def start_until_ready(
    module: str, args: Sequence[str], *, log: Path, timeout: float
) -> WorkerProcess:
    """Run ``python -m module ARGS`` from the repository root until it prints ``READY``.

    Its stderr goes to ``log`` (appended), and is quoted if it dies before ``READY``.
    The caller owns the process: ``stop()`` it in a ``finally``.
    """
    started = time.monotonic()
    with log.open("ab") as stderr:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            module,
            *args,
            cwd=Path(__file__).resolve().parents[2],  # the repository root
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
        )
    handle = WorkerProcess(process, log, started)
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), timeout)
    except BaseException:
        await handle.stop()
        raise
    if line.decode().strip() != READY:
        await handle.stop()
        tail = log.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"{module} exited before {READY}; its stderr:\n{tail}")
    handle.ready_seconds = time.monotonic() - started
    return handle


if __name__ == "__main__":
    # Run from the module imported under its real name: workflow classes defined in
    # ``__main__`` could not be re-imported by the workflow sandbox.
    from tests.helpers.worker_process import main as _main

    _main()
