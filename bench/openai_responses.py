"""The Responses provider: its overhead per call beside the bare SDK, and its cache reads.

From the repository root::

    .venv/bin/python -m bench.openai_responses [--rounds 300] [--turns 50]

Against ``testing.FakeOpenAIServer``'s Responses API, no Temporal:

- **Overhead**: the median of one call through ``OpenAIResponsesProvider`` beside the
  bare ``openai`` client sending the parameters the provider would send (each goes
  first every other round), for a 20-message conversation with a tool, unstreamed and
  streamed (the bare stream reads every event).
- **Cache reads**: a ``--turns`` conversation (a reasoning item and a tool call each
  turn, sent back as the agent would) with long instructions; the share of input tokens
  after the first call that the fake's cache served (prefixes cached from 1,024 tokens
  in steps of 128, as OpenAI documents; tokens are chars/4).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import openai

from smyth_temporal import configure_logging
from smyth_temporal.models import OpenAIResponsesProvider
from smyth_temporal.testing import FakeOpenAIServer, responses_answer
from smyth_temporal.types.messages import Message, Usage
from smyth_temporal.types.model import ModelRequest

TOOL = {
    "type": "function",
    "function": {
        "name": "get_quote",
        "parameters": {"type": "object", "properties": {"symbol": {"type": "string"}}},
    },
}


async def timed(call: Callable[[], Awaitable[Any]]) -> float:
    started = time.perf_counter()
    await call()
    return time.perf_counter() - started


async def overhead(rounds: int, *, stream: bool) -> tuple[float, float]:
    """Median seconds of one call through the provider and through the bare client."""
    async with FakeOpenAIServer() as fake:
        provider = OpenAIResponsesProvider(base_url=fake.base_url, api_key="bench")
        client = openai.AsyncOpenAI(base_url=fake.base_url, api_key="bench", max_retries=0)
        request = ModelRequest(
            model="gpt-5-bench",
            messages=[
                Message.system("You analyse markets. " * 40),
                *(Message.user(f"Question {i}: how is ACME?") for i in range(20)),
            ],
            tools=[TOOL],
        )
        wire = provider.params(request)

        async def ours() -> None:
            if stream:
                await provider.stream(request, lambda _: None)
            else:
                await provider.complete(request)

        async def bare() -> None:
            if stream:
                events = await client.responses.create(**wire, stream=True)
                async with events:
                    async for _ in events:
                        pass
            else:
                await client.responses.create(**wire)

        answer = responses_answer("ACME is at 101.5 and the volume is ordinary today.")
        mine: list[float] = []
        theirs: list[float] = []
        for index in range(rounds):
            fake.enqueue(answer, answer)
            # Each goes first every other round: the first of a pair waits on the server.
            if index % 2:
                theirs.append(await timed(bare))
                mine.append(await timed(ours))
            else:
                mine.append(await timed(ours))
                theirs.append(await timed(bare))
        return statistics.median(mine), statistics.median(theirs)


async def cache_share(turns: int) -> tuple[int, float]:
    """Input tokens of a ``turns``-call conversation, and the cache-read share after call 1."""
    async with FakeOpenAIServer() as fake:
        provider = OpenAIResponsesProvider(base_url=fake.base_url, api_key="bench")
        messages = [
            Message.system("You are a careful market analyst; quote before answering. " * 80),
            Message.user("Quote ACME, again and again."),
        ]
        usages: list[Usage] = []
        for step in range(turns):
            last = step == turns - 1
            fake.enqueue(
                responses_answer("Done.")
                if last
                else responses_answer(
                    function_calls=[(f"call_{step}", "get_quote", {"symbol": "ACME"})],
                    reasoning=f"Step {step}: the quote may have moved.",
                )
            )
            request = ModelRequest(model="gpt-5-bench", messages=messages, tools=[TOOL], step=step)
            response = await provider.complete(request)
            usages.append(response.usage)
            messages.append(response.message)
            messages.extend(Message.tool_result(c, "101.5") for c in response.message.tool_calls)
        later = sum(usages[1:], Usage())
        return sum(u.input_tokens for u in usages), later.cache_read_share


async def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--turns", type=int, default=50)
    args = parser.parse_args()
    configure_logging("warning")
    for stream in (False, True):
        ours, bare = await overhead(args.rounds, stream=stream)
        print(
            f"{'streamed' if stream else 'complete'} call, median of {args.rounds}: "
            f"OpenAIResponsesProvider {ours * 1000:.2f} ms, bare SDK {bare * 1000:.2f} ms, "
            f"{ours / bare:.3f}x"
        )
    tokens, share = await cache_share(args.turns)
    print(
        f"{args.turns} calls: {tokens} input tokens, cache-read share after the first {share:.3f}"
    )


if __name__ == "__main__":
    asyncio.run(main())
