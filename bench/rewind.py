"""Time to rewind a 200-step run to step 199, beside fetching its history and a bare reset.

From the repository root::

    .venv/bin/python -m bench.rewind [--rounds 5]

One dev server, one worker in this process. ``LongRun`` (``bench.fork``'s) takes 200
tool-calling steps and answers. Then, per round:

- rewind: ``AgentClient.rewind(id, to_step=199, prompt=...)``: read the current run's
  history for the reset point and what the notice lists, reset, signal the notice (the
  rewound run's step 200 is not timed; the round waits for it before the next);
- baseline: what any rewind needs at least: fetch the same history and reset the run to
  the same event (then its notice is signalled and the run finishes, untimed).

Prints the median and the spread of each, and the model requests the rewinds made for
steps up to 199 (the goal: none).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import ResetWorkflowExecutionRequest

from bench._fork_agents import LONG_STEPS, LongRun
from smyth_temporal import AgentClient
from smyth_temporal.testing import (
    ScriptedModel,
    agent_worker,
    new_task_queue,
    reply,
    start_dev_environment,
    tool_call,
)
from smyth_temporal.types.rewind import REWIND_SIGNAL, RewindNotice

TO_STEP = LONG_STEPS - 1


async def main(rounds: int) -> None:
    """Run the long run, then time ``rounds`` rewinds and baselines, alternating."""
    steps = [tool_call("echo", text=f"step {n}") for n in range(1, LONG_STEPS + 1)]
    model = ScriptedModel([*steps, reply("done"), *[reply("rewound")] * (2 * rounds)])
    async with await start_dev_environment() as env:
        client, queue = env.client, new_task_queue("bench-rewind")
        agents = AgentClient(client, task_queue=queue)
        async with agent_worker(client, LongRun, model=model, task_queue=queue):
            handle = await agents.start(LongRun, "Echo 200 times.")
            result = await agents.result(handle.id)
            assert result.steps == LONG_STEPS + 1, result
            before = len(model.requests)
            rewinds, baselines = [], []
            for n in range(rounds):
                started = time.perf_counter()
                rewound = await agents.rewind(handle.id, to_step=TO_STEP, prompt=f"round {n}")
                rewinds.append(time.perf_counter() - started)
                await agents.result(handle.id)
                started = time.perf_counter()
                history = await client.get_workflow_handle(handle.id).fetch_history()
                reset = await client.workflow_service.reset_workflow_execution(
                    ResetWorkflowExecutionRequest(
                        namespace=client.namespace,
                        workflow_execution=WorkflowExecution(
                            workflow_id=handle.id, run_id=history.run_id
                        ),
                        reason="bench baseline",
                        workflow_task_finish_event_id=rewound.reset_event_id,
                        request_id=str(uuid.uuid4()),
                    )
                )
                baselines.append(time.perf_counter() - started)
                notice = RewindNotice(to_step=TO_STEP, abandoned_run_id=history.run_id)
                await client.get_workflow_handle(handle.id, run_id=reset.run_id).signal(
                    REWIND_SIGNAL, notice
                )
                await agents.result(handle.id)
            early = [r for r in model.requests[before:] if r.step <= TO_STEP]
    print(
        f"rewind to step {TO_STEP} of a {LONG_STEPS + 1}-step run ({rounds} rounds): {_ms(rewinds)}"
    )
    print(f"baseline (fetch the history + reset): {_ms(baselines)}")
    print(f"ratio (median): {statistics.median(rewinds) / statistics.median(baselines):.2f}x")
    print(f"model requests for steps <= {TO_STEP} made after the rewinds: {len(early)}")


def _ms(values: list[float]) -> str:
    return (
        f"median {statistics.median(values) * 1000:.0f} ms "
        f"(min {min(values) * 1000:.0f}, max {max(values) * 1000:.0f})"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    asyncio.run(main(parser.parse_args().rounds))
