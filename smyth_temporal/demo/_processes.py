"""The processes the demo starts: its worker processes and, when needed, a dev server.

Every process started here is stopped by the scenario on every path (success,
failure, Ctrl-C, SIGTERM); each runs in a session of its own, so a Ctrl-C in the
terminal reaches only the demo, which then stops them itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import structlog

from smyth_temporal.clients import AgentClient
from smyth_temporal.demo._example import AGENT, SCRIPTED_MODEL, Example
from smyth_temporal.demo._options import DemoError
from smyth_temporal.demo._render import one_line
from smyth_temporal.devserver import DevServer, ensure_dev_server
from smyth_temporal.settings import PAYLOAD_PATH_ENV, PayloadSettings, Settings
from smyth_temporal.storage import DEFAULT_PAYLOAD_PATH

__all__ = ["Worker", "Workers", "temporal_server"]

log = structlog.get_logger("smyth_temporal.demo")

_POLL_INTERVAL = 0.1
_POLLERS_TIMEOUT = 2.0
"""Seconds one look at the task queue's pollers may take (the demo looks often)."""
_WORKER_READY_TIMEOUT = 30.0
_WORKER_STOP_TIMEOUT = 10.0


@contextlib.asynccontextmanager
async def temporal_server(settings: Settings, *, keep: bool) -> AsyncIterator[DevServer | None]:
    """Make sure a Temporal server answers at ``settings.address`` while the demo runs.

    Yields:
        ``None`` when a server already answered (the demo leaves it alone); otherwise
        the dev server it started, stopped on the way out unless ``keep``.
    """
    server = await ensure_dev_server(settings.address, namespace=settings.namespace)
    try:
        yield server
    finally:
        if server is not None and not keep:
            server.stop()


@dataclass
class Worker:
    """A worker subprocess of the demo, with its output in a log file."""

    number: int
    """1 for the first worker, 2 for its replacement."""
    process: subprocess.Popen[bytes]
    """The process."""
    log_path: Path
    """Where its output goes."""
    log_file: IO[bytes]
    """That file, open while the process runs."""
    pollers_before: int
    """Workers the server listed on the task queue just before this one started."""

    @property
    def pid(self) -> int:
        """Its process id."""
        return self.process.pid

    @property
    def name(self) -> str:
        """``worker 1``."""
        return f"worker {self.number}"

    def check_alive(self) -> None:
        """Raise ``DemoError`` (with the end of its log) if the process has exited."""
        code = self.process.poll()
        if code is not None:
            raise DemoError(
                f"{self.name} (pid {self.pid}) exited with code {code}: {self.log_tail()}"
            )

    def kill(self) -> None:
        """SIGKILL: no shutdown, no goodbye to the server, as in a crash."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        log.info("demo.worker.killed", worker=self.number, pid=self.pid)

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
        """The last few lines of its log, on one line, and where the log is."""
        try:
            text = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            text = []
        tail = " | ".join(one_line(line) for line in text[-lines:] if line.strip())
        return f"{tail or 'no output'} (log: {self.log_path})"


class Workers:
    """The demo's worker processes, all serving the example's agent on one task queue.

    The task queue is the demo's own (see ``Settings.task_queue``), so the server's
    list of its pollers shows exactly the demo's workers.
    """

    def __init__(
        self,
        agents: AgentClient,
        settings: Settings,
        *,
        example: Example,
        model: str,
        files: Path,
        ledger: Path,
    ) -> None:
        """Describe the workers; none starts until ``spawn()``.

        Args:
            agents: The demo's client, to see which workers poll.
            settings: Where the workers connect, and the demo's task queue.
            example: The example the workers run, from its root directory.
            model: ``scripted`` or ``openai``.
            files: Where the workers' logs go.
            ledger: The alert ledger the example's tools write (the execution and
                trade ledgers go beside it).
        """
        self.agents = agents
        self.settings = settings
        self.example = example
        self.model = model
        self.files = files
        self.ledger = ledger
        self.started: list[Worker] = []
        """Every worker started, in order."""

    def __iter__(self) -> Iterator[Worker]:
        return iter(self.started)

    async def spawn(self) -> Worker:
        """Start one more worker process (it polls a moment later; see ``wait_polling``)."""
        number = len(self.started) + 1
        pollers = await self._pollers()
        if pollers is None:
            raise DemoError(
                f"the server did not list the pollers of {self.settings.task_queue} "
                f"within {_POLLERS_TIMEOUT:g}s"
            )
        path = self.files / f"worker-{number}.log"
        log_file = path.open("wb")
        try:
            process = subprocess.Popen(
                self._command(),
                cwd=self.example.root,
                env=self._environment(),
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
        worker = Worker(number, process, path, log_file, pollers_before=pollers)
        self.started.append(worker)
        log.info("demo.worker.started", worker=number, pid=worker.pid, log=str(path))
        return worker

    async def is_polling(self, worker: Worker) -> bool:
        """Whether the server has seen ``worker`` poll the task queue.

        The server keeps listing a killed worker's poller for minutes, so a worker
        polls once the queue lists more pollers than just before it started.
        """
        pollers = await self._pollers()
        return pollers is not None and pollers > worker.pollers_before

    async def wait_polling(self, worker: Worker) -> None:
        """Wait until ``worker`` polls the task queue.

        Raises:
            DemoError: It exited, or did not poll within 30 seconds.
        """
        deadline = time.monotonic() + _WORKER_READY_TIMEOUT
        while not await self.is_polling(worker):
            worker.check_alive()
            if time.monotonic() > deadline:
                raise DemoError(
                    f"{worker.name} did not poll within {_WORKER_READY_TIMEOUT:g}s: "
                    f"{worker.log_tail()}"
                )
            await asyncio.sleep(_POLL_INTERVAL)

    def stop(self) -> None:
        """Stop every worker still running."""
        for worker in self.started:
            worker.stop()

    async def _pollers(self) -> int | None:
        """Workers polling the task queue, or ``None`` when the server is slow to say."""
        try:
            async with asyncio.timeout(_POLLERS_TIMEOUT):
                return await self.agents.workers_polling(self.settings.task_queue)
        except TimeoutError:
            return None

    def _command(self) -> list[str]:
        return [
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

    def _environment(self) -> Mapping[str, str]:
        store = PayloadSettings.load().payload_path or DEFAULT_PAYLOAD_PATH
        return {
            # The workers inherit this process's environment (an exception the
            # architecture test lists: a subprocess's environment is what it reads).
            **os.environ,
            self.example.ledger_env: str(self.ledger),
            # Workers run in the example's folder, the demo wherever it was started:
            # both must find large payloads in the same store.
            PAYLOAD_PATH_ENV: str(store.resolve()),
            "PYTHONUNBUFFERED": "1",
        }
