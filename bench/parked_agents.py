"""Worker memory of parked agents, beside plain temporalio workflows parked the same way.

From the repository root::

    .venv/bin/python -m bench.parked_agents [--agents 200 500 1000]
        [--json bench/results/parked_agents.json]

For every N, two fresh worker processes on one dev server, one after the other:

- smyth: ``tests.worker_process`` (``SmythPlugin``, the SDK's defaults) and N
  ``Trader`` agents, each of which takes one model turn (a ``ScriptedModel``) that
  calls ``sell``, an approval-gated tool, and then waits for the decision;
- baseline: ``bench._plain_worker`` (plain temporalio, its defaults) and N
  ``PlainWaiter`` workflows, each of which runs one activity and then waits on a
  signal.

The worker's resident memory (``VmRSS`` from ``/proc``) is read once it polls (idle),
once one warm-up run has parked (warm: the first run pays for the sandbox's imports,
a fixed cost), and once N more runs are parked (every run's activity is in the ledger
and the RSS has stopped moving). Printed per N: the three readings of each worker, the
cost per run ((parked - warm) / N) and the ratio smyth / baseline. With the default
workflow cache (1,000 runs) every parked run stays cached.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from temporalio.client import Client

from bench._plain_worker import PlainWaiter, spawn_plain_worker
from bench._results import headline, write_json
from smyth_temporal import AgentClient, AgentInput
from smyth_temporal._logging import configure_logging
from smyth_temporal.testing import new_task_queue, start_dev_environment
from tests.agents import read_ledger
from tests.approval_agents import Trader
from tests.worker_process import WorkerProcess, spawn_worker

MiB = 1024 * 1024
START_CONCURRENCY = 50
"""Starts in flight at once (the dev server refuses thousands of concurrent calls)."""


def rss(pid: int) -> int:
    """Resident memory of a process, in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


async def settled_rss(pid: int, *, limit: float = 30.0) -> int:
    """The RSS once it stops moving (two readings a second apart within 0.5%)."""
    deadline = time.monotonic() + limit
    previous = rss(pid)
    while time.monotonic() < deadline:
        await asyncio.sleep(1.0)
        current = rss(pid)
        if abs(current - previous) <= previous * 0.005:
            return current
        previous = current
    return previous


@dataclass(frozen=True)
class Sample:
    runs: int
    idle: int
    warm: int
    """After one warm-up run parked."""
    parked: int
    seconds: float
    """From the first start to the last run parked."""

    @property
    def per_run(self) -> float:
        return (self.parked - self.warm) / self.runs


async def measure(
    spawn: Callable[[], Awaitable[WorkerProcess]],
    start: Callable[[int], Awaitable[object]],
    ledger: Path,
    parked_entry: str,
    runs: int,
) -> Sample:
    worker = await spawn()
    try:
        idle = await settled_rss(worker.pid)
        await start(runs)  # the warm-up run
        while sum(e["tool"] == parked_entry for e in read_ledger(ledger)) < 1:
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.0)
        warm = await settled_rss(worker.pid)
        began = time.monotonic()
        gate = asyncio.Semaphore(START_CONCURRENCY)

        async def one(number: int) -> None:
            async with gate:
                await start(number)

        await asyncio.gather(*(one(n) for n in range(runs)))
        while sum(e["tool"] == parked_entry for e in read_ledger(ledger)) < runs + 1:
            await asyncio.sleep(0.2)
        seconds = time.monotonic() - began
        # The activity's result still goes through a workflow task: let them finish.
        await asyncio.sleep(2.0)
        parked = await settled_rss(worker.pid)
    finally:
        await worker.stop()
    return Sample(runs, idle, warm, parked, seconds)


async def measure_smyth(client: Client, runs: int, scratch: Path) -> Sample:
    task_queue = new_task_queue("bench-parked")
    ledger = scratch / f"{task_queue}.jsonl"
    agents = AgentClient(client, task_queue=task_queue)

    async def spawn() -> WorkerProcess:
        return await spawn_worker(
            address=client.service_client.config.target_host,
            task_queue=task_queue,
            ledger=ledger,
            script="approval-sell",
            log=scratch / f"{task_queue}.log",
        )

    async def start(number: int) -> object:
        return await agents.start(
            Trader, AgentInput(prompt="Sell ACME"), id=f"{task_queue}-{number}"
        )

    return await measure(spawn, start, ledger, "model", runs)


async def measure_plain(client: Client, runs: int, scratch: Path) -> Sample:
    task_queue = new_task_queue("bench-parked-plain")
    ledger = scratch / f"{task_queue}.jsonl"

    async def spawn() -> WorkerProcess:
        return await spawn_plain_worker(
            address=client.service_client.config.target_host,
            task_queue=task_queue,
            ledger=ledger,
            log=scratch / f"{task_queue}.log",
        )

    async def start(number: int) -> object:
        return await client.start_workflow(
            PlainWaiter.run, "ACME", id=f"{task_queue}-{number}", task_queue=task_queue
        )

    return await measure(spawn, start, ledger, "plain_quote", runs)


def _print(name: str, sample: Sample) -> None:
    print(
        f"  {name:8} idle {sample.idle / MiB:6.1f} MiB  warm {sample.warm / MiB:6.1f} MiB  "
        f"parked {sample.parked / MiB:6.1f} MiB  "
        f"per run {sample.per_run / 1024:6.1f} KiB  (all parked after {sample.seconds:5.1f} s)",
        flush=True,
    )


async def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.parked_agents")
    parser.add_argument("--agents", type=int, nargs="+", default=[200, 500, 1000])
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args()
    configure_logging("WARNING")
    smyth: list[Sample] = []
    plain: list[Sample] = []
    env = await start_dev_environment()
    try:
        with tempfile.TemporaryDirectory() as scratch:
            for runs in args.agents:
                print(f"\n{runs} parked runs on one worker process")
                smyth.append(await measure_smyth(env.client, runs, Path(scratch)))
                _print("smyth", smyth[-1])
                plain.append(await measure_plain(env.client, runs, Path(scratch)))
                _print("baseline", plain[-1])
                print(f"  per run, smyth / baseline: {smyth[-1].per_run / plain[-1].per_run:.1f}x")
    finally:
        await env.shutdown()
    if args.json is not None:
        largest_smyth, largest_plain = smyth[-1], plain[-1]
        headlines = [
            headline(
                f"worker RSS per parked agent ({largest_smyth.runs} parked)",
                largest_smyth.per_run / 1024,
                largest_plain.per_run / 1024,
                "KiB",
                "baseline: a plain workflow waiting on a signal",
            ),
            headline(
                f"worker RSS with {largest_smyth.runs} parked",
                largest_smyth.parked / MiB,
                largest_plain.parked / MiB,
                "MiB",
                f"idle: {largest_smyth.idle / MiB:.0f} vs {largest_plain.idle / MiB:.0f} MiB",
            ),
        ]
        data = {
            "smyth": [vars(s) for s in smyth],
            "baseline": [vars(s) for s in plain],
        }
        write_json(args.json, "parked_agents", headlines, data)


if __name__ == "__main__":
    asyncio.run(main())
    sys.stdout.flush()
    os._exit(0)  # temporalio's Rust threads can abort the interpreter's teardown
