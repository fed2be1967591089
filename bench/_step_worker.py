"""``StepBench``'s worker in a process of its own, for the gateway benchmarks.

``python -m bench._step_worker --address HOST:PORT --task-queue QUEUE`` serves
``StepBench`` with the scripted model of ``bench._served`` (the same 30-word answer,
streamed a word at a time), prints ``READY`` once it polls, and runs until it is
terminated. The parent side is ``step_worker_process``.

Why a process: a worker in the benchmark's own process shares its event loop and its
GIL with the ``AgentClient`` that is the baseline, so the baseline's calls wait behind
the worker's activations while the gateway's (a process of its own) do not; the
baseline's round trip then jumped between two modes about 50 ms apart from run to run
(64 or 102 ms p50 for the same streamed turn). With the worker apart, the baseline and
the gateway are both clients of one worker, as an application and a gateway are.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator

from temporalio.client import Client

from bench._common import StepBench
from bench.streaming import text
from smyth_temporal import configure_logging
from smyth_temporal.testing import ScriptedModel, agent_worker, reply

READY = "READY"

ANSWER = text(30)
"""What every turn answers: 30 words."""
MAX_TURNS = 10_000
"""Scripted turns: more than any session here takes (``ScriptedModel`` goes by step)."""


async def _serve(address: str, task_queue: str) -> None:
    configure_logging("WARNING")
    client = await Client.connect(address)
    model = ScriptedModel([reply(ANSWER)] * MAX_TURNS)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with agent_worker(client, StepBench, model=model, task_queue=task_queue):
        print(READY, flush=True)
        await stop.wait()


@contextlib.asynccontextmanager
async def step_worker_process(address: str, task_queue: str) -> AsyncIterator[int]:
    """The worker process, once it polls ``task_queue``; yields its pid."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench._step_worker",
        f"--address={address}",
        f"--task-queue={task_queue}",
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        async with asyncio.timeout(60):
            while (line := await process.stdout.readline()) and line.strip() != READY.encode():
                pass
        if process.returncode is not None:
            raise RuntimeError("the StepBench worker process ended before it was ready")
        yield process.pid
    finally:
        if process.returncode is None:
            process.terminate()
        await process.wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--address", required=True)
    parser.add_argument("--task-queue", required=True)
    arguments = parser.parse_args()
    asyncio.run(_serve(arguments.address, arguments.task_queue))
    # temporalio's Rust threads can outlive the interpreter (temporalio/sdk-python#300).
    sys.stdout.flush()
    os._exit(0)
