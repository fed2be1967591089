"""Prompt caching on a 50-turn Anthropic agent: cache-read share and cost, beside no caching.

From the repository root::

    .venv/bin/python -m bench.anthropic_cache [--turns 50]

One dev server, one worker in this process, ``testing.FakeAnthropicServer`` as the
Messages API (its cache follows the API's documented rule; tokens are chars/4). The
agent (``ClaudeAnalyst``, model ``anthropic:claude-test``, long instructions, one tool)
makes ``turns - 1`` tool calls (each with a signed thinking block) and then answers.
It runs twice: with ``AnthropicProvider``'s cache breakpoints, and with
``caching=False`` (the baseline: every prompt paid in full). Prints, for each run, the
input tokens, the cache-read share of input tokens after the first turn, and the cost
at Claude Sonnet's list prices (per million: input 3, cache read 0.30, cache write
3.75, output 15), and the cost with caching over the cost without.
"""

from __future__ import annotations

import argparse
import asyncio
import uuid

from smyth_temporal import AgentClient
from smyth_temporal._logging import configure_logging
from smyth_temporal.models import AnthropicProvider, ProviderPrefixes
from smyth_temporal.testing import (
    CacheReport,
    FakeAnthropicServer,
    agent_worker,
    anthropic_turn,
    start_dev_environment,
)
from smyth_temporal.types.budget import Price
from smyth_temporal.types.messages import Usage
from tests.helpers.anthropic_agents import ClaudeAnalyst

SONNET = Price(input=3.0, cached_input=0.30, cache_write=3.75, output=15.0)
SYMBOLS = ["ACME", "GLOBEX", "INITECH"]


async def run(turns: int, *, caching: bool) -> list[CacheReport]:
    """The fake's usage reports for one run of the agent."""
    async with FakeAnthropicServer() as fake:
        fake.enqueue(
            *(
                anthropic_turn(
                    f"Checking {SYMBOLS[i % 3]}.",
                    [(f"toolu_{i}", "get_quote", {"symbol": SYMBOLS[i % 3]})],
                    thinking=f"Turn {i}: the next quote I need is {SYMBOLS[i % 3]}.",
                )
                for i in range(turns - 1)
            ),
            anthropic_turn("All quotes checked."),
        )
        provider = AnthropicProvider(base_url=fake.base_url, api_key="bench", caching=caching)
        routes = ProviderPrefixes(provider, {"anthropic": provider})
        env = await start_dev_environment()
        async with env:
            task_queue = f"bench-cache-{uuid.uuid4().hex[:6]}"
            agents = AgentClient(env.client, task_queue=task_queue)
            async with agent_worker(env.client, ClaudeAnalyst, model=routes, task_queue=task_queue):
                result = await agents.run(ClaudeAnalyst, "Check the quotes, one per turn.")
        if result.status != "completed":
            raise SystemExit(f"the agent ended {result.status}: {result.output}")
        return fake.reports


def summary(reports: list[CacheReport]) -> tuple[int, float, float]:
    """Input tokens, cache-read share after the first turn, cost at Sonnet's prices."""
    later = reports[1:]
    share = sum(r.cache_read_input_tokens for r in later) / sum(r.prompt_tokens for r in later)
    cost = sum(
        SONNET.cost(
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


async def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", type=int, default=50)
    args = parser.parse_args()
    configure_logging("warning")
    cached = summary(await run(args.turns, caching=True))
    plain = summary(await run(args.turns, caching=False))
    for name, (tokens, share, cost) in [("caching", cached), ("no caching", plain)]:
        print(
            f"{name:>10}: {tokens} input tokens, cache-read share after turn 1 {share:.3f}, "
            f"cost ${cost:.4f}"
        )
    print(f"cost with caching / without: {cached[2] / plain[2]:.3f}x")


if __name__ == "__main__":
    asyncio.run(main())
