"""Agents on ``anthropic:`` models, on the dev server, through the real SDK and the fake API."""

from __future__ import annotations

from pathlib import Path

from temporalio.client import Client

from smyth_temporal import AgentClient
from smyth_temporal.models import default_provider
from smyth_temporal.settings import ModelSettings
from smyth_temporal.testing import (
    AnthropicTurn,
    FakeAnthropicServer,
    agent_worker,
    anthropic_error,
    anthropic_turn,
)
from tests.helpers.anthropic_agents import ClaudeAnalyst


def provider_for(fake: FakeAnthropicServer) -> object:
    """The worker's default provider, its Anthropic endpoint the fake."""
    return default_provider(
        ModelSettings.load(
            anthropic_api_key="sk-ant-test-key",
            anthropic_base_url=fake.base_url,
            openai_api_key="sk-test",
        )
    )


def quotes(count: int) -> list[AnthropicTurn]:
    symbols = ["ACME", "GLOBEX", "INITECH"]
    return [
        anthropic_turn(
            f"Looking up {symbols[i % 3]}.",
            [(f"toolu_{i}", "get_quote", {"symbol": symbols[i % 3]})],
            thinking=f"Step {i}: I need the quote of {symbols[i % 3]}.",
        )
        for i in range(count)
    ]


async def test_an_anthropic_agent_uses_tools_and_passes_thinking_back(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    async with FakeAnthropicServer() as fake:
        fake.enqueue(*quotes(2), anthropic_turn("ACME is at 101.5 and GLOBEX at 42."))
        async with agent_worker(
            client, ClaudeAnalyst, model=provider_for(fake), task_queue=task_queue
        ):
            result = await agents.run(ClaudeAnalyst, "Quote ACME and GLOBEX")
        requests = [r.json for r in fake.requests]

    assert (result.status, result.output) == ("completed", "ACME is at 101.5 and GLOBEX at 42.")
    assert {r["model"] for r in requests} == {"claude-test"}
    # Every signed thinking block went back (the fake refuses forged ones with a 400).
    sent_back = [
        block
        for block in requests[2]["messages"][1]["content"] + requests[2]["messages"][3]["content"]
        if block["type"] == "thinking"
    ]
    assert [b["signature"] for b in sent_back] == [
        fake.sign("Step 0: I need the quote of ACME."),
        fake.sign("Step 1: I need the quote of GLOBEX."),
    ]
    assert "101.5" in requests[1]["messages"][2]["content"][0]["content"]


async def test_after_the_first_turn_most_input_tokens_are_cache_reads(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    async with FakeAnthropicServer() as fake:
        fake.enqueue(*quotes(8), anthropic_turn("Done."))
        async with agent_worker(
            client, ClaudeAnalyst, model=provider_for(fake), task_queue=task_queue
        ):
            result = await agents.run(ClaudeAnalyst, "Quote everything, several times")
        reports = fake.reports

    later = reports[1:]
    share = sum(r.cache_read_input_tokens for r in later) / sum(r.prompt_tokens for r in later)
    assert result.status == "completed" and len(reports) == 9
    assert share >= 0.8, share
    usage = result.usage
    assert usage.cached_tokens == sum(r.cache_read_input_tokens for r in reports)
    assert usage.cache_write_tokens == sum(r.cache_creation_input_tokens for r in reports)
    assert usage.input_tokens == sum(r.prompt_tokens for r in reports)
    assert usage.cache_read_share == usage.cached_tokens / usage.input_tokens


async def test_a_rate_limited_call_waits_its_retry_after_then_succeeds(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    async with FakeAnthropicServer() as fake:
        fake.enqueue(
            anthropic_error(429, "rate_limit_error", "Number of requests exceeded", retry_after=2),
            anthropic_error(529, "overloaded_error", "Overloaded"),
            anthropic_turn("Markets are calm."),
        )
        async with agent_worker(
            client, ClaudeAnalyst, model=provider_for(fake), task_queue=task_queue
        ):
            result = await agents.run(ClaudeAnalyst, "How are markets?")
        limited, overloaded, answered = fake.requests

    assert (result.status, result.output) == ("completed", "Markets are calm.")
    # Temporal's retry honoured the server's retry-after (the policy's own first
    # interval is shorter); the overloaded answer was retried too.
    assert overloaded.received_at - limited.received_at >= 2.0
    assert answered.json == limited.json
