"""The workflows ``bench.fork`` times (imported by the sandbox: no I/O here)."""

from __future__ import annotations

from temporalio import workflow

from bench._common import echo
from smyth_temporal import AgentConfig, AgentInput, AgentResult, AgentWorkflow, tool

LONG_STEPS = 200
"""Tool-calling steps of the long run the bench forks (a final answer comes after)."""


@workflow.defn
class LongRun(AgentWorkflow):
    """One cheap tool and room for a 200-step run in one run of its chain."""

    config = AgentConfig(model="bench-model", tools=[echo], max_steps=LONG_STEPS + 10)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class Nothing:
    """The baseline's plain workflow: started (no worker runs it), then terminated."""

    @workflow.run
    async def run(self) -> None:
        await workflow.wait_condition(lambda: False)


EVAL_STEPS = 20
"""Tool-calling steps of the evaluation ``bench.fork`` replays (an answer comes after)."""

CHANGED_AT: dict[str, int] = {}
"""``{"step": n}``: ``lookup`` answers differently for ``n`` (the change under evaluation)."""


@tool
async def lookup(n: int) -> str:
    """The value of item ``n``.

    Args:
        n: The item.
    """
    return f"value {n}" + (" (revised)" if CHANGED_AT.get("step") == n else "")


@workflow.defn
class Evaluated(AgentWorkflow):
    """The agent of the replayed evaluation: looks up 20 items, then answers."""

    config = AgentConfig(model="bench-model", tools=[lookup], max_steps=EVAL_STEPS + 5)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)
