"""A step with a cheap read-only tool, as an ordinary activity and as a local activity.

From the repository root::

    .venv/bin/python -m bench.local_tools [--runs 5]

One dev server, one worker serving both agents; runs interleaved. ``StepBench`` and
``LocalStepBench`` (``bench/_common.py``) are the same 20-step loop of a model turn and
one ``echo`` call; the second declares the tool ``local=True``. Printed: per-step time
of each (model call to model call) and their ratio (the issue's goal: at most 0.6x).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time

from bench._common import BENCH_STEPS, LocalStepBench, StepBench, summary_ms
from smyth_temporal import AgentClient, AgentInput, configure_logging
from smyth_temporal.models import ModelRequest, ModelResponse
from smyth_temporal.testing import (
    agent_worker,
    new_task_queue,
    reply,
    start_dev_environment,
    tool_call,
)


class TimedModel:
    """Calls the agent's echo tool for 20 turns then answers; notes when each call came."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.calls.append(time.perf_counter())
        if request.step > BENCH_STEPS:
            return reply("done")
        name = "local_echo" if request.agent == LocalStepBench.__name__ else "echo"
        return tool_call(name, text=f"step {request.step}")


async def one_run(agents: AgentClient, agent: type, model: TimedModel) -> list[float]:
    model.calls.clear()
    handle = await agents.start(agent, AgentInput(prompt="go"))
    result = await agents.result(handle.id)
    assert result.steps == BENCH_STEPS + 1, result
    return [b - a for a, b in zip(model.calls, model.calls[1:], strict=False)]


async def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.local_tools")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per agent")
    args = parser.parse_args()
    configure_logging("WARNING")
    env = await start_dev_environment()
    try:
        model = TimedModel()
        task_queue = new_task_queue("bench-local")
        agents = AgentClient(env.client, task_queue=task_queue)
        steps: dict[str, list[float]] = {"activity": [], "local activity": []}
        sides = {"activity": StepBench, "local activity": LocalStepBench}
        async with agent_worker(
            env.client, StepBench, LocalStepBench, model=model, task_queue=task_queue
        ):
            for number in range(args.runs + 1):
                for name, agent in sides.items():
                    run = await one_run(agents, agent, model)
                    if number:  # the first run of each warms up
                        steps[name] += run
        print(f"{BENCH_STEPS}-step runs (model turn + one echo call), {args.runs} per side")
        for name, values in steps.items():
            print(f"  {name:15} {summary_ms(values)}")
        ratio = statistics.median(steps["local activity"]) / statistics.median(steps["activity"])
        saved = statistics.median(steps["activity"]) - statistics.median(steps["local activity"])
        print(f"  local / activity per step: {ratio:.2f}x (median), {saved * 1000:.1f} ms saved")
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
    sys.stdout.flush()
    os._exit(0)  # temporalio's Rust threads can outlive the interpreter (bench/step_latency.py)
