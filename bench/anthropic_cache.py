"""Prompt caching on a 50-turn Anthropic agent: cache-read share and cost, beside no caching.

From the repository root::

    .venv/bin/python -m bench.anthropic_cache [--turns 50]

One dev server per run, one worker in this process, ``testing.FakeAnthropicServer`` as
the Messages API (its cache follows the API's documented rule; tokens are chars/4).
Each agent (model ``anthropic:claude-test``, long instructions, one tool) makes
``turns - 1`` tool calls (each with a signed thinking block) and then answers:

- ``ClaudeAnalyst``: one run, no compaction.
- ``ClaudeLongRunner``: compacts beyond 2,400 prompt tokens (the agent's own estimate)
  and continues as new every 25 turns (summary calls are answered, and counted).

Each runs twice: with ``AnthropicProvider``'s cache breakpoints, and with
``caching=False`` (the baseline: every prompt paid in full). Prints, for each run, the
input tokens, the cache-read share of input tokens after the first call, and the cost
at Claude Sonnet's list prices (per million: input 3, cache read 0.30, cache write
3.75, output 15), and the cost with caching over the cost without. Then the
provider's overhead: the median of one call through ``AnthropicProvider`` beside the
bare SDK sending the same parameters, alternating, against the fake.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

import anthropic

from smyth_temporal import AgentClient, AgentWorkflow, configure_logging
from smyth_temporal.models import AnthropicProvider, ProviderPrefixes
from smyth_temporal.testing import (
    CacheReport,
    FakeAnthropicServer,
    agent_worker,
    anthropic_turn,
    start_dev_environment,
)
from smyth_temporal.types.budget import Price
from smyth_temporal.types.messages import Message, Usage
from smyth_temporal.types.model import ModelRequest
from tests.helpers.anthropic_agents import ClaudeAnalyst, ClaudeLongRunner

Turn = TypeVar("Turn")

SONNET = Price(input=3.0, cached_input=0.30, cache_write=3.75, output=15.0)
SYMBOLS = ["ACME", "GLOBEX", "INITECH"]


class Script(Generic[Turn]):
    """Answers the agent's turns in order, and any summary call (it has no tools).

    The turns are the provider's own (``turn`` writes one: text, calls, thinking);
    ``is_summary`` tells a summary call's body from the agent's.
    """

    def __init__(
        self,
        turns: int,
        turn: Callable[..., Turn],
        is_summary: Callable[[dict[str, Any]], bool] = lambda body: not body.get("tools"),
    ) -> None:
        self.turns = turns
        self.played = 0
        self.summaries = 0
        self._turn = turn
        self._is_summary = is_summary

    def __call__(self, body: dict[str, Any]) -> Turn:
        if self._is_summary(body):
            self.summaries += 1
            return self._turn(f"Summary {self.summaries}: the quotes so far were fine.")
        i, self.played = self.played, self.played + 1
        if i >= self.turns - 1:
            return self._turn("All quotes checked.")
        symbol = SYMBOLS[i % 3]
        return self._turn(
            f"Checking {symbol}.",
            [self.call(i, symbol)],
            thinking=f"Turn {i}: the next quote I need is {symbol}.",
        )

    def call(self, i: int, symbol: str) -> Any:
        """Turn ``i``'s call of get_quote, as the provider's ``turn`` takes it."""
        return (f"toolu_{i}", "get_quote", {"symbol": symbol})


async def run(
    turns: int, *, caching: bool, agent: type[AgentWorkflow]
) -> tuple[list[CacheReport], int, int]:
    """The fake's usage reports for one run of ``agent``, its summary calls and runs."""
    script = Script(turns, anthropic_turn)
    async with FakeAnthropicServer(respond=script) as fake:
        provider = AnthropicProvider(base_url=fake.base_url, api_key="bench", caching=caching)
        runs = await run_agent(agent, ProviderPrefixes(provider, {"anthropic": provider}))
        return fake.reports, script.summaries, runs


async def run_agent(agent: type[AgentWorkflow], model: ProviderPrefixes) -> int:
    """Run ``agent`` to its end on a dev server of its own; the number of its runs."""
    env = await start_dev_environment()
    async with env:
        task_queue = f"bench-cache-{uuid.uuid4().hex[:6]}"
        agents = AgentClient(env.client, task_queue=task_queue)
        async with agent_worker(env.client, agent, model=model, task_queue=task_queue):
            run_id = f"bench-cache-{uuid.uuid4().hex[:8]}"
            result = await agents.run(agent, "Check the quotes, one per turn.", id=run_id)
            count = await env.client.count_workflows(f"WorkflowId = '{run_id}'")
    if result.status != "completed":
        raise SystemExit(f"the agent ended {result.status}: {result.output}")
    return count.count


def summary(reports: list[CacheReport], price: Price = SONNET) -> tuple[int, float, float]:
    """Input tokens, cache-read share after the first call, cost at ``price``."""
    later = reports[1:]
    share = sum(r.cache_read_input_tokens for r in later) / sum(r.prompt_tokens for r in later)
    cost = sum(
        price.cost(
            Usage(
                input_tokens=r.prompt_tokens,
                cached_tokens=r.cache_read_input_tokens,
                cache_write_tokens=r.cache_creation_input_tokens,
                output_tokens=r.output_tokens,
            )
        )
        for r in reports
    )
    return sum(r.prompt_tokens for r in reports), share, cost


OVERHEAD_REQUEST = ModelRequest(
    model="claude-test",
    messages=[
        Message.system("You analyse markets. " * 40),
        *(Message.user(f"Question {i}: how is ACME?") for i in range(20)),
    ],
    tools=[{"type": "function", "function": {"name": "get_quote", "parameters": {}}}],
)
"""The request the overhead is measured with: a 20-message conversation with a tool."""


async def overhead(rounds: int) -> tuple[float, float]:
    """Median seconds of one call through ``AnthropicProvider`` and through the bare SDK.

    The same request each time, alternating, against the fake; the bare SDK call gets
    the parameters the provider would send.
    """
    turn = anthropic_turn("ACME is at 101.5.")
    async with FakeAnthropicServer(respond=lambda _: turn) as fake:
        provider = AnthropicProvider(base_url=fake.base_url, api_key="bench")
        client = anthropic.AsyncAnthropic(base_url=fake.base_url, api_key="bench", max_retries=0)
        params = provider.params(OVERHEAD_REQUEST)
        return await alternating(
            lambda: provider.complete(OVERHEAD_REQUEST),
            lambda: client.messages.create(**params),
            rounds,
        )


async def alternating(
    ours: Callable[[], Awaitable[object]], bare: Callable[[], Awaitable[object]], rounds: int
) -> tuple[float, float]:
    """Median seconds of ``ours`` and of ``bare``, called one after the other ``rounds`` times.

    Which goes first changes every round, so neither always pays for the other's garbage.
    """
    times: tuple[list[float], list[float]] = ([], [])
    pairs = [(ours, times[0]), (bare, times[1])]
    for round_ in range(rounds):
        for call, spent in pairs if round_ % 2 == 0 else pairs[::-1]:
            started = time.perf_counter()
            await call()
            spent.append(time.perf_counter() - started)
    return statistics.median(times[0]), statistics.median(times[1])


def print_runs(
    name: str,
    cached: list[CacheReport],
    plain: list[CacheReport],
    summaries: int,
    runs: int,
    price: Price = SONNET,
) -> None:
    """One agent's runs with and without caching: tokens, cache-read share, cost."""
    print(f"{name} ({len(cached)} calls, {summaries} summary calls, {runs} workflow runs):")
    with_cache, without = summary(cached, price), summary(plain, price)
    for label, (tokens, share, cost) in [("caching", with_cache), ("no caching", without)]:
        print(
            f"  {label:>10}: {tokens} input tokens, cache-read share after the first call "
            f"{share:.3f}, cost ${cost:.4f}"
        )
    print(f"  cost with caching / without: {with_cache[2] / without[2]:.3f}x")


async def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--overhead-rounds", type=int, default=300)
    args = parser.parse_args()
    configure_logging("warning")
    for agent in (ClaudeAnalyst, ClaudeLongRunner):
        cached_reports, summaries, runs = await run(args.turns, caching=True, agent=agent)
        plain_reports, _, _ = await run(args.turns, caching=False, agent=agent)
        print_runs(agent.__name__, cached_reports, plain_reports, summaries, runs)
    ours, bare = await overhead(args.overhead_rounds)
    print(
        f"per call, median of {args.overhead_rounds}: AnthropicProvider {ours * 1000:.2f} ms, "
        f"bare SDK {bare * 1000:.2f} ms, {ours / bare:.3f}x"
    )


if __name__ == "__main__":
    asyncio.run(main())
