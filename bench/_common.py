"""What the benchmarks share: the agent they time and a few statistics helpers.

Module-level code here is re-imported by the workflow sandbox (``StepBench`` lives
here), so it must stay free of I/O.
"""

from __future__ import annotations

import socket
import statistics
from collections.abc import Sequence

from temporalio import workflow

from smyth_temporal import AgentConfig, AgentInput, AgentResult, AgentWorkflow, tool

BENCH_STEPS = 20
"""Tool-calling steps of one timed run (a final answering turn comes after them)."""


@tool
async def echo(text: str) -> str:
    """Return the text (a tool that costs nothing, so only the machinery is timed).

    Args:
        text: What to return.
    """
    return text


@workflow.defn
class StepBench(AgentWorkflow):
    """The default loop with one cheap tool; enough steps for a 20-step run."""

    config = AgentConfig(model="bench-model", tools=[echo], max_steps=BENCH_STEPS + 5)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@tool(local=True)
async def local_echo(text: str) -> str:
    """Return the text, as a local activity (the same tool, the other way to run it).

    Args:
        text: What to return.
    """
    return text


@workflow.defn
class LocalStepBench(AgentWorkflow):
    """``StepBench`` with its one tool run as a local activity."""

    config = AgentConfig(model="bench-model", tools=[local_echo], max_steps=BENCH_STEPS + 5)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


def percentile(values: Sequence[float], fraction: float) -> float:
    """The ``fraction`` quantile (0..1), interpolating between the nearest ranks."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    position = (len(ordered) - 1) * fraction
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summary_ms(values: Sequence[float]) -> str:
    """Mean, p50 and p95 of durations in seconds, as milliseconds."""
    return (
        f"mean {statistics.fmean(values) * 1000:6.1f} ms  "
        f"p50 {percentile(values, 0.5) * 1000:6.1f} ms  "
        f"p95 {percentile(values, 0.95) * 1000:6.1f} ms"
    )


def free_port() -> int:
    """A loopback port nothing listens on (now)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port
