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

from bench._fork_agents import LONG_STEPS
from bench._long_run import finished_long_run, spread_ms
from smyth_temporal.testing import reply
from smyth_temporal.types.rewind import REWIND_SIGNAL, RewindNotice

TO_STEP = LONG_STEPS - 1


async def main(rounds: int) -> None:
    """Run the long run, then time ``rounds`` rewinds and baselines, alternating."""
    async with finished_long_run("rewind", LONG_STEPS, [reply("rewound")] * (2 * rounds)) as run:
        client, agents, workflow_id = run.client, run.agents, run.workflow_id
        before = len(run.model.requests)
        rewinds, baselines = [], []
        for n in range(rounds):
            started = time.perf_counter()
            rewound = await agents.rewind(workflow_id, to_step=TO_STEP, prompt=f"round {n}")
            rewinds.append(time.perf_counter() - started)
            await agents.result(workflow_id)
            started = time.perf_counter()
            history = await client.get_workflow_handle(workflow_id).fetch_history()
            reset = await client.workflow_service.reset_workflow_execution(
                ResetWorkflowExecutionRequest(
                    namespace=client.namespace,
                    workflow_execution=WorkflowExecution(
                        workflow_id=workflow_id, run_id=history.run_id
                    ),
                    reason="bench baseline",
                    workflow_task_finish_event_id=rewound.reset_event_id,
                    request_id=str(uuid.uuid4()),
                )
            )
            baselines.append(time.perf_counter() - started)
            notice = RewindNotice(to_step=TO_STEP, abandoned_run_id=history.run_id)
            await client.get_workflow_handle(workflow_id, run_id=reset.run_id).signal(
                REWIND_SIGNAL, notice
            )
            await agents.result(workflow_id)
        early = [r for r in run.model.requests[before:] if r.step <= TO_STEP]
    run_of = f"a {LONG_STEPS + 1}-step run ({rounds} rounds)"
    print(f"rewind to step {TO_STEP} of {run_of}: {spread_ms(rewinds)}")
    print(f"baseline (fetch the history + reset): {spread_ms(baselines)}")
    print(f"ratio (median): {statistics.median(rewinds) / statistics.median(baselines):.2f}x")
    print(f"model requests for steps <= {TO_STEP} made after the rewinds: {len(early)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    asyncio.run(main(parser.parse_args().rounds))
