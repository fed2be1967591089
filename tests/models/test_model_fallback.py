"""Fallback models and context-window compaction, through the real SDK and the fake API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowHistory
from temporalio.worker import Replayer

from smyth_temporal import (
    AgentClient,
    AgentConfig,
    AgentFailedError,
    ConfigurationError,
    SmythPlugin,
)
from smyth_temporal.context import DEFAULT_SUMMARY_INSTRUCTIONS
from smyth_temporal.models import OpenAIProvider
from smyth_temporal.testing import (
    AnthropicTurn,
    FakeAnthropicServer,
    FakeOpenAIServer,
    agent_worker,
    anthropic_error,
    anthropic_turn,
    chat_completion,
    error_response,
)
from smyth_temporal.types.model import is_context_too_long, is_overloaded
from tests.helpers.fallback_agents import ClaudeInSmallWindow, ClaudeWithFallback, GPTWithFallbacks
from tests.helpers.window_scripts import ShrinkingWindow
from tests.models.test_anthropic_agent import provider_for


async def model_calls(agents: AgentClient, workflow_id: str) -> list[tuple[str, str]]:
    trail = await agents.audit(workflow_id)
    return [
        (e.fields["model"], e.fields["outcome"]) for e in trail.entries if e.kind == "model_call"
    ]


async def test_an_overloaded_model_moves_the_turn_to_the_fallback_model(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    async with FakeAnthropicServer() as fake:
        fake.enqueue(
            anthropic_error(529, "overloaded_error", "Overloaded"),
            anthropic_error(529, "overloaded_error", "Overloaded"),
            anthropic_turn("Markets are calm."),
        )
        async with agent_worker(
            client, ClaudeWithFallback, model=provider_for(fake), task_queue=task_queue
        ):
            handle = await agents.start(ClaudeWithFallback, "How are markets?")
            result = await agents.result(handle.id)
            calls = await model_calls(agents, handle.id)
            state = await agents.state(handle.id)
            history = await client.get_workflow_handle(handle.id).fetch_history()
        sent = [r.json["model"] for r in fake.requests]

    assert (result.status, result.output) == ("completed", "Markets are calm.")
    # Two attempts at the primary (fallback_after_attempts), then the backup answers.
    assert sent == ["claude-primary", "claude-primary", "claude-backup"]
    # Each model is its own call in the history, and the audit names both.
    assert calls == [
        ("anthropic:claude-primary", "failed"),
        ("anthropic:claude-backup", "completed"),
    ]
    # The run's versions say which model step 1 finally ran on.
    assert [(v.step, v.model) for v in state.versions] == [
        (1, "anthropic:claude-primary"),
        (1, "anthropic:claude-backup"),
    ]
    # The run replays: the fallback is decided by recorded results only.
    await replays(ClaudeWithFallback, history)


async def test_a_rejected_request_never_moves_to_the_fallback_model(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    async with FakeAnthropicServer() as fake:
        fake.enqueue(anthropic_error(400, "invalid_request_error", "tools: bad schema"))
        async with agent_worker(
            client, ClaudeWithFallback, model=provider_for(fake), task_queue=task_queue
        ):
            handle = await agents.start(ClaudeWithFallback, "How are markets?")
            with pytest.raises(AgentFailedError) as failed:
                await agents.result(handle.id)
        sent = [r.json["model"] for r in fake.requests]

    assert "bad schema" in str(failed.value)
    assert sent == ["claude-primary"]


NOTES = "I weigh the sector, the volume and yesterday's close before I quote. " * 20
"""What the model says beside each tool call: turns much longer than a summary."""


async def replays(agent: type, history: WorkflowHistory) -> None:
    await Replayer(workflows=[agent], plugins=[SmythPlugin()]).replay_workflow(history)


def is_summary(body: dict[str, Any]) -> bool:
    return DEFAULT_SUMMARY_INSTRUCTIONS[:40] in str(body.get("system"))


async def test_a_prompt_over_the_context_window_compacts_and_the_run_completes(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    script = ShrinkingWindow(
        turn=anthropic_turn,
        call=lambda n, symbol: (f"toolu_{n}", "get_quote", {"symbol": symbol}),
        is_summary=is_summary,
        notes=NOTES,
        answer="All six quoted.",
    )
    fake = script.fake = FakeAnthropicServer(respond=script)
    turns, summaries = script.turns, script.summaries
    async with fake:
        async with agent_worker(
            client, ClaudeInSmallWindow, model=provider_for(fake), task_queue=task_queue
        ):
            handle = await agents.start(ClaudeInSmallWindow, "Quote the three symbols twice")
            result = await agents.result(handle.id)
            state = await agents.state(handle.id)
            history = await client.get_workflow_handle(handle.id).fetch_history()
        asked = [r.json for r in fake.requests if not is_summary(r.json)]

    assert (result.status, result.output) == ("completed", "All six quoted.")
    # Turn 7 was refused once (not answered), compacted, then answered.
    assert (len(asked), len(turns), len(summaries)) == (8, 7, 1)
    assert asked[6] not in turns
    # Summarized (the summary fitted the window), not replaced by a placeholder.
    assert [c.fallback for c in state.compactions] == [False]
    await replays(ClaudeInSmallWindow, history)
    assert "Quoted ACME, GLOBEX and INITECH" in str(turns[-1]["messages"])


async def test_a_prompt_still_over_the_window_after_compacting_fails_the_run_clearly(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    turns: list[dict[str, Any]] = []

    def respond(body: dict[str, Any]) -> AnthropicTurn:
        if is_summary(body):
            return anthropic_turn("Quoted ACME and GLOBEX so far.")
        turns.append(body)
        if len(turns) == 3:
            # A window smaller than the instructions and the task: nothing fits.
            fake.context_window = 10
        symbol = ["ACME", "GLOBEX", "INITECH"][len(turns) - 1]
        return anthropic_turn(
            f"Looking up {symbol}. " + NOTES,
            [(f"toolu_{len(turns)}", "get_quote", {"symbol": symbol})],
        )

    fake = FakeAnthropicServer(respond=respond)
    async with (
        fake,
        agent_worker(client, ClaudeInSmallWindow, model=provider_for(fake), task_queue=task_queue),
    ):
        handle = await agents.start(ClaudeInSmallWindow, "Quote the three symbols")
        with pytest.raises(AgentFailedError) as failed:
            await agents.result(handle.id)
        state = await agents.state(handle.id)

    message = str(failed.value)
    assert "model call failed at step 4" in message
    assert "context window" in message
    assert "compact" in message  # says it compacted (or could not) before giving up
    assert state.status == "failed"
    assert len(turns) == 3


@pytest.mark.parametrize(
    ("error_type", "details", "overloaded"),
    [
        ("ModelOverloaded", [], True),
        ("ModelHTTPError", [{"status_code": 529}], True),
        ("ModelHTTPError", [{"status_code": 503}], True),
        ("ModelHTTPError", [{"status_code": 500}], False),
        ("ModelHTTPError", [{"status_code": 429}], False),
        ("ModelHTTPError", [], False),
        ("ModelHTTPError", ["503"], False),
        ("ModelContextTooLong", [], False),
        ("BudgetExceededError", [], False),
        (None, [], False),
    ],
)
def test_only_overloaded_or_unavailable_endpoints_move_a_call_to_a_fallback(
    error_type: str | None, details: list[Any], overloaded: bool
) -> None:
    assert is_overloaded(error_type, details) is overloaded


@pytest.mark.parametrize(
    ("error_type", "details", "too_long"),
    [
        ("ModelContextTooLong", [], True),
        ("ModelHTTPError", [{"status_code": 400, "error_code": "context_length_exceeded"}], True),
        ("ModelHTTPError", [{"status_code": 400, "error_code": "invalid_value"}], False),
        ("ModelOverloaded", [], False),
        (None, [None], False),
    ],
)
def test_only_a_prompt_over_the_window_triggers_compaction(
    error_type: str | None, details: list[Any], too_long: bool
) -> None:
    assert is_context_too_long(error_type, details) is too_long


@pytest.mark.parametrize(
    "options",
    [
        {"fallback_models": "anthropic:claude-backup"},
        {"fallback_models": [""]},
        {"fallback_models": [None]},
        {"fallback_models": ["m"], "fallback_after_attempts": 0},
    ],
)
def test_bad_fallback_settings_are_refused_when_the_agent_is_defined(
    options: dict[str, Any],
) -> None:
    with pytest.raises(ConfigurationError, match="fallback"):
        AgentConfig(model="anthropic:claude-primary", **options)


async def test_unavailable_openai_models_fall_back_in_order_and_the_last_keeps_its_retries(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    async with FakeOpenAIServer() as fake:
        fake.enqueue(
            error_response(503, "primary unavailable"),
            error_response(503, "backup unavailable"),
            error_response(503, "last resort briefly unavailable"),
            chat_completion("Fine."),
        )
        provider = OpenAIProvider(base_url=fake.base_url, api_key="sk-test-fallback")
        async with agent_worker(client, GPTWithFallbacks, model=provider, task_queue=task_queue):
            handle = await agents.start(GPTWithFallbacks, "hello")
            result = await agents.result(handle.id)
            calls = await model_calls(agents, handle.id)
        sent = [r.json["model"] for r in fake.requests]

    assert result.output == "Fine."
    # One attempt at each fallen-back model; the last one is retried by the policy.
    assert sent == ["gpt-primary", "gpt-backup", "gpt-last-resort", "gpt-last-resort"]
    assert calls == [
        ("gpt-primary", "failed"),
        ("gpt-backup", "failed"),
        ("gpt-last-resort", "completed"),
    ]
