"""How long a replacement worker takes to resume an agent after its worker is SIGKILLed.

From the repository root::

    .venv/bin/python -m bench.crash_recovery [--reps 3] [--only hb5 sticky3]

Each repetition: a worker process (``tests.worker_process``) runs a ``RecoveryProbe``
agent; when the agent's step-2 lookup (a 2 s tool call) has started, the worker is
SIGKILLed and a replacement process is started at once. Printed, in seconds from the
kill:

- ``ready``: the replacement polls the task queue (process start-up);
- ``resumed``: the replacement's first progress, the in-flight call's re-run (its
  first entry in the ledger);
- ``done``: the run completed (includes the 2 s re-run and two more steps);
- ``sticky``: whether a workflow task timed out on the dead worker's sticky queue
  (``WorkflowTaskTimedOut`` in history), and the seconds that cost.

Configurations vary the in-flight tool's heartbeat timeout (the SDK default is 5 s)
and the worker's sticky queue timeout (the SDK sets 3 s; Temporal's default is 10 s).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from smyth_temporal import AgentClient
from smyth_temporal._logging import configure_logging
from smyth_temporal.testing import new_task_queue, start_dev_environment
from tests.agents import read_ledger
from tests.worker_process import RecoveryProbe, spawn_worker


@dataclass(frozen=True)
class Config:
    label: str
    heartbeat: int
    """Heartbeat timeout (seconds) of the tool in flight at the kill."""
    sticky: float
    """The workers' sticky queue timeout (seconds)."""


CONFIGS = {
    "hb5": Config("SDK defaults: heartbeat 5 s, sticky 2 s", 5, 2),
    "sticky3": Config("heartbeat 5 s, sticky 3 s", 5, 3),
    "hb2": Config("heartbeat 2 s, sticky 3 s", 2, 3),
    "hb15": Config("heartbeat 15 s, sticky 3 s", 15, 3),
    "hb30": Config("heartbeat 30 s, sticky 3 s", 30, 3),
    "sticky10": Config("heartbeat 5 s, sticky 10 s (Temporal's default)", 5, 10),
    "sticky1": Config("heartbeat 5 s, sticky 1 s", 5, 1),
}


@dataclass(frozen=True)
class Sample:
    ready: float
    resumed: float
    done: float
    sticky_lost: float | None
    """Seconds a workflow task waited on the dead worker's sticky queue, if one did."""


async def one_run(client: Client, config: Config, scratch: Path) -> Sample:
    task_queue = new_task_queue("bench-crash")
    ledger = scratch / f"{task_queue}.jsonl"
    spawn = functools.partial(
        spawn_worker,
        address=client.service_client.config.target_host,
        task_queue=task_queue,
        ledger=ledger,
        script=f"probe-hb{config.heartbeat}",
        log=scratch / f"{task_queue}.log",
        sticky_queue_timeout=config.sticky,
    )
    agents = AgentClient(client, task_queue=task_queue)
    in_flight = f"lookup_hb{config.heartbeat}.start"
    first = await spawn()
    second = None
    try:
        handle = await agents.start(RecoveryProbe, "Look up ACME")
        while not any(e["tool"] == in_flight for e in read_ledger(ledger)):
            await asyncio.sleep(0.01)
        killed = first.kill()
        second = await spawn()
        ready = time.monotonic()
        while not any(e["pid"] == second.pid for e in read_ledger(ledger)):
            await asyncio.sleep(0.01)
        resumed = time.monotonic()
        await agents.result(handle.id)
        done = time.monotonic()
    finally:
        await first.stop()
        if second is not None:
            await second.stop()
    history = await handle.fetch_history()
    sticky_lost = None
    for previous, event in zip(history.events, history.events[1:], strict=False):
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
            waited = event.event_time.ToDatetime() - previous.event_time.ToDatetime()
            sticky_lost = waited.total_seconds()
    return Sample(ready - killed, resumed - killed, done - killed, sticky_lost)


async def bench(client: Client, config: Config, reps: int, scratch: Path) -> None:
    print(f"\n{config.label}")
    samples = []
    for rep in range(1, reps + 1):
        sample = await one_run(client, config, scratch)
        samples.append(sample)
        sticky = "no" if sample.sticky_lost is None else f"yes, {sample.sticky_lost:.1f} s"
        print(
            f"  rep {rep}: ready {sample.ready:5.2f}  resumed {sample.resumed:5.2f}  "
            f"done {sample.done:5.2f}  sticky timeout: {sticky}"
        )
    print(
        f"  median: resumed {statistics.median(s.resumed for s in samples):5.2f} s, "
        f"done {statistics.median(s.done for s in samples):5.2f} s"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.crash_recovery")
    parser.add_argument("--reps", type=int, default=3, help="repetitions per configuration")
    parser.add_argument("--only", choices=sorted(CONFIGS), nargs="*", help="configurations")
    args = parser.parse_args()
    configure_logging("WARNING")
    env = await start_dev_environment()
    try:
        with tempfile.TemporaryDirectory() as scratch:
            for name in args.only or CONFIGS:
                await bench(env.client, CONFIGS[name], args.reps, Path(scratch))
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
    # temporalio's Rust threads can outlive the interpreter and abort its teardown
    # ("PyGILState_Release ... finalizing", temporalio/sdk-python#300); everything is
    # written and flushed by now, so skip the teardown.
    sys.stdout.flush()
    os._exit(0)
