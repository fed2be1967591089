"""What A2A (``POST /a2a/{agent}``) adds to a one-turn task, and its time to first text.

From the repository root::

    .venv/bin/python -m bench.a2a [--rounds 40] [--json PATH]

The gateway benchmarks' setting (``bench._served``: one dev server, one ``StepBench``
worker in this process, ``smyth serve`` in a process of its own with one operator
key). A task is one run of the agent answering one message (30 words); the paths take
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

import time
import uuid
from typing import Any

import httpx
from a2a.client import Client as A2AClient
from a2a.client import ClientConfig, create_client
from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest, TaskState

from bench._served import (
    AGENT,
    PROMPT,
    Gateway,
    Way,
    goal,
    launch,
    protocol_headlines,
    serve_and_measure,
    table,
    take_turns,
)
from smyth_temporal import AgentClient
from smyth_temporal.types.events import MessageCompleted

GOAL = 1.1
"""A2A round trip over ``AgentClient.run`` (issue 27)."""
BASELINE = "AgentClient.run"
EVENTS = "AgentClient.start + events"
SEND = "A2A SendMessage (a2a-sdk)"
STREAM = "A2A SendStreamingMessage (a2a-sdk)"


def _message() -> SendMessageRequest:
    message = Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER, parts=[Part(text=PROMPT)])
    return SendMessageRequest(message=message)


def paths(agents: AgentClient, whole: A2AClient, streamed: A2AClient) -> list[Way]:
    async def direct(_: str) -> float | None:
        await agents.run(AGENT, PROMPT)
        return None

    async def followed(_: str) -> float | None:
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

    async def send(_: str) -> float | None:
        responses = [r async for r in whole.send_message(_message())]
        assert responses[-1].task.status.state == TaskState.TASK_STATE_COMPLETED, responses
        return None

    async def stream(_: str) -> float | None:
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

    return [
        Way(BASELINE, direct, BASELINE),
        Way(EVENTS, followed, BASELINE),
        Way(SEND, send, BASELINE),
        Way(STREAM, stream, BASELINE),
    ]


async def overhead(agents: AgentClient, served: Gateway, rounds: int) -> list[dict[str, Any]]:
    """The table; the A2A headlines (p50 in ms beside the baseline)."""
    headers = {"Authorization": f"Bearer {served.key}"}
    async with httpx.AsyncClient(headers=headers, timeout=60) as http:
        card = f"{served.url}/a2a/{AGENT}"
        whole = await create_client(
            card, client_config=ClientConfig(httpx_client=http, streaming=False)
        )
        streamed = await create_client(
            card, client_config=ClientConfig(httpx_client=http, streaming=True)
        )
        ways = paths(agents, whole, streamed)
        await take_turns(ways, rounds, lambda index: f"a2a-{index}")  # tasks: no sessions
    by_name = table(f"One-turn task, {rounds} rounds (30-word answers)", ways)
    goal("A2A", by_name[SEND], by_name, GOAL)
    return protocol_headlines(
        by_name[SEND],
        by_name[STREAM],
        by_name[EVENTS],
        by_name,
        metrics=("A2A task round trip", "A2A time to first text"),
        keys=("a2a_send", "a2a_first_text"),
        notes=(
            f"p50 of {rounds} one-turn tasks; baseline: {BASELINE} in process",
            f"p50 of {rounds}; baseline: the first assistant message of AgentClient.events",
        ),
    )


async def main() -> None:
    await serve_and_measure("a2a", overhead, rounds=40)


if __name__ == "__main__":
    launch(main)
