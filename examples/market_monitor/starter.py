"""Start a market monitor run and print its report.

    python -m examples.market_monitor.starter

A worker must be running (see worker.py). When the agent asks to sell shares, the run
waits for a trader: this script prints the request and the ``smyth approve`` command
that decides it, from any terminal.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid

from temporalio.client import Client, WorkflowQueryFailedError
from temporalio.service import RPCError

from examples.market_monitor import PROMPT
from examples.market_monitor.workflows import MarketMonitor
from smyth_temporal import AgentClient, AgentInput, AgentResult, ApprovalRequest, SmythError

_STATE_INTERVAL = 0.5
"""Seconds between looks at the run's state, for approval requests to announce."""


async def main(
    client: Client | None = None,
    *,
    task_queue: str | None = None,
    workflow_id: str | None = None,
) -> AgentResult:
    """Run the market monitor once and return its result.

    Args:
        client: A client with ``SmythPlugin`` (default: connect as the environment says).
        task_queue: Where the worker listens (default: ``SMYTH_TASK_QUEUE`` or
            ``smyth-agents``).
        workflow_id: The run's workflow id (default: ``market-monitor-<random>``).
    """
    if client is None:
        agents = await AgentClient.connect()
        agents.task_queue = task_queue or agents.task_queue
    else:
        agents = AgentClient(client, task_queue=task_queue)
    handle = await agents.start(
        MarketMonitor,
        AgentInput(prompt=PROMPT),
        id=workflow_id or f"market-monitor-{uuid.uuid4().hex[:8]}",
    )
    print(f"Started {handle.id}; follow it with `smyth state {handle.id}`")
    result_task = asyncio.create_task(agents.result(handle.id))
    announced: set[str] = set()
    try:
        while not result_task.done():
            for request in await _pending(agents, handle.id):
                if request.id not in announced:
                    announced.add(request.id)
                    _announce(handle.id, request)
            await asyncio.wait({result_task}, timeout=_STATE_INTERVAL)
    finally:
        if not result_task.done():
            result_task.cancel()
    result = await result_task
    print(f"{result.status} in {result.steps} steps, {result.usage.tool_calls} tool calls:")
    print(result.output)
    return result


async def _pending(agents: AgentClient, workflow_id: str) -> list[ApprovalRequest]:
    """The run's pending approval requests; none while no worker answers the query."""
    with contextlib.suppress(TimeoutError, SmythError, RPCError, WorkflowQueryFailedError):
        async with asyncio.timeout(_STATE_INTERVAL * 4):
            return (await agents.state(workflow_id)).pending_approvals
    return []


def _announce(workflow_id: str, request: ApprovalRequest) -> None:
    arguments = json.dumps(request.arguments)
    print(f"Waiting for approval: {request.tool}({arguments}), request {request.id}")
    print(f"  reason:   {request.reason or '(none given)'}")
    print(f"  deadline: {request.deadline.isoformat()} (then: {request.on_timeout})")
    print(f"  approve:  smyth approve {workflow_id} --sha256 {request.arguments_sha256}")
    print(f"  reject:   smyth reject {workflow_id} --reason 'why'")


async def _main() -> None:
    try:
        await main()
    finally:
        # temporalio's core threads release objects for a moment after the last call;
        # exiting meanwhile can abort the interpreter (temporalio/sdk-python#300).
        await asyncio.sleep(0.1)


if __name__ == "__main__":
    asyncio.run(_main())
