"""Context caching on a 50-turn Gemini agent: cache-read share and cost, beside no caching.

From the repository root::

    .venv/bin/python -m bench.google_cache [--turns 50]

One dev server per run, one worker in this process, ``testing.FakeGoogleServer`` as the
Gemini API (implicit caching: the longest prefix an earlier request sent, from 1,024
tokens; tokens are chars/4). Each agent (model ``google:gemini-test``, long
instructions, one tool) makes ``turns - 1`` function calls (each signed, as a thinking
model signs them) and then answers:

- ``GeminiAnalyst``: one run, no compaction, implicit caching.
- ``GeminiLongRunner``: compacts beyond 2,400 prompt tokens and continues as new every
  25 turns (summary calls are answered, and counted); implicit caching, then with
  ``GoogleProvider(context_cache=True)`` (an explicit cache of the instructions, the
  tool and the conversation up to the latest summary).

Each also runs against a fake that never caches (the baseline: every prompt paid in
full). Prints, for each run, the input tokens, the cache-read share of input tokens
after the first call, and the cost at Gemini 2.5 Pro's list prices (per million, up
to 200k-token prompts: input 1.25, cached input 0.125, output 10; explicit caches'
storage, 4.50 per million tokens per hour, is not counted), and the cost with caching
over the cost without. Then the provider's overhead: the median of one call through
``GoogleProvider`` beside the bare SDK sending the same parameters, alternating,
against the fake.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from google import genai

from bench.anthropic_cache import OVERHEAD_REQUEST, Script, alternating, print_runs, run_agent
from smyth_temporal import AgentWorkflow, configure_logging
from smyth_temporal.models import GoogleProvider, ProviderPrefixes
from smyth_temporal.testing import CacheReport, FakeGoogleServer, GoogleTurn, google_turn
from smyth_temporal.types.budget import Price
from tests.helpers.google_agents import GeminiAnalyst, GeminiLongRunner

GEMINI_PRO = Price(input=1.25, cached_input=0.125, output=10.0)
NEVER = 10**12  # a cache minimum no prompt reaches: the baseline without caching


class GeminiScript(Script[GoogleTurn]):
    """``Script`` in Gemini's turns; a summary call has no tools and reads no cache."""

    def __init__(self, turns: int) -> None:
        super().__init__(
            turns,
            google_turn,
            lambda body: not body.get("tools") and not body.get("cachedContent"),
        )

    def call(self, i: int, symbol: str) -> Any:
        return ("get_quote", {"symbol": symbol})


async def run(
    turns: int, *, agent: type[AgentWorkflow], explicit: bool = False, minimum: int = 1024
) -> tuple[list[CacheReport], int, int]:
    """The fake's usage reports for one run of ``agent``, its summary calls and runs."""
    script = GeminiScript(turns)
    async with FakeGoogleServer(respond=script, min_cache_tokens=minimum) as fake:
        provider = GoogleProvider(base_url=fake.base_url, api_key="bench", context_cache=explicit)
        runs = await run_agent(agent, ProviderPrefixes(provider, {"google": provider}))
        return fake.reports, script.summaries, runs


async def overhead(rounds: int) -> tuple[float, float]:
    """Median seconds of one call through ``GoogleProvider`` and through the bare SDK.

    The Anthropic bench's request (a 20-message conversation with a tool), alternating,
    against the fake; the bare SDK call gets the parameters the provider would send,
    its retries off as the provider's are.
    """
    turn = google_turn("ACME is at 101.5.")
    async with FakeGoogleServer(respond=lambda _: turn) as fake:
        provider = GoogleProvider(base_url=fake.base_url, api_key="bench")
        client = genai.Client(
            api_key="bench",
            http_options={"base_url": fake.base_url, "retry_options": {"attempts": 1}},
        )
        request = OVERHEAD_REQUEST.model_copy(update={"model": "gemini-test"})
        params = provider.params(request)
        return await alternating(
            lambda: provider.complete(request),
            lambda: client.aio.models.generate_content(**params),
            rounds,
        )


async def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--overhead-rounds", type=int, default=300)
    args = parser.parse_args()
    configure_logging("warning")
    plain = {}
    for agent in (GeminiAnalyst, GeminiLongRunner):
        plain[agent] = (await run(args.turns, agent=agent, minimum=NEVER))[0]
        cached, summaries, runs = await run(args.turns, agent=agent)
        print_runs(f"{agent.__name__}, implicit", cached, plain[agent], summaries, runs, GEMINI_PRO)
    cached, summaries, runs = await run(args.turns, agent=GeminiLongRunner, explicit=True)
    name = "GeminiLongRunner, explicit"
    print_runs(name, cached, plain[GeminiLongRunner], summaries, runs, GEMINI_PRO)
    ours, bare = await overhead(args.overhead_rounds)
    print(
        f"per call, median of {args.overhead_rounds}: GoogleProvider {ours * 1000:.2f} ms, "
        f"bare SDK {bare * 1000:.2f} ms, {ours / bare:.3f}x"
    )


if __name__ == "__main__":
    asyncio.run(main())
