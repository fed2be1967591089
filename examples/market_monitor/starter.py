"""Start a market monitor run and print its report.

    python -m examples.market_monitor.starter

A worker must be running (see worker.py).
"""

from __future__ import annotations

import asyncio
import uuid

from temporalio.client import Client

from examples.market_monitor import PROMPT
from examples.market_monitor.workflows import MarketMonitor
from smyth_temporal import AgentClient, AgentInput, AgentResult


async def main(client: Client | None = None, *, task_queue: str | None = None) -> AgentResult:
    """Run the market monitor once and return its result.

    Args:
        client: A client with ``SmythPlugin`` (default: connect as the environment says).
        task_queue: Where the worker listens (default: ``SMYTH_TASK_QUEUE`` or
            ``smyth-agents``).
    """
    if client is None:
        agents = await AgentClient.connect()
        agents.task_queue = task_queue or agents.task_queue
    else:
        agents = AgentClient(client, task_queue=task_queue)
    handle = await agents.start(
        MarketMonitor, AgentInput(prompt=PROMPT), id=f"market-monitor-{uuid.uuid4().hex[:8]}"
    )
    print(f"Started {handle.id}; follow it with `smyth state {handle.id}`")
    result = await agents.result(handle.id)
    print(f"{result.status} in {result.steps} steps, {result.usage.tool_calls} tool calls:")
    print(result.output)
    return result


if __name__ == "__main__":
    asyncio.run(main())
