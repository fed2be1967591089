"""What AG-UI (``POST /ag-ui/{agent}``) adds to a session turn, and its time to first text.

From the repository root::

    .venv/bin/python -m bench.agui [--rounds 60] [--json PATH]

The gateway benchmarks' setting (``bench._served``: one dev server, one ``StepBench``
worker in this process, ``smyth serve`` in a process of its own with one operator
key). Each path has a session (an AG-UI thread) of its own; the paths take turns, one
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

import json
import time
import uuid
from typing import Any

import httpx

from bench._served import (
    AGENT,
    PROMPT,
    TENANT,
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

GOAL = 1.1
"""AG-UI round trip over ``AgentClient.send(stream=True)`` (issue 27)."""
BASELINE = "AgentClient.send(stream=True)"
AGUI = "AG-UI, httpx POST /ag-ui/{agent}"


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
        Way("AgentClient.send", direct, BASELINE),
        Way(BASELINE, direct_streamed, BASELINE),
        Way(AGUI, agui, BASELINE),
    ]


async def overhead(agents: AgentClient, served: Gateway, rounds: int) -> list[dict[str, Any]]:
    """The table; the AG-UI headline (p50 in ms beside the streamed baseline)."""
    headers = {"Authorization": f"Bearer {served.key}", "Accept": "text/event-stream"}
    async with httpx.AsyncClient(base_url=served.url, headers=headers, timeout=60) as http:
        ways = paths(agents, http)
        await take_turns(ways, rounds, lambda index: f"agui-{index}")
    by_name = table(f"Session turn, {rounds} rounds (p50 of 30-word replies)", ways)
    agui = by_name[AGUI]
    goal("AG-UI", agui, by_name, GOAL)
    return protocol_headlines(
        agui,
        agui,
        by_name[BASELINE],
        by_name,
        metrics=("AG-UI round trip", "AG-UI time to first text"),
        keys=("agui_streamed", "agui_first_text"),
        notes=(
            f"p50 of {rounds} session turns; baseline: {BASELINE} in process",
            f"p50 of {rounds}; baseline: the first ReplyChunk of {BASELINE}",
        ),
    )


async def main() -> None:
    await serve_and_measure("agui", overhead, rounds=100)


if __name__ == "__main__":
    launch(main)
