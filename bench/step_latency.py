"""Wall time per agent step on a local Temporal dev server.

From the repository root::

    .venv/bin/python -m bench.step_latency [--runs 5]

One run is a ``StepBench`` agent taking 20 steps, each a model turn (the model
activity) followed by one tool call (a tool activity), then a final answering turn.
The model is a ``ScriptedModel`` and the tool returns its argument, so what is timed
is the machinery: workflow tasks, activity dispatch, payload conversion, history.

- per step: the time between consecutive model calls, as the worker sees them
  (model activity + tool activity + the workflow tasks in between);
- start to finish: from ``start_workflow`` on the client to the result;
- where the time goes, from the server's event times: a workflow task waiting to be
  picked up, a workflow task running on the worker, an activity from scheduled to
  completed.

Each worker configuration gets one untimed warm-up run first. Configurations: the
default worker; ``max_cached_workflows=0`` (every workflow task replays the whole
history, as after an eviction); ``disable_eager_activity_execution=True``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHistory

from bench._common import BENCH_STEPS, StepBench, summary_ms
from smyth_temporal import AgentClient, AgentInput
from smyth_temporal._logging import configure_logging
from smyth_temporal.models import ModelRequest, ModelResponse
from smyth_temporal.testing import (
    ScriptedModel,
    agent_worker,
    new_task_queue,
    reply,
    start_dev_environment,
    tool_call,
)

CONFIGS: dict[str, dict[str, Any]] = {
    "default worker": {},
    "max_cached_workflows=0": {"max_cached_workflows": 0},
    "no eager activities": {"disable_eager_activity_execution": True},
}


class TimedModel:
    """A scripted model that notes when each call arrives."""

    def __init__(self) -> None:
        steps = [tool_call("echo", text=f"step {n}") for n in range(1, BENCH_STEPS + 1)]
        self._model = ScriptedModel([*steps, reply("done")])
        self.calls: list[float] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.calls.append(time.perf_counter())
        return await self._model.complete(request)


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


async def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.step_latency")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per configuration")
    args = parser.parse_args()
    configure_logging("WARNING")
    env = await start_dev_environment()
    try:
        print(f"{BENCH_STEPS}-step scripted runs (+1 answering turn), {args.runs} per config")
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
