"""How long a replacement worker takes to resume an agent after its worker is SIGKILLed,
beside a hand-written temporalio workflow doing the same work on the same dev server.

From the repository root::

    .venv/bin/python -m bench.crash_recovery [--reps 3] [--only defaults sticky1 ...]
        [--json bench/results/crash_recovery.json]

Each repetition: a worker process runs a run; when its step-2 call (a 2 s tool call)
has started, the worker is SIGKILLed and a replacement process is started at once.
Printed, in seconds from the kill:

- ``ready``: the replacement polls the task queue (process start-up);
- ``resumed``: the replacement's first progress, the in-flight call's re-run (its
  first entry in the ledger);
- ``done``: the run completed (includes the 2 s re-run and what comes after it);
- ``sticky``: whether a workflow task timed out on the dead worker's sticky queue
  (``WorkflowTaskTimedOut`` in history), and the seconds that cost.

Configurations (the first two by default, one repetition of each in turn):

- ``defaults``: a ``RecoveryProbe`` agent (``tests.helpers.worker_process``) whose in-flight
  call is ``blocking_lookup``, a plain ``def`` tool with every option the SDK's
  default, on a worker with the SDK's defaults;
- ``baseline``: ``PlainRecovery`` (``bench._plain_worker``): the same three calls as
  plain temporalio activities with temporalio's defaults and a 10 s start-to-close
  timeout (temporalio has no default one), no heartbeat, Temporal's 10 s sticky queue
  timeout. No model calls: its ``done`` has two model turns less work;
- the rest vary the in-flight tool's heartbeat timeout (``lookup_hb<N>``) and the
  worker's sticky queue timeout.

The ratio printed (and written with ``--json``) is baseline / defaults, of the medians.
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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle

from bench._plain_worker import PlainRecovery, spawn_plain_worker
from bench._results import headline, write_json
from smyth_temporal import AgentClient, configure_logging
from smyth_temporal.testing import new_task_queue, start_dev_environment
from tests.helpers.agents import read_ledger
from tests.helpers.worker_process import RecoveryProbe, WorkerProcess, spawn_worker


@dataclass(frozen=True)
class Config:
    label: str
    script: str
    """The worker's script (``tests.helpers.worker_process``), or ``plain`` for the baseline."""
    in_flight: str
    """The ledger entry that says the call to kill the worker in has started."""
    sticky: float | None = None
    """The workers' sticky queue timeout (seconds; ``None``: the SDK's default)."""


def _probe(heartbeat: int, sticky: float) -> Config:
    return Config(
        f"heartbeat {heartbeat} s, sticky {sticky:g} s",
        f"probe-hb{heartbeat}",
        f"lookup_hb{heartbeat}.start",
        sticky,
    )


CONFIGS = {
    "defaults": Config(
        "smyth, SDK defaults (plain def tool: heartbeat 2 s, retry 250 ms, sticky 2 s)",
        "probe-default",
        "blocking_lookup.start",
    ),
    "baseline": Config(
        "baseline: plain temporalio, its defaults (10 s start-to-close, no heartbeat, sticky 10 s)",
        "plain",
        "plain_lookup.start",
    ),
    "sticky1": Config(
        "smyth, SDK defaults but sticky 1 s", "probe-default", "blocking_lookup.start", 1
    ),
    "hb5": _probe(5, 2),
    "hb15": _probe(15, 2),
    "sticky10": _probe(5, 10),
}

DEFAULT_CONFIGS = ("defaults", "baseline")


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
    address = client.service_client.config.target_host
    log = scratch / f"{task_queue}.log"
    spawn: Callable[[], Awaitable[WorkerProcess]]
    start: Callable[[], Awaitable[WorkflowHandle[Any, Any]]]
    agents = AgentClient(client, task_queue=task_queue)
    if config.script == "plain":
        spawn = functools.partial(
            spawn_plain_worker, address=address, task_queue=task_queue, ledger=ledger, log=log
        )

        async def start() -> WorkflowHandle[Any, Any]:
            return await client.start_workflow(
                PlainRecovery.run, "ACME", id=f"{task_queue}-plain", task_queue=task_queue
            )
    else:
        spawn = functools.partial(
            spawn_worker,
            address=address,
            task_queue=task_queue,
            ledger=ledger,
            script=config.script,
            log=log,
            sticky_queue_timeout=config.sticky,
        )

        async def start() -> WorkflowHandle[Any, Any]:
            return await agents.start(RecoveryProbe, "Look up ACME")

    first = await spawn()
    second = None
    try:
        handle = await start()
        while not any(e["tool"] == config.in_flight for e in read_ledger(ledger)):
            await asyncio.sleep(0.01)
        killed = first.kill()
        second = await spawn()
        ready = time.monotonic()
        while not any(e["pid"] == second.pid for e in read_ledger(ledger)):
            await asyncio.sleep(0.01)
        resumed = time.monotonic()
        await handle.result()
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


def _print_sample(name: str, rep: int, sample: Sample) -> None:
    sticky = "no" if sample.sticky_lost is None else f"yes, {sample.sticky_lost:.1f} s"
    print(
        f"  {name:9} rep {rep}: ready {sample.ready:5.2f}  resumed {sample.resumed:5.2f}  "
        f"done {sample.done:5.2f}  sticky timeout: {sticky}",
        flush=True,
    )


async def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.crash_recovery")
    parser.add_argument("--reps", type=int, default=3, help="repetitions per configuration")
    parser.add_argument("--only", choices=sorted(CONFIGS), nargs="*", help="configurations")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args()
    configure_logging("WARNING")
    names: list[str] = list(args.only or DEFAULT_CONFIGS)
    samples: dict[str, list[Sample]] = {name: [] for name in names}
    env = await start_dev_environment()
    try:
        for name in names:
            print(f"{name}: {CONFIGS[name].label}")
        with tempfile.TemporaryDirectory() as scratch:
            # Interleaved: one repetition of each configuration in turn, so a change
            # in the machine's load falls on all of them alike.
            for rep in range(1, args.reps + 1):
                for name in names:
                    sample = await one_run(env.client, CONFIGS[name], Path(scratch))
                    samples[name].append(sample)
                    _print_sample(name, rep, sample)
    finally:
        await env.shutdown()
    print("\nmedians, seconds from the SIGKILL:")
    medians: dict[str, dict[str, float]] = {}
    for name in names:
        medians[name] = {
            what: statistics.median(getattr(s, what) for s in samples[name])
            for what in ("ready", "resumed", "done")
        }
        m = medians[name]
        print(
            f"  {name:9} ready {m['ready']:5.2f}  in-flight call re-run {m['resumed']:5.2f}  "
            f"completed {m['done']:5.2f}"
        )
    headlines = []
    if "defaults" in medians and "baseline" in medians:
        ours, base = medians["defaults"], medians["baseline"]
        print(
            f"\nbaseline / smyth: re-run {base['resumed'] / ours['resumed']:.1f}x sooner, "
            f"completed {base['done'] / ours['done']:.1f}x sooner (goal: re-run <= 3 s; "
            f"smyth {ours['resumed']:.2f} s)"
        )
        headlines = [
            headline(
                "crash recovery: SIGKILL to in-flight call re-run",
                ours["resumed"],
                base["resumed"],
                "s",
                f"median of {args.reps}; goal <= 3 s",
            ),
            headline(
                "crash recovery: SIGKILL to run completed",
                ours["done"],
                base["done"],
                "s",
                f"median of {args.reps}",
            ),
        ]
    if args.json is not None:
        data = {
            "labels": {name: CONFIGS[name].label for name in names},
            "samples": {name: [vars(s) for s in samples[name]] for name in names},
            "medians": medians,
        }
        write_json(args.json, "crash_recovery", headlines, data)


if __name__ == "__main__":
    asyncio.run(main())
    # temporalio's Rust threads can outlive the interpreter and abort its teardown
    # ("PyGILState_Release ... finalizing", temporalio/sdk-python#300); everything is
    # written and flushed by now, so skip the teardown.
    sys.stdout.flush()
    os._exit(0)
