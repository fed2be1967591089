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

from bench._fork_agents import CHANGED_AT, EVAL_STEPS, LONG_STEPS, Evaluated, LongRun, Nothing
from smyth_temporal import AgentClient
from smyth_temporal.testing import (
    ScriptedModel,
    agent_worker,
    new_task_queue,
    reply,
    start_dev_environment,
    tool_call,
)


async def main(rounds: int) -> None:
    """Run the long run, then time ``rounds`` forks and baselines, alternating."""
    steps = [tool_call("echo", text=f"step {n}") for n in range(1, LONG_STEPS + 1)]
    model = ScriptedModel([*steps, reply("done"), *[reply("forked")] * 5])
    async with await start_dev_environment() as env:
        client, queue = env.client, new_task_queue("bench-fork")
        agents = AgentClient(client, task_queue=queue)
        async with agent_worker(client, LongRun, model=model, task_queue=queue):
            handle = await agents.start(LongRun, "Echo 200 times.")
            result = await agents.result(handle.id)
            assert result.steps == LONG_STEPS + 1, result
            before = len(model.requests)
            forks, baselines = [], []
            for _ in range(rounds):
                started = time.perf_counter()
                fork = await agents.fork(handle.id, at_step=LONG_STEPS)
                forks.append(time.perf_counter() - started)
                started = time.perf_counter()
                await client.get_workflow_handle(handle.id).fetch_history()
                plain = await client.start_workflow(
                    Nothing.run, id=f"nothing-{uuid.uuid4().hex[:8]}", task_queue=f"{queue}-idle"
                )
                baselines.append(time.perf_counter() - started)
                await plain.terminate()
                await agents.result(fork.id)
            early = [r for r in model.requests[before:] if r.step <= LONG_STEPS]
        evaluation = await _evaluation(client, agents, queue)
    print(f"fork at step {LONG_STEPS} ({rounds} rounds): {_ms(forks)}")
    print(f"baseline (fetch the history + start a plain workflow): {_ms(baselines)}")
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


def _ms(values: list[float]) -> str:
    return (
        f"median {statistics.median(values) * 1000:.0f} ms "
        f"(min {min(values) * 1000:.0f}, max {max(values) * 1000:.0f})"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    asyncio.run(main(parser.parse_args().rounds))
