"""The real ``openai`` client path: an agent on a real dev server, a fake HTTP endpoint."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from temporalio.client import Client

from smyth_temporal import AgentClient, AgentFailedError
from smyth_temporal.models import OpenAIProvider
from smyth_temporal.testing import (
    FakeOpenAIServer,
    agent_worker,
    chat_completion,
    error_response,
)
from tests.helpers.agents import Analyst

SECRET = "sk-test-never-in-history"


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as server:
        yield server


def provider(fake: FakeOpenAIServer) -> OpenAIProvider:
    return OpenAIProvider(base_url=fake.base_url, api_key=SECRET)


async def test_tool_calls_through_the_openai_client(
    client: Client, agents: AgentClient, task_queue: str, fake: FakeOpenAIServer
) -> None:
    fake.enqueue(
        chat_completion(tool_calls=[("call_a", "get_quote", {"symbol": "ACME"})]),
        chat_completion("ACME trades at 101.5", prompt_tokens=30, completion_tokens=7),
    )
    async with agent_worker(client, Analyst, model=provider(fake), task_queue=task_queue):
        handle = await agents.start(Analyst, "Price of ACME?")
        result = await agents.result(handle.id)

    assert result.output == "ACME trades at 101.5"
    assert result.usage.input_tokens == 40
    assert result.usage.output_tokens == 12

    first, second = (r.json for r in fake.requests)
    assert first["model"] == "test-model"
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert {t["function"]["name"] for t in first["tools"]} >= {"get_quote", "place_order"}
    # The tool result goes back in the chat-completions shape, answering its call.
    assistant, tool_message = second["messages"][2:]
    assert assistant["tool_calls"][0]["id"] == "call_a"
    assert tool_message == {"role": "tool", "tool_call_id": "call_a", "content": "101.5"}
    assert fake.requests[0].headers["authorization"] == f"Bearer {SECRET}"

    # The key reached the endpoint, never the workflow's history.
    history = await client.get_workflow_handle(handle.id).fetch_history()
    assert SECRET not in history.to_json()


async def test_429_with_retry_after_then_success(
    client: Client, agents: AgentClient, task_queue: str, fake: FakeOpenAIServer
) -> None:
    fake.enqueue(
        error_response(429, "Rate limit reached", retry_after=2),
        chat_completion("fine"),
    )
    async with agent_worker(client, Analyst, model=provider(fake), task_queue=task_queue):
        result = await agents.run(Analyst, "hello")

    assert result.output == "fine"
    assert len(fake.requests) == 2
    # Temporal waited as long as the endpoint asked (its own first backoff is 1 s).
    gap = fake.requests[1].received_at - fake.requests[0].received_at
    assert gap >= 1.9


async def test_500_then_success(
    client: Client, agents: AgentClient, task_queue: str, fake: FakeOpenAIServer
) -> None:
    fake.enqueue(error_response(500, "upstream exploded"), chat_completion("recovered"))
    async with agent_worker(client, Analyst, model=provider(fake), task_queue=task_queue):
        result = await agents.run(Analyst, "hello")
    assert result.output == "recovered"
    assert len(fake.requests) == 2


async def test_400_fails_the_run_clearly_without_retrying(
    client: Client, agents: AgentClient, task_queue: str, fake: FakeOpenAIServer
) -> None:
    fake.enqueue(error_response(400, "Invalid value for 'model': no-such-model"))
    async with agent_worker(client, Analyst, model=provider(fake), task_queue=task_queue):
        handle = await agents.start(Analyst, "hello")
        with pytest.raises(AgentFailedError) as failed:
            await agents.result(handle.id)
        state = await agents.state(handle.id)

    message = str(failed.value)
    assert "model call failed at step 1" in message
    assert "400" in message
    assert "no-such-model" in message
    assert len(fake.requests) == 1
    assert state.status == "failed"
