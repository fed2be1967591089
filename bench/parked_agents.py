"""Worker memory of parked agents and the pace of approving them all, beside plain workflows.

From the repository root::

    .venv/bin/python -m bench.parked_agents [--agents 200 500 1000] [--many 10000]
        [--json bench/results/parked_agents.json]

For every N of ``--agents``, two fresh worker processes on one dev server, one after
the other:

- smyth: ``tests.helpers.worker_process`` (``SmythPlugin``, the SDK's defaults) and N
  ``Trader`` agents (``tests/helpers/trader.py``, alone in its module; its tools live in
  ``tests/helpers/trading.py``), each of which takes one model turn (a ``ScriptedModel``)
  that calls ``sell``, an approval-gated tool, and then waits for the decision;
- baseline: ``bench._plain_worker`` (plain temporalio, its defaults) and N
  ``PlainWaiter`` workflows, each of which runs one activity and then waits for an
  update;
- bookkeeping: the same worker and N ``PlainBookkeeper`` workflows
  (``bench/_plain_bookkeeping.py``): ``PlainWaiter`` plus what a parked agent offers,
  written by hand in plain temporalio (visibility writes, a deadline timer, a stream of
  events for watchers), to tell what those features cost from what the SDK adds.

The worker's resident memory (``VmRSS`` from ``/proc``) is read once it polls (idle),
once one warm-up run has parked (warm: the first run pays for the sandbox's imports,
a fixed cost), and once N more runs are parked (every run's activity is in the ledger
and the RSS has stopped moving). Printed per N: the three readings of each worker, the
cost per run ((parked - warm) / N) and the ratio smyth / baseline. With the default
workflow cache (1,000 runs) every parked run stays cached.

At the largest N, every parked run is then approved (50 decisions in flight, each an
update that waits until the run has taken it): an agent runs ``sell`` (an activity)
and a last model turn (another), a ``PlainWaiter`` two activities. Approve-all
throughput = N / seconds from the first decision to the last run completed. The
worker's CPU time over that span (user + system, from ``/proc``) per run is printed too:
on a shared machine it moves less than the pace, which the dev server's CPU (on the same
cores) also sets.

``--many`` (0 to skip) parks that many runs on each kind of worker, with the default
worker settings: most runs are evicted from the workflow cache (temporalio keeps
1,000), as they would be on a real worker. Printed: the RSS of each worker.
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

from bench._plain_bookkeeping import PlainBookkeeper
from bench._plain_worker import PlainWaiter, spawn_plain_worker
from bench._results import headline, write_json
from smyth_temporal import AgentClient, AgentInput, configure_logging
from smyth_temporal.testing import new_task_queue, start_dev_environment
from tests.helpers.agents import read_ledger
from tests.helpers.trader import Trader
from tests.helpers.worker_process import WorkerProcess, spawn_worker

MiB = 1024 * 1024
CONCURRENCY = 50
"""Starts and decisions in flight at once (the dev server refuses thousands of
concurrent calls)."""


def rss(pid: int) -> int:
    """Resident memory of a process, in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def cpu_seconds(pid: int) -> float:
    """CPU time a process has used (user + system), in seconds."""
    # /proc/PID/stat: utime and stime are fields 14 and 15; the name before ")" may hold spaces.
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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
    approve_seconds: float | None = None
    """From the first decision to the last run completed (``None``: not approved)."""
    approve_cpu: float | None = None
    """The worker's CPU seconds over the same span."""

    @property
    def per_run(self) -> float:
        return (self.parked - self.warm) / self.runs

    @property
    def approved_per_second(self) -> float:
        assert self.approve_seconds is not None
        return self.runs / self.approve_seconds

    @property
    def cpu_per_approved_ms(self) -> float:
        assert self.approve_cpu is not None
        return self.approve_cpu / self.runs * 1000


@dataclass(frozen=True)
class Side:
    """One kind of worker, and how the bench drives its runs."""

    client: Client
    task_queue: str
    spawn: Callable[[], Awaitable[WorkerProcess]]
    start: Callable[[int], Awaitable[object]]
    """Start run number n (the warm-up run is number ``runs``)."""
    approve: Callable[[int], Awaitable[object]]
    """Decide run number n and return once the run has taken the decision."""
    parked_entry: str
    """The ledger entry a run writes last before it parks."""
    scratch: Path

    @property
    def ledger(self) -> Path:
        return self.scratch / f"{self.task_queue}.jsonl"

    def count(self, entry: str) -> int:
        return sum(e["tool"] == entry for e in read_ledger(self.ledger))

    async def completed(self) -> int:
        query = f'TaskQueue = "{self.task_queue}" AND ExecutionStatus = "Completed"'
        return (await self.client.count_workflows(query)).count


async def _gated(call: Callable[[int], Awaitable[object]], runs: int) -> None:
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(number: int) -> None:
        async with gate:
            await call(number)

    await asyncio.gather(*(one(n) for n in range(runs)))


async def measure(side: Side, runs: int, *, approve: bool = False) -> Sample:
    worker = await side.spawn()
    try:
        idle = await settled_rss(worker.pid)
        await side.start(runs)  # the warm-up run
        while side.count(side.parked_entry) < 1:
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.0)
        warm = await settled_rss(worker.pid)
        began = time.monotonic()
        await _gated(side.start, runs)
        while side.count(side.parked_entry) < runs + 1:
            await asyncio.sleep(0.5)
        seconds = time.monotonic() - began
        # The activity's result still goes through a workflow task: let them finish.
        await asyncio.sleep(2.0)
        parked = await settled_rss(worker.pid)
        approve_seconds = approve_cpu = None
        if approve:
            cpu_before = cpu_seconds(worker.pid)
            approve_seconds = await _approve_all(side, runs)
            approve_cpu = cpu_seconds(worker.pid) - cpu_before
    finally:
        await worker.stop()
    return Sample(runs, idle, warm, parked, seconds, approve_seconds, approve_cpu)


async def _approve_all(side: Side, runs: int) -> float:
    began = time.monotonic()
    await _gated(side.approve, runs)
    while await side.completed() < runs:
        await asyncio.sleep(0.2)
    return time.monotonic() - began


def smyth_side(client: Client, scratch: Path) -> Side:
    task_queue = new_task_queue("bench-parked")
    agents = AgentClient(client, task_queue=task_queue)

    async def spawn() -> WorkerProcess:
        return await spawn_worker(
            address=client.service_client.config.target_host,
            task_queue=task_queue,
            ledger=side.ledger,
            script="approval-sell",
            log=scratch / f"{task_queue}.log",
        )

    async def start(number: int) -> object:
        return await agents.start(
            Trader, AgentInput(prompt="Sell ACME"), id=f"{task_queue}-{number}"
        )

    async def approve(number: int) -> object:
        return await agents.approve(f"{task_queue}-{number}", by="bench")

    side = Side(client, task_queue, spawn, start, approve, "model", scratch)
    return side


def plain_side(
    client: Client, scratch: Path, workflow: type[PlainWaiter | PlainBookkeeper] = PlainWaiter
) -> Side:
    task_queue = new_task_queue(f"bench-parked-{workflow.__name__.lower()}")

    async def spawn() -> WorkerProcess:
        return await spawn_plain_worker(
            address=client.service_client.config.target_host,
            task_queue=task_queue,
            ledger=side.ledger,
            log=scratch / f"{task_queue}.log",
        )

    async def start(number: int) -> object:
        return await client.start_workflow(
            workflow.run, "ACME", id=f"{task_queue}-{number}", task_queue=task_queue
        )

    async def approve(number: int) -> object:
        handle = client.get_workflow_handle(f"{task_queue}-{number}")
        return await handle.execute_update(workflow.decide, "approved")

    side = Side(client, task_queue, spawn, start, approve, "plain_quote", scratch)
    return side


def _print_ratios(name: str, smyth: Sample, other: Sample) -> None:
    print(f"  per run, smyth / {name}: {smyth.per_run / other.per_run:.2f}x")
    if smyth.approve_seconds is not None and other.approve_seconds is not None:
        pace = smyth.approved_per_second / other.approved_per_second
        cpu = smyth.cpu_per_approved_ms / other.cpu_per_approved_ms
        print(f"  approve-all throughput, smyth / {name}: {pace:.2f}x")
        print(f"  worker CPU per approved run, smyth / {name}: {cpu:.2f}x")


def _print(name: str, sample: Sample) -> None:
    print(
        f"  {name:8} idle {sample.idle / MiB:6.1f} MiB  warm {sample.warm / MiB:6.1f} MiB  "
        f"parked {sample.parked / MiB:6.1f} MiB  "
        f"per run {sample.per_run / 1024:6.1f} KiB  (all parked after {sample.seconds:5.1f} s)",
        flush=True,
    )
    if sample.approve_seconds is not None:
        print(
            f"  {name:8} approved all {sample.runs} in {sample.approve_seconds:5.1f} s: "
            f"{sample.approved_per_second:5.1f} runs/s, "
            f"worker CPU {sample.cpu_per_approved_ms:5.1f} ms a run",
            flush=True,
        )


async def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.parked_agents")
    parser.add_argument("--agents", type=int, nargs="+", default=[200, 500, 1000])
    parser.add_argument(
        "--many", type=int, default=10_000, help="runs parked with the default cache (0: skip)"
    )
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args()
    configure_logging("WARNING")
    smyth: list[Sample] = []
    plain: list[Sample] = []
    books: list[Sample] = []
    many: dict[str, Sample] = {}
    env = await start_dev_environment()
    try:
        with tempfile.TemporaryDirectory() as scratch:
            for runs in args.agents:
                approve = runs == max(args.agents)
                print(f"\n{runs} parked runs on one worker process")
                smyth.append(
                    await measure(smyth_side(env.client, Path(scratch)), runs, approve=approve)
                )
                _print("smyth", smyth[-1])
                plain.append(
                    await measure(plain_side(env.client, Path(scratch)), runs, approve=approve)
                )
                _print("baseline", plain[-1])
                books.append(
                    await measure(
                        plain_side(env.client, Path(scratch), PlainBookkeeper),
                        runs,
                        approve=approve,
                    )
                )
                _print("bookkeep", books[-1])
                for name, other in (("baseline", plain[-1]), ("bookkeeping", books[-1])):
                    _print_ratios(name, smyth[-1], other)
            if args.many:
                print(f"\n{args.many} parked runs, default worker settings (cache: 1,000 runs)")
                many["smyth"] = await measure(smyth_side(env.client, Path(scratch)), args.many)
                _print("smyth", many["smyth"])
                many["baseline"] = await measure(plain_side(env.client, Path(scratch)), args.many)
                _print("baseline", many["baseline"])
    finally:
        await env.shutdown()
    if args.json is not None:
        write_json(
            args.json,
            "parked_agents",
            _headlines(smyth[-1], plain[-1], books[-1], many),
            {
                "smyth": [vars(s) for s in smyth],
                "baseline": [vars(s) for s in plain],
                "bookkeeping": [vars(s) for s in books],
                "many": {key: vars(s) for key, s in many.items()},
            },
        )


_BY_HAND = "baseline: the same plain workflow with visibility, a timer and events, by hand"


def _headlines(
    smyth: Sample, plain: Sample, books: Sample, many: dict[str, Sample]
) -> list[dict[str, object]]:
    rows = [
        headline(
            f"worker RSS per parked agent ({smyth.runs} parked)",
            smyth.per_run / 1024,
            plain.per_run / 1024,
            "KiB",
            "baseline: a plain workflow waiting for an update",
        ),
        headline(
            f"worker RSS per parked agent ({smyth.runs} parked), beside hand-written bookkeeping",
            smyth.per_run / 1024,
            books.per_run / 1024,
            "KiB",
            _BY_HAND,
        ),
        headline(
            f"worker RSS with {smyth.runs} parked",
            smyth.parked / MiB,
            plain.parked / MiB,
            "MiB",
            f"idle: {smyth.idle / MiB:.0f} vs {plain.idle / MiB:.0f} MiB",
        ),
    ]
    if smyth.approve_seconds is not None and smyth.approve_cpu is not None:
        for other, beside, pace_note, cpu_note, suffix in (
            (
                plain,
                "",
                "an update each, then two activities; higher is better",
                "user + system time of the worker process while approving; lower is better",
                "",
            ),
            (books, ", beside hand-written bookkeeping", _BY_HAND, _BY_HAND, "_bookkeeping"),
        ):
            if other.approve_seconds is None or other.approve_cpu is None:
                continue
            rows.append(
                headline(
                    f"approve all {smyth.runs} parked, runs completed per second{beside}",
                    smyth.approved_per_second,
                    other.approved_per_second,
                    "runs/s",
                    pace_note,
                    key=f"approve_pace{suffix}",
                )
            )
            rows.append(
                headline(
                    f"worker CPU per approved run{beside}",
                    smyth.cpu_per_approved_ms,
                    other.cpu_per_approved_ms,
                    "ms",
                    cpu_note,
                    key=f"approve_cpu{suffix}",
                )
            )
    if many:
        rows.append(
            headline(
                f"worker RSS with {many['smyth'].runs} parked (default cache: 1,000)",
                many["smyth"].parked / MiB,
                many["baseline"].parked / MiB,
                "MiB",
                "most runs evicted from the workflow cache, as on a real worker",
            )
        )
    return rows


if __name__ == "__main__":
    asyncio.run(main())
    sys.stdout.flush()
    os._exit(0)  # temporalio's Rust threads can abort the interpreter's teardown
