"""What streaming costs: time to first token, delta throughput and lag, history bytes.

From the repository root::

    .venv/bin/python -m bench.streaming [--runs 10] [--first-token-delay 0.5]

Two agents run side by side on one dev server and one worker: ``Streamed``
(``AgentConfig(stream=True)``, the default) and ``Quiet`` (``stream=False``, the
baseline). The subscriber is ``AgentClient.events`` in the same process.

1. Time to first token. The model is ``OpenAIProvider`` (the real openai client)
   against ``FakeOpenAIServer``, which waits ``--first-token-delay`` before the first
   piece of text. Baseline: the same provider called in-process, from the call to its
   first ``on_text``. Ours: from the model activity's call to the subscriber receiving
   the first ``text_delta``. Added by the SDK: from the first ``on_text`` in the
   activity to that ``text_delta`` (per run; the goal is 100 ms or less). Also shown:
   from the subscriber seeing ``turn_started`` to the first ``text_delta``, less the
   baseline's p50. One untimed warm-up, then ``--runs`` runs, interleaved with the
   baseline calls.
2. Throughput and lag. A ``ScriptedModel`` writes one long reply a word at a time, at
   a model's pace (20 ms a word) and as fast as it can (1 ms a word). Printed: words
   handed to ``on_text`` per second, ``text_delta`` events received per second, and
   each word's lag, from its hand-over to the arrival of the delta that carries it.
3. History bytes. The same scripted conversation (three turns of text and a tool call,
   then an answer; 40 words a turn at 20 ms a word) with ``Streamed`` and ``Quiet``,
   each with no subscriber and with one. ``Quiet``'s model takes as long to answer
   (a real model writes at its pace whether it streams or not). History bytes are the sum of
   ``HistoryEvent.ByteSize()`` over the run's events, split into signals (delta
   batches), updates (subscriber polls), workflow tasks and the rest; the ratio is to
   ``Quiet`` without a subscriber (the goal is 1.2x or less).
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import contextlib
import itertools
import os
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.worker import Worker

from bench._common import echo, percentile
from smyth_temporal import AgentConfig, AgentInput, AgentResult, AgentWorkflow, configure_logging

# Workflows are defined below, so the sandbox re-imports this module: its worker-side
# imports are passed through as is.
with workflow.unsafe.imports_passed_through():
    from bench._plain_worker import PlainStreamed
    from bench._results import headline, write_json
    from smyth_temporal import AgentClient
    from smyth_temporal.models import (
        ModelProvider,
        ModelRequest,
        ModelResponse,
        OpenAIProvider,
        StreamingModelProvider,
        TextSink,
    )
    from smyth_temporal.testing import (
        FakeOpenAIServer,
        FakeResponse,
        ScriptedModel,
        ScriptStep,
        agent_worker,
        chat_completion,
        new_task_queue,
        reply,
        start_dev_environment,
        tool_call,
    )
    from smyth_temporal.types import AgentEvent, Message, TextDelta, TurnStarted

TTFT_GOAL = 0.100
"""Seconds the SDK may add to the provider's first token (issue 11)."""
HISTORY_GOAL = 1.2
"""History of a streamed turn over a non-streamed one (issue 11)."""

PACES = ((0.020, 200), (0.001, 3000))
"""Section 2: seconds between two words, and words in the reply."""
TURNS = 4
WORDS_PER_TURN = 40
TURN_PACE = 0.020
"""Section 3: model turns of the conversation, words in each, seconds between two words."""

_WORDS = ("market", "order", "quote", "volume", "price", "index", "trend", "yield", "bond")


def text(words: int, seed: int = 0) -> str:
    """``words`` words of text, a sentence at a time."""
    chosen = (_WORDS[(seed + i * 7) % len(_WORDS)] for i in range(words))
    return " ".join(w + ("." if i % 12 == 11 else "") for i, w in enumerate(chosen))


@workflow.defn
class Streamed(AgentWorkflow):
    """Streams the model's text (the default)."""

    config = AgentConfig(model="bench-model", tools=[echo], max_steps=TURNS + 2)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class Quiet(AgentWorkflow):
    """The same agent with streaming off: the baseline."""

    config = AgentConfig(model="bench-model", tools=[echo], max_steps=TURNS + 2, stream=False)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@dataclass
class Call:
    started: float
    pieces: list[tuple[float, int]] = field(default_factory=list)
    """When each piece of text was handed to ``on_text``, and its length."""


class Stopwatch:
    """A streaming provider that notes when each call starts and each piece goes out."""

    def __init__(self, provider: StreamingModelProvider) -> None:
        self.provider = provider
        self.calls: list[Call] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return await self.provider.complete(request)

    async def stream(self, request: ModelRequest, on_text: TextSink) -> ModelResponse:
        call = Call(time.perf_counter())
        self.calls.append(call)

        def timed(piece: str) -> None:
            call.pieces.append((time.perf_counter(), len(piece)))
            on_text(piece)

        return await self.provider.stream(request, timed)


class PacedModel(ScriptedModel):
    """A scripted model that takes as long to answer unstreamed as streamed, as a real one."""

    async def complete(self, request: ModelRequest) -> ModelResponse:
        response = await super().complete(request)
        if request.stream_id is None:  # not ``stream``, which paces the words itself
            words = len((response.message.content or "").split())
            await asyncio.sleep(self.piece_delay * max(words - 1, 0))
        return response


@contextlib.asynccontextmanager
async def agents_with(client: Client, model: ModelProvider) -> AsyncIterator[AgentClient]:
    """An ``AgentClient`` and a worker serving both agents with ``model``."""
    task_queue = new_task_queue("bench-stream")
    async with agent_worker(client, Streamed, Quiet, model=model, task_queue=task_queue):
        yield AgentClient(client, task_queue=task_queue)


async def run_agent(
    agents: AgentClient, agent: type[AgentWorkflow], *, watch: bool
) -> tuple[str, list[tuple[float, AgentEvent]]]:
    """Run ``agent`` to the end; its workflow id and, if watched, each event as received."""
    handle = await agents.start(agent, "Report on the market.")
    events = [(time.perf_counter(), e) async for e in agents.events(handle.id)] if watch else []
    result = await agents.result(handle.id)
    assert result.status == "completed", result
    return handle.id, events


def first(events: Sequence[tuple[float, AgentEvent]], kind: type[object]) -> float:
    """When the first event of ``kind`` was received."""
    return next(at for at, event in events if isinstance(event, kind))


def verdict(met: bool) -> str:
    return "met" if met else "NOT met"


def ms(values: Sequence[float]) -> str:
    """p50 and p95 of durations in seconds, as milliseconds."""
    return f"{percentile(values, 0.5) * 1000:7.1f} {percentile(values, 0.95) * 1000:7.1f}"


async def first_token(client: Client, runs: int, delay: float) -> list[dict[str, Any]]:
    """Section 1; its guarded headline (ours beside the hand-written stream)."""
    from bench._plain_streaming import first_piece, stream_model

    answer = text(30)
    request = ModelRequest(model="bench-model", messages=[Message.user("Report on the market.")])
    baseline: list[float] = []
    ours: list[float] = []
    added: list[float] = []
    after_turn: list[float] = []
    by_hand: list[float] = []
    plain_client = Client(client.service_client, namespace=client.namespace)
    plain_queue, plain_calls = new_task_queue("bench-stream-plain"), list[float]()
    async with FakeOpenAIServer() as fake:
        model = Stopwatch(OpenAIProvider(base_url=fake.base_url, api_key="bench"))
        plain_worker = Worker(
            plain_client,
            task_queue=plain_queue,
            workflows=[PlainStreamed],
            activities=[stream_model(fake.base_url, plain_calls)],
        )
        async with agents_with(client, model) as agents, plain_worker:
            for number in range(runs + 1):
                for _ in range(3):  # the provider alone, the agent, the stream by hand
                    fake.enqueue(
                        FakeResponse(body=chat_completion(answer), first_token_delay=delay)
                    )
                await model.stream(request, lambda _: None)
                alone = model.calls[-1]
                _, events = await run_agent(agents, Streamed, watch=True)
                call, seen = model.calls[-1], first(events, TextDelta)
                hand = await first_piece(plain_client, plain_queue, plain_calls)
                if number == 0:
                    continue  # connections, sandbox imports: not what a running agent pays
                baseline.append(alone.pieces[0][0] - alone.started)
                ours.append(seen - call.started)
                added.append(seen - call.pieces[0][0])
                after_turn.append(seen - first(events, TurnStarted))
                by_hand.append(hand)
    provider_p50 = percentile(baseline, 0.5)
    after_turn = [each - provider_p50 for each in after_turn]
    print(
        f"\n1. Time to first token: OpenAIProvider, fake server with a {delay * 1000:.0f} ms "
        f"first token, {runs} runs"
    )
    print(f"  {'':58} {'p50 ms':>7} {'p95 ms':>7}")
    print(f"  {'baseline: the provider alone, call to first on_text':58} {ms(baseline)}")
    print(
        f"  {'ours: model activity call to first text_delta received':58} {ms(ours)}"
        f"   ours/baseline p50 {percentile(ours, 0.5) / provider_p50:.2f}x"
    )
    print(
        f"  {'by hand: temporalio + workflow_streams, call to first text':58} {ms(by_hand)}"
        f"   ours/by hand p50 {percentile(ours, 0.5) / percentile(by_hand, 0.5):.2f}x"
    )
    print(f"  {'added by the SDK: first on_text to first text_delta':58} {ms(added)}")
    print(f"  {'turn_started seen to first text_delta, less baseline p50':58} {ms(after_turn)}")
    print(
        f"  goal: at most {TTFT_GOAL * 1000:.0f} ms added: "
        f"p50 {verdict(percentile(added, 0.5) <= TTFT_GOAL)}, "
        f"p95 {verdict(percentile(added, 0.95) <= TTFT_GOAL)}"
    )
    note = (
        f"p50 of {runs}; fake OpenAI server, {delay * 1000:.0f} ms first token; baseline: "
        "an activity streaming to a workflow_streams stream by hand"
    )
    p50, hand_p50 = percentile(ours, 0.5) * 1000, percentile(by_hand, 0.5) * 1000
    return [headline("time to first token, streamed", p50, hand_p50, "ms", note, key="first_token")]


def lags(call: Call, deltas: Sequence[tuple[float, TextDelta]]) -> list[float]:
    """Seconds from each piece's hand-over to the arrival of the delta that ends it."""
    arrivals = [at for at, _ in deltas]
    ends = list(itertools.accumulate(len(delta.text) for _, delta in deltas))
    handed = list(itertools.accumulate(length for _, length in call.pieces))
    assert ends[-1] == handed[-1], "the deltas do not add up to the text"
    return [
        arrivals[bisect.bisect_left(ends, end)] - at
        for (at, _), end in zip(call.pieces, handed, strict=True)
    ]


def per_second(times: Sequence[float]) -> float:
    return (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 else 0.0


async def throughput(client: Client) -> None:
    print("\n2. Streamed text: one reply, ScriptedModel writing a word at a time")
    print(
        f"  {'pace':>10} {'words':>6} {'words/s':>8} {'deltas':>7} {'deltas/s':>8}"
        f" {'words/delta':>11}  {'lag p50 ms':>10} {'p95':>7} {'max':>7}"
    )
    for pace, words in PACES:
        model = Stopwatch(ScriptedModel([reply(text(words))], piece_delay=pace))
        async with agents_with(client, model) as agents:
            _, events = await run_agent(agents, Streamed, watch=True)
        call = model.calls[-1]
        deltas = [(at, e) for at, e in events if isinstance(e, TextDelta)]
        waits = lags(call, deltas)
        print(
            f"  {pace * 1000:7.0f} ms {words:6d} {per_second([t for t, _ in call.pieces]):8.0f}"
            f" {len(deltas):7d} {per_second([t for t, _ in deltas]):8.1f}"
            f" {words / len(deltas):11.1f}  {ms(waits)} {max(waits) * 1000:7.1f}"
        )


HISTORY_KINDS = {"signals": "SIGNALED", "updates": "UPDATE", "workflow tasks": "WORKFLOW_TASK"}
"""History events by kind: a marker in their ``EventType`` name (the rest are "other")."""


async def history(client: Client, workflow_id: str) -> tuple[Counter[str], Counter[str]]:
    """Bytes and events of the run's history, by kind (see ``HISTORY_KINDS``) and "total"."""
    size: Counter[str] = Counter()
    count: Counter[str] = Counter()
    async for event in client.get_workflow_handle(workflow_id).fetch_history_events():
        name = EventType.Name(event.event_type)
        kind = next((k for k, marker in HISTORY_KINDS.items() if marker in name), "other")
        for key in (kind, "total"):
            size[key] += event.ByteSize()
            count[key] += 1
    return size, count


def conversation() -> list[ScriptStep]:
    """``TURNS`` turns of ``WORDS_PER_TURN`` words, each but the last with a tool call."""
    steps: list[ScriptStep] = [
        [reply(text(WORDS_PER_TURN, turn)), tool_call("echo", text=f"note {turn}")]
        for turn in range(1, TURNS)
    ]
    return [*steps, reply(text(WORDS_PER_TURN, TURNS))]


async def history_per_turn(client: Client) -> None:
    print(
        f"\n3. History bytes: {TURNS} turns of {WORDS_PER_TURN} words at "
        f"{TURN_PACE * 1000:.0f} ms a word ({TURNS - 1} with a tool call), one run each"
    )
    kinds = [*HISTORY_KINDS, "other"]
    print(
        f"  {'agent, subscriber':24} {'events':>6} {'bytes':>7} {'B/turn':>7} {'ratio':>6}  "
        + "  ".join(f"{k + ' n/B':>20}" for k in kinds)
    )
    model = PacedModel(conversation(), piece_delay=TURN_PACE)
    per_turn: dict[tuple[str, bool], float] = {}
    async with agents_with(client, model) as agents:
        for agent, watch in itertools.product((Quiet, Streamed), (False, True)):
            workflow_id, _ = await run_agent(agents, agent, watch=watch)
            size, count = await history(client, workflow_id)
            per_turn[agent.__name__, watch] = size["total"] / TURNS
            ratio = per_turn[agent.__name__, watch] / per_turn["Quiet", False]
            label = f"{agent.__name__}, {'one' if watch else 'none'}"
            print(
                f"  {label:24} {count['total']:6d} {size['total']:7d}"
                f" {per_turn[agent.__name__, watch]:7.0f} {ratio:5.2f}x  "
                + "  ".join(f"{f'{count[k]} / {size[k]}':>20}" for k in kinds)
            )
    for watch in (False, True):
        streamed, quiet = per_turn["Streamed", watch], per_turn["Quiet", watch]
        print(
            f"  streamed / not streamed, {'one subscriber' if watch else 'no subscriber'}: "
            f"{streamed / quiet:.2f}x, {streamed - quiet:+.0f} B a turn "
            f"(goal at most {HISTORY_GOAL}x: {verdict(streamed / quiet <= HISTORY_GOAL)})"
        )


async def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.streaming")
    parser.add_argument("--runs", type=int, default=10, help="timed runs of section 1")
    parser.add_argument(
        "--first-token-delay", type=float, default=0.5, help="the fake model's seconds to text"
    )
    parser.add_argument("--json", type=Path, help="write section 1's results here (bench.report)")
    parser.add_argument(
        "--only-first-token", action="store_true", help="section 1 only (what make bench runs)"
    )
    args = parser.parse_args()
    configure_logging("WARNING")
    env = await start_dev_environment()
    try:
        rows = await first_token(env.client, args.runs, args.first_token_delay)
        if args.json:
            write_json(args.json, "streaming", rows, {})
        if args.only_first_token:
            return
        await throughput(env.client)
        await history_per_turn(env.client)
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
    # temporalio's Rust threads can outlive the interpreter and abort its teardown
    # ("PyGILState_Release ... finalizing", temporalio/sdk-python#300); everything is
    # written and flushed by now, so skip the teardown.
    sys.stdout.flush()
    os._exit(0)
