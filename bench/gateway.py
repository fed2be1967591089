"""What the HTTP gateway (``smyth serve``) adds to a session message and to an event stream.

From the repository root::

    .venv/bin/python -m bench.gateway [--rounds 60] [--subscribers 1 100]

The gateway benchmarks' setting (``bench._served``): one dev server; one worker in this
process (``StepBench``, a ``ScriptedModel`` that always answers the same sentence,
streamed a word at a time); the gateway in a process of its own, started as users start
it (``smyth serve StepBench --keys-file ...``), so its CPU time is its own (read from
``/proc/<pid>/stat``).

1. Overhead of a session round trip. Each path has a session of its own; the paths
   take turns, one message each per round, so their sessions grow alike. After one
   untimed round, ``--rounds`` rounds; p50 and p95 of the round trip (send to whole
   reply), and the ratio of the p50 to ``AgentClient.send`` in this process (whole or
   streamed: the same kind of call). The goal is 1.1x or less for the OpenAI client.
   Raw ``httpx`` rows show what the ``openai`` client itself adds; two floors, with no
   Temporal call, what any HTTP round trip to the gateway costs (without and with a key).
2. SSE fan-out. One run whose model waits until every subscriber is connected, then
   writes a reply word by word. ``N`` subscribers read ``/v1/runs/{id}/events`` through
   the gateway (``httpx`` streaming clients, as browsers would), and one reads
   ``AgentClient.events`` in this process. Added latency: for every event and every
   gateway subscriber, its arrival less its arrival at the direct subscriber. Gateway
   CPU: its process's user+system time from the release of the model to the last
   subscriber's end.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import openai
from openai.types.chat import ChatCompletionMessageParam
from temporalio.client import Client

from bench._common import StepBench
from bench._results import headline
from bench._served import (
    AGENT,
    PROMPT,
    STARTUP_TIMEOUT,
    TENANT,
    Gateway,
    Way,
    gateway_process,
    goal,
    launch,
    ms,
    p50,
    serve_and_measure,
    table,
    take_turns,
)
from bench.streaming import text
from smyth_temporal import AgentClient, AgentInput
from smyth_temporal.models import ModelRequest, ModelResponse, TextSink
from smyth_temporal.testing import ScriptedModel, agent_worker, new_task_queue, reply

GOAL = 1.1
"""Gateway round trip over ``AgentClient.send`` (issue 13)."""
FANOUT_WORDS = 150
FANOUT_PACE = 0.010
"""Section 2: the reply's words, and seconds between two."""


async def _drain(stream: AsyncIterator[object], has_text: Callable[[Any], bool]) -> float | None:
    """Read ``stream`` to its end; when its first item with text came."""
    first = None
    async for item in stream:
        if first is None and has_text(item):
            first = time.perf_counter()
    return first


def _chunk_text(chunk: Any) -> bool:
    return bool(chunk.choices and chunk.choices[0].delta.content)


def paths(agents: AgentClient, served: Gateway, http: httpx.AsyncClient) -> list[Way]:
    chat = openai.AsyncOpenAI(base_url=f"{served.url}/openai/v1", api_key=served.key, max_retries=0)
    message: list[ChatCompletionMessageParam] = [{"role": "user", "content": PROMPT}]

    previous: dict[str, str] = {}  # a Responses conversation: the session by its last id

    async def direct(session: str) -> None:
        await agents.send(AGENT, session, PROMPT, tenant=TENANT)

    async def direct_streamed(session: str) -> float | None:
        stream = agents.send(AGENT, session, PROMPT, tenant=TENANT, stream=True)
        return await _drain(aiter(stream), lambda chunk: bool(chunk.text))

    async def native(session: str) -> None:
        route = f"/v1/agents/{AGENT}/sessions/{session}/messages"
        (await http.post(route, json={"text": PROMPT})).raise_for_status()

    async def raw(session: str) -> None:
        body = {"model": AGENT, "user": session, "messages": message}
        (await http.post("/openai/v1/chat/completions", json=body)).raise_for_status()

    async def client(session: str) -> None:
        await chat.chat.completions.create(model=AGENT, user=session, messages=message)

    async def client_streamed(session: str, interim_text: bool = False) -> float | None:
        stream = await chat.chat.completions.create(
            model=AGENT,
            user=session,
            messages=message,
            stream=True,
            extra_body={"smyth": {"interim_text": True}} if interim_text else None,
        )
        return await _drain(aiter(stream), _chunk_text)

    async def client_interim(session: str) -> float | None:
        return await client_streamed(session, interim_text=True)

    async def raw_responses(session: str) -> None:
        body = {"model": AGENT, "input": PROMPT, "previous_response_id": previous.get(session)}
        answer = await http.post("/openai/v1/responses", json=body)
        previous[session] = answer.raise_for_status().json()["id"]

    async def responses(session: str) -> None:
        answer = await chat.responses.create(
            model=AGENT, input=PROMPT, previous_response_id=previous.get(session)
        )
        previous[session] = answer.id

    async def responses_streamed(session: str) -> float | None:
        first = None
        async with chat.responses.stream(
            model=AGENT, input=PROMPT, previous_response_id=previous.get(session)
        ) as stream:
            async for event in stream:
                if first is None and event.type == "response.output_text.delta":
                    first = time.perf_counter()
            previous[session] = (await stream.get_final_response()).id
        return first

    async def health(session: str) -> None:
        (await http.get("/healthz")).raise_for_status()

    async def models(session: str) -> None:
        await chat.models.list()

    whole, streamed = "AgentClient.send", "AgentClient.send(stream=True)"
    return [
        Way("floor: httpx GET /healthz (no key)", health, None),
        Way("floor: openai client models.list (key)", models, None),
        Way(whole, direct, whole),
        Way("httpx POST /v1/.../messages", native, whole),
        Way("httpx POST /openai/v1/chat/completions", raw, whole),
        Way("openai client", client, whole),
        Way("httpx POST /openai/v1/responses", raw_responses, whole),
        Way("openai client, responses.create", responses, whole),
        Way(streamed, direct_streamed, streamed),
        Way("openai client, stream=True", client_streamed, streamed),
        Way("openai client, stream, interim_text", client_interim, streamed),
        Way("openai client, responses.stream", responses_streamed, streamed),
    ]


GUARDED = {
    "openai client": "openai_whole",
    "openai client, stream=True": "openai_streamed",
    "openai client, responses.create": "responses_whole",
    "openai client, responses.stream": "responses_streamed",
}
"""The rows ``bench.check`` holds to ``bench/bounds.toml`` (key ``gateway.<key>``)."""


async def overhead(agents: AgentClient, served: Gateway, rounds: int) -> list[dict[str, Any]]:
    """Section 1; the guarded rows' headlines (p50 in ms, beside ``AgentClient.send``)."""
    headers = {"Authorization": f"Bearer {served.key}"}
    async with httpx.AsyncClient(base_url=served.url, headers=headers, timeout=60) as http:
        ways = paths(agents, served, http)
        await take_turns(ways, rounds, lambda index: f"s{index}")
    by_name = table(f"1. Session round trip, {rounds} rounds (p50 of 30-word replies)", ways)
    rows = []
    for name, key in GUARDED.items():
        way = by_name[name]
        assert way.baseline is not None
        goal(name, way, by_name, GOAL)
        note = f"p50 of {rounds} session round trips; baseline: {way.baseline} in process"
        mine, base = p50(way.times), p50(by_name[way.baseline].times)
        rows.append(
            headline(f"gateway round trip, {name}", mine * 1000, base * 1000, "ms", note, key=key)
        )
    for way in ways:
        if way.first_text and way.baseline is not None and way.name != way.baseline:
            first, base = p50(way.first_text), p50(by_name[way.baseline].first_text)
            note = f"p50 of {rounds} streamed replies, send to first text; baseline: {way.baseline}"
            rows.append(
                headline(f"time to first text, {way.name}", first * 1000, base * 1000, "ms", note)
            )
    return rows


class GatedModel(ScriptedModel):
    """A scripted model whose turns wait for ``open`` (every subscriber connected)."""

    def __init__(self) -> None:
        super().__init__([reply(text(FANOUT_WORDS))] * 2, piece_delay=FANOUT_PACE)
        self.open = asyncio.Event()

    async def stream(self, request: ModelRequest, on_text: TextSink) -> ModelResponse:
        await self.open.wait()
        return await super().stream(request, on_text)


Arrivals = dict[int, float]
"""When each event (by offset) arrived at one subscriber."""


async def via_gateway(http: httpx.AsyncClient, key: str, workflow_id: str, seen: Arrivals) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    async with http.stream("GET", f"/v1/runs/{workflow_id}/events", headers=headers) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if line.startswith("id: "):
                seen[int(line[4:])] = time.perf_counter()


async def via_client(agents: AgentClient, workflow_id: str, seen: Arrivals) -> None:
    async for event in agents.events(workflow_id):
        seen[event.offset] = time.perf_counter()


async def fanout(client: Client, served: Gateway, task_queue: str, subscribers: int) -> str:
    """One run watched by ``subscribers`` gateway readers and one direct; a table row."""
    model = GatedModel()
    agents = AgentClient(client, task_queue=task_queue)
    # Readers as browsers are: each tab's key its own (one key holds 16 streams at most).
    keys = [served.key, *served.more_keys]
    limits = httpx.Limits(max_connections=subscribers)
    async with (
        agent_worker(client, StepBench, model=model, task_queue=task_queue),
        httpx.AsyncClient(base_url=served.url, timeout=60, limits=limits) as http,
    ):
        handle = await agents.start(StepBench, AgentInput(prompt=PROMPT, tenant=TENANT))
        direct: Arrivals = {}
        readers: list[Arrivals] = [{} for _ in range(subscribers)]
        tasks = [asyncio.ensure_future(via_client(agents, handle.id, direct))]
        tasks += [
            asyncio.ensure_future(via_gateway(http, keys[n % len(keys)], handle.id, r))
            for n, r in enumerate(readers)
        ]
        async with asyncio.timeout(STARTUP_TIMEOUT):
            while not all(readers) or not direct:  # each has had ``run_started``
                for task in tasks:
                    if task.done():
                        task.result()  # a reader failed: say why
                await asyncio.sleep(0.02)
        cpu, began = served.cpu_seconds(), time.perf_counter()
        model.open.set()
        await asyncio.gather(*tasks)
        cpu, wall = served.cpu_seconds() - cpu, time.perf_counter() - began
    added = [r[o] - at for r in readers for o, at in direct.items() if o in r and at > began]
    events = sum(1 for at in direct.values() if at > began)
    return (
        f"  {subscribers:11d} {events:6d} {ms(added)} {max(added) * 1000:7.1f}"
        f" {cpu:7.2f} {cpu / wall * 100:5.0f}% {cpu / (events * subscribers) * 1e6:10.0f}"
    )


async def main() -> None:
    def arguments(parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--subscribers", type=int, nargs="*", default=[1, 100], help="section 2's fan-outs"
        )

    async def then(client: Client, args: argparse.Namespace) -> None:
        if not args.subscribers:
            return
        print(
            f"\n2. SSE fan-out: one run, {FANOUT_WORDS} words at {FANOUT_PACE * 1000:.0f} ms "
            "a word; gateway CPU is its process's user+system time (/proc)"
        )
        print(
            f"  {'subscribers':>11} {'events':>6} {'added p50':>7} {'p95 ms':>7} {'max':>7}"
            f" {'CPU s':>7} {'CPU':>6} {'CPU µs/event/sub':>10}"
        )
        for count in args.subscribers:
            queue = new_task_queue("bench-fanout")
            async with gateway_process(client, queue, keys=-(-count // 16)) as fresh:
                print(await fanout(client, fresh, queue, count))

    await serve_and_measure("gateway", overhead, rounds=60, arguments=arguments, then=then)


if __name__ == "__main__":
    launch(main)
