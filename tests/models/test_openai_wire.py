"""What the OpenAI providers hand the ``openai`` SDK, and what reaches the endpoint.

The providers send the conversation and tools in ``extra_body`` so the SDK does not
walk every message through its parameter types on every call (``bench.openai_wire``
measures it: 52 ms against 2.4 ms for a chat call of 301 messages on a quiet
machine). These tests pin that the walk is skipped and that skipping it changes
nothing on the wire.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from openai import Omit
from openai._utils._transform import async_maybe_transform
from openai.resources import responses as responses_resource
from openai.resources.chat.completions import completions
from openai.types.chat import completion_create_params
from openai.types.responses import response_create_params

from smyth_temporal.models import OpenAIProvider, OpenAIResponsesProvider
from smyth_temporal.testing import FakeOpenAIServer, chat_completion, responses_answer
from smyth_temporal.types.messages import Message, ToolCall
from smyth_temporal.types.model import ModelRequest, OutputSchema

TOOL = {
    "type": "function",
    "function": {
        "name": "get_quote",
        "description": "The price of a symbol.",
        "parameters": {"type": "object", "properties": {"symbol": {"type": "string"}}},
    },
}


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as server:
        yield server


def conversation(steps: int) -> list[Message]:
    """Instructions, then ``steps`` rounds of question, tool call (with text) and result."""
    messages = [Message.system("You analyse markets.")]
    for step in range(steps):
        call = ToolCall(id=f"call_{step}_0", name="get_quote", arguments='{"symbol": "ACME"}')
        messages += [
            Message.user(f"Question {step}: how is ACME? ünïcödé \u2028"),
            Message(role="assistant", content="Looking." if step % 2 else None, tool_calls=[call]),
            Message.tool_result(call, '{"price": 42.0}'),
        ]
    return [*messages, Message.user("And now?")]


async def test_a_long_conversation_skips_the_sdks_per_message_type_walk(
    fake: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    handed: list[dict[str, Any]] = []

    async def spy(data: Any, expected_type: Any) -> Any:
        handed.append({k: v for k, v in data.items() if not isinstance(v, Omit)})
        return await async_maybe_transform(data, expected_type)

    monkeypatch.setattr(completions, "async_maybe_transform", spy)
    fake.enqueue(chat_completion("42"), chat_completion("42"))
    provider = OpenAIProvider(base_url=fake.base_url, api_key="k")
    request = ModelRequest(model="m", messages=conversation(10), tools=[TOOL])

    await provider.complete(request)
    await provider.stream(request, lambda _: None)

    # The SDK's transform saw no message and no tool, for either kind of call ...
    assert [(d["messages"], "tools" in d) for d in handed] == [([], False), ([], False)]
    # ... and the endpoint still got all 32 messages and the tool, each time.
    for sent in fake.requests:
        assert len(sent.json["messages"]) == 32
        assert sent.json["tools"] == [TOOL]


async def test_the_wire_body_is_what_the_sdks_transform_would_have_sent(
    fake: FakeOpenAIServer,
) -> None:
    fake.enqueue(chat_completion("42"))
    provider = OpenAIProvider(base_url=fake.base_url, api_key="k", structured_output="tool")
    request = ModelRequest(
        model="m",
        messages=conversation(3),
        tools=[TOOL],
        settings={"temperature": 0.2, "extra_body": {"top_k": 5}},
        output=OutputSchema(name="Quote", json_schema={"type": "object"}),
    )

    await provider.complete(request)

    params = provider._params(request)
    wire = params.pop("extra_body")
    extra = {"top_k": wire.pop("top_k")}  # the settings' own extra_body is kept
    before = await async_maybe_transform(
        {**params, **wire}, completion_create_params.CompletionCreateParamsNonStreaming
    )
    assert before is not None
    assert fake.requests[0].json == {**before, **extra}
    assert [t["function"]["name"] for t in fake.requests[0].json["tools"]] == [
        "get_quote",
        "final_answer",
    ]


async def test_a_responses_turn_skips_the_sdks_per_item_type_walk_and_sends_the_same_body(
    fake: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    handed: list[dict[str, Any]] = []

    async def spy(data: Any, expected_type: Any) -> Any:
        handed.append({k: v for k, v in data.items() if not isinstance(v, Omit)})
        return await async_maybe_transform(data, expected_type)

    monkeypatch.setattr(responses_resource.responses, "async_maybe_transform", spy)
    fake.enqueue(responses_answer("42"), responses_answer("42"))
    provider = OpenAIResponsesProvider(base_url=fake.base_url, api_key="k")
    request = ModelRequest(model="gpt-4o", messages=conversation(10), tools=[TOOL])

    await provider.complete(request)
    await provider.stream(request, lambda _: None)

    assert [("input" in d, "tools" in d) for d in handed] == [(False, False), (False, False)]
    before = await async_maybe_transform(
        provider.params(request), response_create_params.ResponseCreateParamsNonStreaming
    )
    assert before is not None
    assert fake.requests[0].json == before
    assert fake.requests[1].json == {**before, "stream": True}
