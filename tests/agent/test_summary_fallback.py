"""Compaction's summary calls move to a fallback model as the agent's turns do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from smyth_temporal import AgentClient
from smyth_temporal.agent.fallback import SUMMARY_FALLBACK_PATCH
from smyth_temporal.testing import (
    AnthropicTurn,
    FakeAnthropicServer,
    agent_worker,
    anthropic_error,
    anthropic_turn,
)
from tests.helpers.fallback_agents import ClaudeCompactingWithFallback
from tests.models.test_anthropic_agent import provider_for
from tests.models.test_model_fallback import NOTES, is_summary, replays

SYMBOLS = ["ACME", "GLOBEX", "INITECH", "ACME"]


async def test_an_overloaded_summarizer_moves_the_summary_to_the_fallback_model(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    turns = 0

    def respond(body: dict[str, Any]) -> AnthropicTurn:
        nonlocal turns
        if is_summary(body):
            if body["model"] == "claude-primary":
                return anthropic_error(529, "overloaded_error", "Overloaded")
            return anthropic_turn(f"Quoted {turns} symbols so far.")
        turns += 1
        if turns <= len(SYMBOLS):
            symbol = SYMBOLS[turns - 1]
            return anthropic_turn(
                f"Looking up {symbol}. " + NOTES,
                [(f"toolu_{turns}", "get_quote", {"symbol": symbol})],
            )
        return anthropic_turn("All quoted.")

    async with (
        FakeAnthropicServer(respond=respond) as fake,
        agent_worker(
            client, ClaudeCompactingWithFallback, model=provider_for(fake), task_queue=task_queue
        ),
    ):
        handle = await agents.start(ClaudeCompactingWithFallback, "Quote the four symbols")
        result = await agents.result(handle.id)
        state = await agents.state(handle.id)
        trail = await agents.audit(handle.id)
        history = await client.get_workflow_handle(handle.id).fetch_history()

    assert (result.status, result.output) == ("completed", "All quoted.")
    # Summarized by the backup, not replaced by a placeholder, and not deferred.
    assert state.compactions and not any(c.fallback for c in state.compactions)
    summaries = [
        (e.fields["model"], e.fields["outcome"])
        for e in trail.of("model_call")
        if e.fields["purpose"] == "summary"
    ]
    assert summaries == [
        ("anthropic:claude-primary", "failed"),
        ("anthropic:claude-backup", "completed"),
    ] * len(state.compactions)
    # The history marks the new path and names the fallback in the call's summary.
    markers = [
        e.SerializeToString()
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
    ]
    assert any(SUMMARY_FALLBACK_PATCH.encode() in marker for marker in markers)
    recorded = b"".join(e.SerializeToString() for e in history.events)
    assert b"summary cmp-1 (fallback anthropic:claude-backup)" in recorded
    await replays(ClaudeCompactingWithFallback, history)
