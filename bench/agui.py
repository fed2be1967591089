"""What AG-UI (``POST /ag-ui/{agent}``) adds to a session turn, and its time to first text.

From the repository root::

    .venv/bin/python -m bench.agui [--rounds 60] [--json PATH]

The setting of ``bench.gateway`` (one dev server, one ``StepBench`` worker in this
process, ``smyth serve`` in a process of its own with one operator key), reused from
it. Each path has a session (an AG-UI thread) of its own; the paths take turns, one
message each per round, so their sessions grow alike; one untimed round first.

- ``AgentClient.send(stream=True)`` in this process: the baseline, the same kind of call
  (the reply read as it is written);
- ``AgentClient.send``, whole, for reference;
- AG-UI through the gateway with ``httpx``, read to ``RUN_FINISHED`` (the run's events
  parsed as JSON, as a front end does; the gateway also asks the agent its state for
  the ``STATE_SNAPSHOT``).

Per path: p50 and p95 of the round trip (message sent to last event), the ratio of the
p50 to the streamed baseline (goal: 1.1x or less), and the time to the first text
(``TEXT_MESSAGE_CONTENT``, or the first ``ReplyChunk``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench._common import StepBench, percentile
from bench._results import headline, write_json
from bench.gateway import AGENT, ANSWER, MAX_TURNS, PROMPT, TENANT, gateway_process, ms
from smyth_temporal import AgentClient, configure_logging
from smyth_temporal.testing import (
    ScriptedModel,
    agent_worker,
    new_task_queue,
    reply,
    start_dev_environment,
)

GOAL = 1.1
"""AG-UI round trip over ``AgentClient.send(stream=True)`` (issue 27)."""

Call = Callable[[str], Awaitable[float | None]]
"""One round trip to the session named by its argument; answers when the first text came."""


@dataclass
class Way:
    """A way to send a session message."""

    name: str
    call: Call
    times: list[float] = field(default_factory=list)
    first_text: list[float] = field(default_factory=list)


def paths(agents: AgentClient, http: httpx.AsyncClient) -> list[Way]:
    async def direct(session: str) -> float | None:
        await agents.send(AGENT, session, PROMPT, tenant=TENANT)
        return None

    async def direct_streamed(session: str) -> float | None:
        first = None
        async for _ in agents.send(AGENT, session, PROMPT, tenant=TENANT, stream=True):
            first = first or time.perf_counter()
        return first

    async def agui(session: str) -> float | None:
        body = {
            "threadId": session,
            "runId": uuid.uuid4().hex,
            "messages": [{"id": uuid.uuid4().hex, "role": "user", "content": PROMPT}],
        }
        first, finished = None, False
        async with http.stream("POST", f"/ag-ui/{AGENT}", json=body) as response:
            response.raise_for_status()
            async for line in response.aiter_lines():
                if not line.startswith("data: "):
                    continue
                kind = json.loads(line[6:])["type"]
                if kind == "TEXT_MESSAGE_CONTENT" and first is None:
                    first = time.perf_counter()
                finished = finished or kind == "RUN_FINISHED"
                if kind == "RUN_ERROR":
                    raise RuntimeError(line)
        assert finished, "the run did not finish"
        return first

    return [
        Way("AgentClient.send", direct),
        Way(BASELINE, direct_streamed),
        Way("AG-UI, httpx POST /ag-ui/{agent}", agui),
    ]


BASELINE = "AgentClient.send(stream=True)"


async def overhead(agents: AgentClient, url: str, key: str, rounds: int) -> list[dict[str, Any]]:
    """The table; the AG-UI headline (p50 in ms beside the streamed baseline)."""
    headers = {"Authorization": f"Bearer {key}", "Accept": "text/event-stream"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as http:
        ways = paths(agents, http)
        for number in range(rounds + 1):
            for index, way in enumerate(ways):
                began = time.perf_counter()
                first = await way.call(f"agui-{index}")
                if number:  # the first round opens connections and starts the sessions
                    way.times.append(time.perf_counter() - began)
                    if first is not None:
                        way.first_text.append(first - began)
    by_name = {way.name: way for way in ways}
    base = percentile(by_name[BASELINE].times, 0.5)
    print(f"\nSession turn, {rounds} rounds (p50 of 30-word replies)")
    print(
        f"  {'path':34} {'p50 ms':>7} {'p95 ms':>7} {'ratio':>6} {'added':>8}"
        f" {'first text p50':>15} {'p95':>7}"
    )
    for way in ways:
        p50 = percentile(way.times, 0.5)
        first = ms(way.first_text) if way.first_text else ""
        print(
            f"  {way.name:34} {ms(way.times)} {p50 / base:5.2f}x {(p50 - base) * 1000:+6.1f}ms"
            f" {first:>23}"
        )
    agui = by_name["AG-UI, httpx POST /ag-ui/{agent}"]
    p50 = percentile(agui.times, 0.5)
    print(f"  goal AG-UI: at most {GOAL}x: {'met' if p50 / base <= GOAL else 'NOT met'}")
    note = f"p50 of {rounds} session turns; baseline: {BASELINE} in process"
    first_base = percentile(by_name[BASELINE].first_text, 0.5)
    first_note = f"p50 of {rounds}; baseline: the first ReplyChunk of {BASELINE}"
    return [
        headline("AG-UI round trip", p50 * 1000, base * 1000, "ms", note, key="agui_streamed"),
        headline(
            "AG-UI time to first text",
            percentile(agui.first_text, 0.5) * 1000,
            first_base * 1000,
            "ms",
            first_note,
            key="agui_first_text",
        ),
    ]


async def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.agui")
    parser.add_argument("--rounds", type=int, default=60, help="timed rounds")
    parser.add_argument("--json", type=Path, help="write the results here (bench.report)")
    args = parser.parse_args()
    configure_logging("WARNING")
    env = await start_dev_environment()
    try:
        task_queue = new_task_queue("bench-agui")
        model = ScriptedModel([reply(ANSWER)] * MAX_TURNS)
        async with (
            agent_worker(env.client, StepBench, model=model, task_queue=task_queue),
            gateway_process(env.client, task_queue) as served,
        ):
            agents = AgentClient(env.client, task_queue=task_queue)
            rows = await overhead(agents, served.url, served.key, args.rounds)
            if args.json:
                write_json(args.json, "agui", rows, {})
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
    # temporalio's Rust threads can outlive the interpreter (temporalio/sdk-python#300).
    sys.stdout.flush()
    os._exit(0)
