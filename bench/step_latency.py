"""Wall time per agent step on a local Temporal dev server, beside a hand-written loop.

From the repository root::

    .venv/bin/python -m bench.step_latency [--runs 5] [--json PATH] [--details]

One run is a ``StepBench`` agent taking 20 steps, each a model turn (the model
activity) followed by one tool call (a tool activity), then a final answering turn.
The model is a ``ScriptedModel`` and the tool returns its argument, so what is timed
is the machinery: workflow tasks, activity dispatch, payload conversion, history.

Three sides on one dev server, one run of each in turn (after an untimed warm-up run
each), so the machine's load falls on all of them alike:

- smyth with the defaults (``agent_worker``, what ``smyth worker`` runs);
- smyth with a fleet-wide model limit set (``limits.set(model_rps=1000)``, a limit that
  never binds): model calls go to ``<queue>-models`` (the cost of turning limits on);
- the baseline: ``PlainSteps`` (``bench/_plain_worker.py``), the same loop written by
  hand in plain temporalio (a model activity with the whole conversation, then a tool
  activity), on a worker with temporalio's defaults.

Per step: the time between consecutive model calls, as the worker sees them (model
activity + tool activity + the workflow tasks in between). The ratio is each side's
median over the baseline's. ``--json`` writes them for ``bench.report`` and
``bench.check`` (bound: ``bench/bounds.toml``).

``--details`` also runs the earlier per-configuration breakdown: start to finish, and
where the time goes from the server's event times (a workflow task waiting to be
picked up, running on the worker, an activity from scheduled to completed), for the
default worker, ``max_cached_workflows=0`` (every workflow task replays the whole
history, as after an eviction) and ``disable_eager_activity_execution=True``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import statistics
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHistory
from temporalio.worker import Worker

from bench._common import BENCH_STEPS, StepBench, summary_ms
from bench._plain_worker import STEP_CALLS, PlainSteps, plain_model, plain_tool
from bench._results import headline, write_json
from bench._timing import TimedModel, one_run
from smyth_temporal import AgentClient, AgentInput, configure_logging
from smyth_temporal.testing import (
    agent_worker,
    new_task_queue,
    start_dev_environment,
)

CONFIGS: dict[str, dict[str, Any]] = {
    "default worker": {},
    "max_cached_workflows=0": {"max_cached_workflows": 0},
    "no eager activities": {"disable_eager_activity_execution": True},
}


@dataclass
class Run:
    steps: list[float]
    """Seconds of each step."""
    total: float
    """Seconds from start to result."""
    phases: dict[str, list[float]]
    """Seconds of each phase (see ``PHASES``), from the server's event times."""


PHASES = {
    "workflow task wait": (
        EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
        EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
    ),
    "workflow task run": (
        EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
        EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
    ),
    "activity (scheduled to completed)": (
        EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
        EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
    ),
}
"""Where a step's time goes: pairs of history events, timed from first to second."""


def phases(history: WorkflowHistory) -> dict[str, list[float]]:
    """The duration of every phase occurrence in a (sequential, one-call-per-step) run."""
    durations: dict[str, list[float]] = {name: [] for name in PHASES}
    opened: dict[int, float] = {}
    for event in history.events:
        at = event.event_time.ToDatetime().timestamp()
        for name, (begin, end) in PHASES.items():
            if event.event_type == begin:
                opened[begin] = at
            elif event.event_type == end and begin in opened:
                durations[name].append(at - opened.pop(begin))
    return durations


async def timed_run(agents: AgentClient, model: TimedModel) -> Run:
    model.calls.clear()
    started = time.perf_counter()
    handle = await agents.start(StepBench, AgentInput(prompt="go"))
    result = await agents.result(handle.id)
    total = time.perf_counter() - started
    assert result.steps == BENCH_STEPS + 1, result
    steps = [later - earlier for earlier, later in zip(model.calls, model.calls[1:], strict=False)]
    return Run(steps, total, phases(await handle.fetch_history()))


async def bench_config(client: Client, name: str, options: dict[str, Any], runs: int) -> None:
    model = TimedModel()
    task_queue = new_task_queue("bench-steps")
    agents = AgentClient(client, task_queue=task_queue)
    all_steps: list[float] = []
    totals: list[float] = []
    all_phases: dict[str, list[float]] = {}
    async with agent_worker(client, StepBench, model=model, task_queue=task_queue, **options):
        print(f"\n{name}")
        for number in range(runs + 1):
            run = await timed_run(agents, model)
            print(
                f"  {f'run {number}' if number else 'warm-up'}: {summary_ms(run.steps)}  "
                f"first {run.steps[0] * 1000:5.1f} ms  last {run.steps[-1] * 1000:5.1f} ms  "
                f"start-to-finish {run.total:.2f} s"
            )
            if number == 0:
                continue  # sandbox imports, connections: not what a running agent pays
            all_steps += run.steps
            totals.append(run.total)
            for phase, durations in run.phases.items():
                all_phases.setdefault(phase, []).extend(durations)
        print(f"  all steps ({len(all_steps)}): {summary_ms(all_steps)}")
        for phase, durations in all_phases.items():
            per_step = sum(durations) / (len(totals) * (BENCH_STEPS + 1))
            print(
                f"    {phase:34} {summary_ms(durations)}  "
                f"({len(durations) // len(totals)} per run, {per_step * 1000:.1f} ms per step)"
            )
        print(
            f"  start-to-finish: median {statistics.median(totals):.2f} s "
            f"(min {min(totals):.2f}, max {max(totals):.2f})"
        )


LIMIT_RPS = 1000.0
"""The limit of the "limit set" side: high enough never to bind (only where calls go)."""

SIDES = ("smyth, defaults", "smyth, a model limit set", "hand-written temporalio")


async def plain_run(client: Client, task_queue: str) -> list[float]:
    """One ``PlainSteps`` run; the time between consecutive model calls."""
    STEP_CALLS.clear()
    turns = await client.execute_workflow(
        PlainSteps.run, BENCH_STEPS, id=f"plain-steps-{uuid.uuid4().hex}", task_queue=task_queue
    )
    assert turns == BENCH_STEPS + 1, turns
    return [b - a for a, b in itertools.pairwise(STEP_CALLS)]


async def side_by_side(client: Client, runs: int) -> dict[str, list[float]]:
    """Every side's steps, one run of each in turn; prints each round's medians."""
    queues = {side: new_task_queue("bench-steps") for side in SIDES}
    smyth_sides = SIDES[:2]
    models = {side: TimedModel() for side in smyth_sides}
    agents = {side: AgentClient(client, task_queue=queues[side]) for side in smyth_sides}
    await agents[SIDES[1]].limits.set(model_rps=LIMIT_RPS, reason="bench: where calls go")
    # The hand-written side: no smyth plugin on its client (temporalio's converter).
    plain_client = Client(client.service_client, namespace=client.namespace)
    steps: dict[str, list[float]] = {side: [] for side in SIDES}
    async with contextlib.AsyncExitStack() as stack:
        for side in smyth_sides:
            worker = agent_worker(client, StepBench, model=models[side], task_queue=queues[side])
            await stack.enter_async_context(worker)
        plain_worker = Worker(
            plain_client,
            task_queue=queues[SIDES[2]],
            workflows=[PlainSteps],
            activities=[plain_model, plain_tool],
        )
        await stack.enter_async_context(plain_worker)

        async def one(side: str) -> list[float]:
            if side in models:
                return await one_run(agents[side], models[side])
            return await plain_run(plain_client, queues[side])

        for number in range(runs + 1):
            medians = []
            for side in SIDES:
                taken = await one(side)
                medians.append(statistics.median(taken))
                if number:  # the first round is the warm-up (imports, connections)
                    steps[side] += taken
            label = f"run {number}" if number else "warm-up"
            print(f"  {label:8} " + "  ".join(f"{m * 1000:6.1f}" for m in medians) + " ms")
    return steps


def report(steps: dict[str, list[float]]) -> list[dict[str, Any]]:
    """Print each side beside the baseline; the headline rows for ``--json``."""
    base = statistics.median(steps[SIDES[2]])
    print(f"\n  {'side':28} {'per step':>40} {'ratio (p50)':>12}")
    for side in SIDES:
        ratio = statistics.median(steps[side]) / base
        print(f"  {side:28} {summary_ms(steps[side])} {ratio:10.2f}x")
    keys = {SIDES[0]: "step", SIDES[1]: "step_limited"}
    notes = {
        SIDES[0]: "20-step StepBench, defaults; baseline: the loop by hand",
        SIDES[1]: f"with a model limit set ({LIMIT_RPS:.0f}/s): calls on <queue>-models",
    }
    return [
        headline(
            f"agent step ({side})",
            statistics.median(steps[side]) * 1000,
            base * 1000,
            "ms",
            notes[side],
            key=keys[side],
        )
        for side in SIDES[:2]
    ]


async def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.step_latency")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per side")
    parser.add_argument("--json", type=Path, help="write the results here (bench.report)")
    parser.add_argument(
        "--details", action="store_true", help="also the per-configuration breakdown"
    )
    args = parser.parse_args()
    configure_logging("WARNING")
    env = await start_dev_environment()
    try:
        print(f"{BENCH_STEPS}-step scripted runs (+1 answering turn), {args.runs} per side")
        print("  median per step: " + " | ".join(SIDES))
        steps = await side_by_side(env.client, args.runs)
        headlines = report(steps)
        if args.json:
            data = {side: [round(s * 1000, 2) for s in values] for side, values in steps.items()}
            write_json(args.json, "step_latency", headlines, {"steps_ms": data})
        if args.details:
            for name, options in CONFIGS.items():
                await bench_config(env.client, name, options, args.runs)
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
    # temporalio's Rust threads can outlive the interpreter and abort its teardown
    # ("PyGILState_Release ... finalizing", temporalio/sdk-python#300); everything is
    # written and flushed by now, so skip the teardown.
    sys.stdout.flush()
    os._exit(0)
