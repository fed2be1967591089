"""Agents on ``google:`` models, on the dev server, through the real SDK and the fake API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from temporalio.client import Client

from smyth_temporal import AgentClient
from smyth_temporal.context import DEFAULT_SUMMARY_INSTRUCTIONS
from smyth_temporal.models import ProviderPrefixes, default_provider
from smyth_temporal.settings import ModelSettings
from smyth_temporal.testing import (
    FakeGoogleServer,
    GoogleTurn,
    agent_worker,
    google_error,
    google_turn,
)
from tests.helpers.google_agents import GeminiAnalyst, GeminiInSmallWindow, GeminiWithFallback
from tests.helpers.window_scripts import ShrinkingWindow
from tests.models.test_model_fallback import model_calls, replays

SYMBOLS = ["ACME", "GLOBEX", "INITECH"]


def provider_for(fake: FakeGoogleServer) -> ProviderPrefixes:
    """The worker's default provider, its Gemini endpoint the fake."""
    return default_provider(
        ModelSettings.load(
            google_api_key="gemini-test-key", google_base_url=fake.base_url, openai_api_key="sk"
        )
    )


def quotes(count: int) -> list[GoogleTurn]:
    return [
        google_turn(
            f"Looking up {SYMBOLS[i % 3]}.",
            [("get_quote", {"symbol": SYMBOLS[i % 3]})],
            thinking=f"Step {i}: I need the quote of {SYMBOLS[i % 3]}.",
        )
        for i in range(count)
    ]


async def test_a_gemini_agent_uses_tools_passes_signatures_back_and_reads_the_cache(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    async with FakeGoogleServer(min_cache_tokens=256) as fake:
        fake.enqueue(*quotes(6), google_turn("ACME is at 101.5 and GLOBEX at 42."))
        async with agent_worker(
            client, GeminiAnalyst, model=provider_for(fake), task_queue=task_queue
        ):
            result = await agents.run(GeminiAnalyst, "Quote ACME and GLOBEX, twice")
        requests = [r for r in fake.requests if ":generate" in r.path or ":stream" in r.path]
        reports = fake.reports

    assert (result.status, result.output) == ("completed", "ACME is at 101.5 and GLOBEX at 42.")
    assert {r.path.split("/")[-1].split(":")[0] for r in requests} == {"gemini-test"}
    # Every signed call went back with its signature (the fake refuses a missing one).
    last = requests[-1].json["contents"]
    signed = [p for c in last if c["role"] == "model" for p in c["parts"] if "functionCall" in p]
    assert len(signed) == 6 and all(p["thoughtSignature"] for p in signed)
    assert "101.5" in str(requests[1].json["contents"][2])
    # After the first turn most of each prompt came from Gemini's implicit cache.
    later = reports[1:]
    share = sum(r.cache_read_input_tokens for r in later) / sum(r.prompt_tokens for r in later)
    assert share >= 0.8, share
    assert result.usage.cached_tokens == sum(r.cache_read_input_tokens for r in reports)
    assert result.usage.input_tokens == sum(r.prompt_tokens for r in reports)


async def test_an_unavailable_gemini_model_moves_the_turn_to_the_fallback_model(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    async with FakeGoogleServer() as fake:
        fake.enqueue(
            google_error(503, "The model is overloaded. Please try again later."),
            google_error(503, "The model is overloaded. Please try again later."),
            google_turn("Markets are calm."),
        )
        async with agent_worker(
            client, GeminiWithFallback, model=provider_for(fake), task_queue=task_queue
        ):
            handle = await agents.start(GeminiWithFallback, "How are markets?")
            result = await agents.result(handle.id)
            calls = await model_calls(agents, handle.id)
            history = await client.get_workflow_handle(handle.id).fetch_history()
        sent = [r.path.split("/")[-1].split(":")[0] for r in fake.requests]

    assert (result.status, result.output) == ("completed", "Markets are calm.")
    assert sent == ["gemini-primary", "gemini-primary", "gemini-backup"]
    assert calls == [("google:gemini-primary", "failed"), ("google:gemini-backup", "completed")]
    await replays(GeminiWithFallback, history)


def is_summary(body: dict[str, Any]) -> bool:
    return DEFAULT_SUMMARY_INSTRUCTIONS[:40] in str(body.get("systemInstruction"))


async def test_a_gemini_prompt_over_the_context_window_compacts_and_the_run_completes(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    notes = "Noted for the report: the market was quiet and volumes were low. " * 6
    script = ShrinkingWindow(
        turn=google_turn,
        call=lambda n, symbol: ("get_quote", {"symbol": symbol}),
        is_summary=is_summary,
        notes=notes,
        answer="All quoted.",
    )
    fake = script.fake = FakeGoogleServer(respond=script)
    turns, summaries = script.turns, script.summaries
    async with fake:
        async with agent_worker(
            client, GeminiInSmallWindow, model=provider_for(fake), task_queue=task_queue
        ):
            handle = await agents.start(GeminiInSmallWindow, "Quote the three symbols twice")
            result = await agents.result(handle.id)
            state = await agents.state(handle.id)
            history = await client.get_workflow_handle(handle.id).fetch_history()
        asked = [r.json for r in fake.requests if not is_summary(r.json)]

    assert (result.status, result.output) == ("completed", "All quoted.")
    # Turn 7 was refused (400, input token count), compacted, then answered.
    assert (len(asked), len(turns), len(summaries)) == (8, 7, 1)
    assert asked[6] not in turns
    assert [c.fallback for c in state.compactions] == [False]
    assert "Quoted ACME, GLOBEX and INITECH" in str(turns[-1]["contents"])
    await replays(GeminiInSmallWindow, history)
