"""What A2A (``POST /a2a/{agent}``) adds to a one-turn task, and its time to first text.

From the repository root::

    .venv/bin/python -m bench.a2a [--rounds 40] [--json PATH]

The setting of ``bench.gateway`` (one dev server, one ``StepBench`` worker in this
process, ``smyth serve`` in a process of its own with one operator key), reused from
it. A task is one run of the agent answering one message (30 words); the paths take
turns, one task each per round; one untimed round first.

- ``AgentClient.run`` in this process: the baseline (start the run, wait for its result);
- ``AgentClient.start`` then ``events`` to the run's end, for the first text's baseline;
- A2A ``SendMessage`` with the a2a-sdk's client (JSON-RPC), to the completed task;
- A2A ``SendStreamingMessage`` with the a2a-sdk's client, to the final status update.

Per path: p50 and p95 of the round trip, the ratio of the p50 to the baseline (goal:
1.1x or less), and the time to the first text (the first assistant ``message`` event
of ``AgentClient.events`` for the baseline, the first status update with text over A2A).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from a2a.client import Client as A2AClient
from a2a.client import ClientConfig, create_client
from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest, TaskState

from bench._common import StepBench, percentile
from bench._results import headline, write_json
from bench.gateway import AGENT, ANSWER, MAX_TURNS, PROMPT, gateway_process, ms
from smyth_temporal import AgentClient, configure_logging
from smyth_temporal.testing import (
    ScriptedModel,
    agent_worker,
    new_task_queue,
    reply,
    start_dev_environment,
)
from smyth_temporal.types.events import MessageCompleted

GOAL = 1.1
"""A2A round trip over ``AgentClient.run`` (issue 27)."""
BASELINE = "AgentClient.run"
EVENTS = "AgentClient.start + events"
SEND = "A2A SendMessage (a2a-sdk)"
STREAM = "A2A SendStreamingMessage (a2a-sdk)"

Call = Callable[[], Awaitable[float | None]]
"""One task; answers when its first text came."""


@dataclass
class Way:
    name: str
    call: Call
    times: list[float] = field(default_factory=list)
    first_text: list[float] = field(default_factory=list)


def _message() -> SendMessageRequest:
    message = Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER, parts=[Part(text=PROMPT)])
    return SendMessageRequest(message=message)


def paths(agents: AgentClient, whole: A2AClient, streamed: A2AClient) -> list[Way]:
    async def direct() -> float | None:
        await agents.run(AGENT, PROMPT)
        return None

    async def followed() -> float | None:
        handle = await agents.start(AGENT, PROMPT)
        first = None
        async for event in agents.events(handle.id):
            said = isinstance(event, MessageCompleted) and event.message.role == "assistant"
            if said and first is None:
                first = time.perf_counter()
            if event.kind == "run_finished":
                break
        await agents.result(handle.id)
        return first

    async def send() -> float | None:
        responses = [r async for r in whole.send_message(_message())]
        assert responses[-1].task.status.state == TaskState.TASK_STATE_COMPLETED, responses
        return None

    async def stream() -> float | None:
        first, last = None, None
        async for response in streamed.send_message(_message()):
            update = response.status_update
            if response.HasField("status_update") and update.status.HasField("message"):
                first = first or time.perf_counter()
            last = response
        assert (
            last is not None and last.status_update.status.state == TaskState.TASK_STATE_COMPLETED
        )
        return first

    return [Way(BASELINE, direct), Way(EVENTS, followed), Way(SEND, send), Way(STREAM, stream)]


async def overhead(agents: AgentClient, url: str, key: str, rounds: int) -> list[dict[str, Any]]:
    """The table; the A2A headlines (p50 in ms beside the baseline)."""
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(headers=headers, timeout=60) as http:
        whole = await create_client(
            f"{url}/a2a/{AGENT}", client_config=ClientConfig(httpx_client=http, streaming=False)
        )
        streamed = await create_client(
            f"{url}/a2a/{AGENT}", client_config=ClientConfig(httpx_client=http, streaming=True)
        )
        ways = paths(agents, whole, streamed)
        for number in range(rounds + 1):
            for way in ways:
                began = time.perf_counter()
                first = await way.call()
                if number:  # the first round opens connections
                    way.times.append(time.perf_counter() - began)
                    if first is not None:
                        way.first_text.append(first - began)
    by_name = {way.name: way for way in ways}
    base = percentile(by_name[BASELINE].times, 0.5)
    print(f"\nOne-turn task, {rounds} rounds (30-word answers)")
    print(
        f"  {'path':36} {'p50 ms':>7} {'p95 ms':>7} {'ratio':>6} {'added':>8}"
        f" {'first text p50':>15} {'p95':>7}"
    )
    for way in ways:
        p50 = percentile(way.times, 0.5)
        shown = ms(way.first_text) if way.first_text else ""
        print(
            f"  {way.name:36} {ms(way.times)} {p50 / base:5.2f}x {(p50 - base) * 1000:+6.1f}ms"
            f" {shown:>23}"
        )
    send = percentile(by_name[SEND].times, 0.5)
    print(f"  goal A2A: at most {GOAL}x: {'met' if send / base <= GOAL else 'NOT met'}")
    note = f"p50 of {rounds} one-turn tasks; baseline: {BASELINE} in process"
    first_base = percentile(by_name[EVENTS].first_text, 0.5)
    first = percentile(by_name[STREAM].first_text, 0.5)
    first_note = f"p50 of {rounds}; baseline: the first assistant message of AgentClient.events"
    return [
        headline("A2A task round trip", send * 1000, base * 1000, "ms", note, key="a2a_send"),
        headline(
            "A2A time to first text",
            first * 1000,
            first_base * 1000,
            "ms",
            first_note,
            key="a2a_first_text",
        ),
    ]


async def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.a2a")
    parser.add_argument("--rounds", type=int, default=40, help="timed rounds")
    parser.add_argument("--json", type=Path, help="write the results here (bench.report)")
    args = parser.parse_args()
    configure_logging("WARNING")
    env = await start_dev_environment()
    try:
        task_queue = new_task_queue("bench-a2a")
        model = ScriptedModel([reply(ANSWER)] * MAX_TURNS)
        async with (
            agent_worker(env.client, StepBench, model=model, task_queue=task_queue),
            gateway_process(env.client, task_queue) as served,
        ):
            agents = AgentClient(env.client, task_queue=task_queue)
            rows = await overhead(agents, served.url, served.key, args.rounds)
            if args.json:
                write_json(args.json, "a2a", rows, {})
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
    # temporalio's Rust threads can outlive the interpreter (temporalio/sdk-python#300).
    sys.stdout.flush()
    os._exit(0)
