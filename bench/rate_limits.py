"""Fleet-wide model rate limits: the calls per second a model sees, against the limit set.

From the repository root::

    .venv/bin/python -m bench.rate_limits [--limits 2 5 10] [--agents 20] [--json PATH]

One dev server (fairness on, one partition per queue: what ``smyth dev`` passes), three
workers, each with its own connection, as three processes of a fleet would be. For each
limit, ``AgentClient.limits.set(model_rps=...)`` puts it on the model task queue, then
``--agents`` ``StepBench`` agents start at once, each making two model calls (a tool
call, then an answer). The model notes when each call reaches it. Printed per limit:
the steady rate (calls after the first second, over the time they took), the most calls
in any one-second window (the server's token bucket lets up to one second's worth
through at once after an idle spell), and steady rate / limit.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from contextlib import AsyncExitStack
from pathlib import Path

from temporalio.client import Client

from bench._common import StepBench
from bench._results import headline, write_json
from smyth_temporal import AgentClient, AgentInput, configure_logging
from smyth_temporal.models import ModelRequest, ModelResponse
from smyth_temporal.testing import (
    agent_worker,
    new_task_queue,
    reply,
    start_dev_environment,
    tool_call,
)

WORKERS = 3


class ClockedModel:
    """One tool call, then an answer; notes when each call arrives (one list for all workers)."""

    def __init__(self, arrivals: list[float]) -> None:
        self.arrivals = arrivals

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.arrivals.append(time.monotonic())
        return tool_call("echo", text="x") if request.step == 1 else reply("done")


def steady_rate(arrivals: list[float], *, after: float = 1.0) -> float:
    """Calls per second from ``after`` seconds past the first call to the last one."""
    start = arrivals[0]
    times = [t for t in arrivals if t - start >= after]
    return (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 else float("nan")


def busiest_second(arrivals: list[float]) -> int:
    """The most calls in any one-second window."""
    return max(sum(1 for u in arrivals if t <= u < t + 1.0) for t in arrivals)


async def one_limit(
    client: Client, address: str, limit: float, agents_count: int
) -> dict[str, float]:
    task_queue = new_task_queue()
    starter = AgentClient(client, task_queue=task_queue)
    await starter.limits.set(model_rps=limit, task_queue=task_queue)
    arrivals: list[float] = []
    async with AsyncExitStack() as workers:
        for _ in range(WORKERS):
            connection = await Client.connect(address)
            model = ClockedModel(arrivals)
            await workers.enter_async_context(
                agent_worker(connection, StepBench, model=model, task_queue=task_queue)
            )
        handles = [
            await starter.start(StepBench, AgentInput(prompt="go")) for _ in range(agents_count)
        ]
        results = await asyncio.gather(*(starter.result(h.id) for h in handles))
    failed = sum(1 for r in results if r.status != "completed")
    arrivals.sort()
    rate = steady_rate(arrivals)
    return {
        "limit": limit,
        "calls": len(arrivals),
        "steady_rate": rate,
        "busiest_second": busiest_second(arrivals),
        "ratio": rate / limit,
        "failed": failed,
    }


async def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.rate_limits")
    parser.add_argument("--limits", type=float, nargs="+", default=[2.0, 5.0, 10.0])
    parser.add_argument("--agents", type=int, default=20, help="agents per limit (2 calls each)")
    parser.add_argument("--json", type=Path, help="write the results here for bench.report")
    args = parser.parse_args()
    configure_logging("WARNING")
    env = await start_dev_environment()
    address = str(env.client.service_client.config.target_host)
    rows = []
    try:
        print(f"{WORKERS} workers, {args.agents} agents x 2 model calls per limit")
        print(f"{'limit/s':>8} {'calls':>6} {'steady/s':>9} {'busiest 1s':>11} {'ratio':>6}")
        for limit in args.limits:
            row = await one_limit(env.client, address, limit, args.agents)
            rows.append(row)
            print(
                f"{limit:8g} {row['calls']:6d} {row['steady_rate']:9.2f} "
                f"{row['busiest_second']:11d} {row['ratio']:6.2f}x"
                + (f"  ({row['failed']} agents failed)" if row["failed"] else "")
            )
    finally:
        await env.shutdown()
    if args.json:
        write_json(
            args.json,
            "rate_limits",
            [
                headline(
                    f"model calls/s at limit {r['limit']:g}", r["steady_rate"], r["limit"], "/s"
                )
                for r in rows
            ],
            {"rows": rows},
        )


if __name__ == "__main__":
    asyncio.run(main())
