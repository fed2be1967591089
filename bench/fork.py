"""Time to fork at step 200 of a long run, beside starting a plain workflow.

From the repository root::

    .venv/bin/python -m bench.fork [--rounds 5]

One dev server, one worker in this process. ``LongRun`` takes 200 tool-calling steps
(a scripted model, one cheap tool) and answers. Then, per round:

- fork: ``AgentClient.fork(id, at_step=200)``: fetch the run's history, replay it to
  the model turn after step 200, start the fork (its own run is not timed);
- baseline: what any fork needs at least: fetch the same history and start a plain
  workflow (``Nothing``, terminated after).

Prints the median and the spread of each, and the model requests the forks made for
steps up to 200 (the goal: none, and a fork under 1 s).

Then the replayed evaluation: ``Evaluated`` looks up 20 items and answers (21 model
turns); it is forked at step 0 with step 15's tool output changed, and the fork's worker
answers the turns the original recorded (``replay_model_turns``): it prints the turns
answered from the record, those the model was asked for, and the tokens paid.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid

from temporalio.client import Client

from bench._fork_agents import CHANGED_AT, EVAL_STEPS, LONG_STEPS, Evaluated, Nothing
from bench._long_run import finished_long_run, spread_ms
from smyth_temporal import AgentClient
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call


async def main(rounds: int) -> None:
    """Run the long run, then time ``rounds`` forks and baselines, alternating."""
    async with finished_long_run("fork", LONG_STEPS, [reply("forked")] * 5) as run:
        client, queue, agents, model = run.client, run.queue, run.agents, run.model
        before = len(model.requests)
        forks, baselines = [], []
        for _ in range(rounds):
            started = time.perf_counter()
            fork = await agents.fork(run.workflow_id, at_step=LONG_STEPS)
            forks.append(time.perf_counter() - started)
            started = time.perf_counter()
            await client.get_workflow_handle(run.workflow_id).fetch_history()
            plain = await client.start_workflow(
                Nothing.run, id=f"nothing-{uuid.uuid4().hex[:8]}", task_queue=f"{queue}-idle"
            )
            baselines.append(time.perf_counter() - started)
            await plain.terminate()
            await agents.result(fork.id)
        early = [r for r in model.requests[before:] if r.step <= LONG_STEPS]
        # Its own queue: the long run's worker is still polling this one.
        evaluated = f"{queue}-evaluated"
        evaluation = await _evaluation(client, AgentClient(client, task_queue=evaluated), evaluated)
    print(f"fork at step {LONG_STEPS} ({rounds} rounds): {spread_ms(forks)}")
    print(f"baseline (fetch the history + start a plain workflow): {spread_ms(baselines)}")
    print(f"ratio (median): {statistics.median(forks) / statistics.median(baselines):.2f}x")
    print(f"model requests for steps <= {LONG_STEPS} made by the forks: {len(early)}")
    print(evaluation)


async def _evaluation(client: Client, agents: AgentClient, queue: str) -> str:
    script = [*[tool_call("lookup", n=n) for n in range(1, EVAL_STEPS + 1)], reply("done")]
    model = ScriptedModel(script)
    CHANGED_AT.clear()
    async with agent_worker(client, Evaluated, model=model, task_queue=queue):
        recorded = await agents.start(Evaluated, "Look up 20 items.")
        original = await agents.result(recorded.id)
        paid_before = len(model.requests)
        CHANGED_AT["step"] = 15  # the change under evaluation, on the same worker
        fork = await agents.fork(recorded.id, at_step=0)  # replays the recorded turns
        result = await agents.result(fork.id)
    called = len(model.requests) - paid_before
    turns, paid, full = result.steps, result.usage.total_tokens, original.usage.total_tokens
    return (
        f"replayed evaluation on the worker ({turns} turns, step 15's tool output changed): "
        f"{turns - called} turns answered from the record, {called} asked of the model; "
        f"tokens {paid} against the original's {full} ({1 - paid / full:.0%} saved)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    asyncio.run(main(parser.parse_args().rounds))
