"""A finished ``LongRun`` to fork, rewind or read: what ``bench.fork``, ``bench.rewind`` and
``bench.lineage`` each start with.

Not imported by workflow code (``_fork_agents.py`` is), so it may use
``smyth_temporal.testing``.
"""

from __future__ import annotations

import contextlib
import statistics
from collections.abc import AsyncIterator
from dataclasses import dataclass

from temporalio.client import Client

from bench._fork_agents import LongRun
from smyth_temporal import AgentClient
from smyth_temporal.models import ModelResponse
from smyth_temporal.testing import (
    ScriptedModel,
    agent_worker,
    new_task_queue,
    reply,
    start_dev_environment,
    tool_call,
)


@dataclass(frozen=True)
class FinishedRun:
    """A dev server, a worker for ``LongRun`` and one run of it, finished."""

    client: Client
    queue: str
    agents: AgentClient
    model: ScriptedModel
    workflow_id: str


@contextlib.asynccontextmanager
async def finished_long_run(
    name: str, steps: int, then: list[ModelResponse]
) -> AsyncIterator[FinishedRun]:
    """Start a dev server and a worker, run ``LongRun`` for ``steps`` echo steps and an answer.

    Args:
        name: The bench's name (its task queue's prefix).
        steps: The tool-calling steps before the answer.
        then: What the model answers after the run (for the forks or rewound runs).
    """
    calls = [tool_call("echo", text=f"step {n}") for n in range(1, steps + 1)]
    model = ScriptedModel([*calls, reply("done"), *then])
    async with await start_dev_environment() as env:
        client, queue = env.client, new_task_queue(f"bench-{name}")
        agents = AgentClient(client, task_queue=queue)
        async with agent_worker(client, LongRun, model=model, task_queue=queue):
            handle = await agents.start(LongRun, f"Echo {steps} times.")
            result = await agents.result(handle.id)
            assert result.steps == steps + 1, result
            yield FinishedRun(client, queue, agents, model, handle.id)


def spread_ms(values: list[float]) -> str:
    """The median, min and max of ``values`` (seconds), in milliseconds."""
    return (
        f"median {statistics.median(values) * 1000:.0f} ms "
        f"(min {min(values) * 1000:.0f}, max {max(values) * 1000:.0f})"
    )
