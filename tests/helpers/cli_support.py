"""Running ``smyth`` and ``smyth worker`` as real processes, for the CLI tests."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROCESS_TIMEOUT = 60.0
"""An upper bound for one CLI process or a worker's start; generous for a loaded machine."""

# Variables a test's worker must not inherit from the developer's shell unless asked.
_ISOLATED_ENV = ("OPENAI_API_KEY", "SMYTH_EMBEDDER", "QDRANT_URL")


@dataclass
class Outcome:
    """What a ``smyth`` command did."""

    code: int
    out: str
    err: str

    @property
    def error_lines(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.strip()]

    def json(self) -> Any:
        assert self.code == 0, self.err
        return json.loads(self.out)


def free_port() -> int:
    """A loopback port nothing listens on (now), below the kernel's ephemeral range.

    A port from ``bind(0)`` comes from the range the kernel also takes the source ports
    of outgoing connections from, so until the server under test binds it, any of the
    suite's connections may take it: seen once, a dev server failing with "address
    already in use". Ports below that range are only ever taken on purpose.
    """
    low = _ephemeral_low()
    if low - _LOWEST_PORT < 1_000:  # an unusual range: take what the kernel hands out
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            return int(sock.getsockname()[1])
    for _ in range(200):
        port = random.randrange(_LOWEST_PORT, low)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free loopback port between {_LOWEST_PORT} and {low}")


_LOWEST_PORT = 10_000
"""Above the well-known and most registered service ports."""


def _ephemeral_low() -> int:
    """The lowest port of the kernel's ephemeral range (Linux; 32768 elsewhere)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


def assert_one_error_line(outcome: Outcome, message: str) -> None:
    """Exit 1, nothing on stdout, and exactly ``smyth: error: ...`` containing ``message``."""
    assert outcome.code == 1, outcome
    assert outcome.out == ""
    assert len(outcome.error_lines) == 1, outcome.err  # no traceback
    assert outcome.error_lines[0].startswith("smyth: error: "), outcome.err
    assert message in outcome.error_lines[0], outcome.err


def run_smyth(*args: str, env: Mapping[str, str] | None = None) -> Outcome:
    """``smyth ARGS`` as a process, from the repository root."""
    completed = subprocess.run(
        [sys.executable, "-m", "smyth_temporal.cli", *args],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT,
    )
    return Outcome(completed.returncode, completed.stdout, completed.stderr)


def spawn_worker(
    agents: Sequence[str],
    *,
    model: str,
    address: str,
    task_queue: str,
    log: Path,
    env: Mapping[str, str] | None = None,
    args: Sequence[str] = (),
) -> subprocess.Popen[bytes]:
    """``smyth worker AGENTS --model MODEL [ARGS]``; returns once it polls (``worker.ready``).

    The caller stops it with ``stop_process`` in a ``finally``.
    """
    child_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    for name in _ISOLATED_ENV:
        if name not in (env or {}):
            child_env.pop(name, None)
    with log.open("wb") as stderr:  # the child keeps its own descriptor
        process = subprocess.Popen(
            [
                *(sys.executable, "-m", "smyth_temporal.cli", "worker", *agents),
                *("--model", model, "--address", address, "--task-queue", task_queue),
                *args,
            ],
            cwd=ROOT,
            env=child_env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    deadline = time.monotonic() + PROCESS_TIMEOUT
    while "worker.ready" not in log.read_text():
        if process.poll() is not None or time.monotonic() > deadline:
            stop_process(process)
            pytest.fail(f"the worker did not start: {log.read_text()}")
        time.sleep(0.05)
    return process


def stop_process(process: subprocess.Popen[bytes]) -> int:
    """SIGTERM, then SIGKILL if it does not end in time; returns the exit code."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=PROCESS_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    return process.returncode
