"""The Responses provider through the real ``openai`` client against the fake server."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from temporalio.client import Client
from temporalio.exceptions import ApplicationError

from smyth_temporal import AgentClient
from smyth_temporal.models import OpenAIResponsesProvider, default_provider, is_reasoning_model
from smyth_temporal.settings import ModelSettings
from smyth_temporal.testing import (
    FakeOpenAIServer,
    FakeResponse,
    agent_worker,
    error_response,
    responses_answer,
)
from smyth_temporal.types.messages import Message, ToolCall, Usage
from smyth_temporal.types.model import (
    ModelRequest,
    ModelResponse,
    OutputSchema,
    is_context_too_long,
    is_overloaded,
)
from tests.helpers.agents import Analyst
from tests.helpers.provider_requests import quote_request

INSTRUCTIONS = "You analyse markets. " * 300  # over the 1,024 tokens OpenAI caches from


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def provider(fake: FakeOpenAIServer) -> OpenAIResponsesProvider:
    return OpenAIResponsesProvider(base_url=fake.base_url, api_key="sk-test")


def request(*messages: Message, step: int = 0, **settings: object) -> ModelRequest:
    return quote_request("gpt-5-test", INSTRUCTIONS, *messages, step=step, settings=settings)


async def quote_then_answer(
    fake: FakeOpenAIServer, ask: object, *, reasoning: str | None = "Need the price."
) -> tuple[ModelResponse, ModelResponse]:
    """A turn that calls get_quote (after reasoning), then the answer with its result."""
    fake.enqueue(
        responses_answer(
            function_calls=[("call_1", "get_quote", {"symbol": "ACME"})], reasoning=reasoning
        ),
        responses_answer("ACME trades at 42."),
    )
    first: ModelResponse = await ask(request())  # type: ignore[operator]
    call = first.message.tool_calls[0]
    second: ModelResponse = await ask(  # type: ignore[operator]
        request(first.message, Message.tool_result(call, "42.0"), step=1)
    )
    return first, second


async def test_tool_calls_go_as_function_call_items_and_results_as_their_outputs(
    fake: FakeOpenAIServer, provider: OpenAIResponsesProvider
) -> None:
    first, second = await quote_then_answer(fake, provider.complete, reasoning=None)

    call = first.message.tool_calls[0]
    assert (call.id, call.name, json.loads(call.arguments)) == (
        "call_1",
        "get_quote",
        {"symbol": "ACME"},
    )
    assert (first.finish_reason, second.message.content, second.finish_reason) == (
        "tool_calls",
        "ACME trades at 42.",
        "stop",
    )
    sent = fake.requests[1].json
    assert (sent["store"], sent["include"]) == (False, ["reasoning.encrypted_content"])
    # Sorted by name, and not strict: the Responses API makes function tools strict unless told.
    assert [(t["name"], t["strict"]) for t in sent["tools"]] == [
        ("add_note", False),
        ("get_quote", False),
    ]
    assert sent["input"][2:] == [
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "get_quote",
            "arguments": call.arguments,
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "42.0"},
    ]


async def test_reasoning_items_go_back_unchanged_before_the_call_they_led_to(
    fake: FakeOpenAIServer, provider: OpenAIResponsesProvider
) -> None:
    first, second = await quote_then_answer(fake, provider.complete)

    [item] = first.message.provider_items
    assert item["type"] == "reasoning" and item["encrypted_content"]
    assert second.message.content == "ACME trades at 42."  # the fake verified the seal
    sent = fake.requests[1].json["input"]
    assert sent[2] == item
    assert sent[3]["type"] == "function_call"
    assert first.usage.reasoning_tokens > 0
    assert first.usage.output_tokens > first.usage.reasoning_tokens


async def test_an_altered_reasoning_item_is_refused_as_a_final_error(
    fake: FakeOpenAIServer, provider: OpenAIResponsesProvider
) -> None:
    fake.enqueue(
        responses_answer(
            function_calls=[("call_1", "get_quote", {"symbol": "ACME"})], reasoning="Think."
        )
    )
    first = await provider.complete(request())
    altered = dict(first.message.provider_items[0], summary=[])
    turn = first.message.model_copy(update={"provider_items": [altered]})
    call = turn.tool_calls[0]
    with pytest.raises(ApplicationError) as raised:
        await provider.complete(request(turn, Message.tool_result(call, "42.0"), step=1))
    assert (raised.value.type, raised.value.non_retryable) == ("ModelHTTPError", True)
    assert "could not be verified" in str(raised.value)


async def test_reasoning_that_led_to_no_item_is_left_out_as_the_api_refuses_it(
    fake: FakeOpenAIServer, provider: OpenAIResponsesProvider
) -> None:
    fake.enqueue(responses_answer("", reasoning="Nothing to say."), responses_answer("Hi."))
    empty = await provider.complete(request())
    assert empty.message.content is None and empty.message.provider_items

    answer = await provider.complete(request(empty.message, Message.user("Well?"), step=1))

    assert answer.message.content == "Hi."
    assert [i.get("type") for i in fake.requests[1].json["input"][2:]] == [None]


async def test_streamed_text_concatenates_to_the_answer_complete_gives(
    fake: FakeOpenAIServer, provider: OpenAIResponsesProvider
) -> None:
    pieces: list[str] = []

    def stream(ask: ModelRequest) -> object:
        return provider.stream(ask, pieces.append)

    streamed = await quote_then_answer(fake, stream)
    whole = await quote_then_answer(fake, provider.complete)

    assert "".join(pieces) == "ACME trades at 42." and len(pieces) > 1
    for got, expected in zip(streamed, whole, strict=True):
        assert got.message.tool_calls == expected.message.tool_calls
        assert got.message.content == expected.message.content
        assert got.finish_reason == expected.finish_reason
        assert len(got.message.provider_items) == len(expected.message.provider_items)
    # The reasoning item came whole with the stream's last event, sealed, and went back.
    assert streamed[0].message.provider_items[0]["encrypted_content"]
    assert streamed[0].message.provider_items[0] in fake.requests[1].json["input"]
    assert all(r.streamed for r in fake.requests[:2])


async def test_a_stream_cut_off_midway_is_retryable(
    fake: FakeOpenAIServer, provider: OpenAIResponsesProvider
) -> None:
    fake.enqueue(FakeResponse(body=responses_answer("one two three four"), drop_after=2))
    with pytest.raises(ApplicationError) as raised:
        await provider.stream(request(), lambda _: None)
    assert raised.value.non_retryable is False


@pytest.mark.parametrize(
    ("code", "error_type", "final"),
    [
        ("context_length_exceeded", "ModelContextTooLong", True),
        ("server_error", "ModelError", False),
    ],
)
async def test_a_failed_streamed_response_is_classified_by_its_code(
    fake: FakeOpenAIServer,
    provider: OpenAIResponsesProvider,
    code: str,
    error_type: str,
    final: bool,
) -> None:
    failed = responses_answer(status="failed")
    failed["error"] = {"code": code, "message": "it failed"}
    fake.enqueue(failed)
    with pytest.raises(ApplicationError) as raised:
        await provider.stream(request(), lambda _: None)
    assert (raised.value.type, raised.value.non_retryable) == (error_type, final)
    assert is_context_too_long(raised.value.type, raised.value.details) is final


async def test_errors_are_classified_as_the_chat_provider_classifies_them(
    fake: FakeOpenAIServer, provider: OpenAIResponsesProvider
) -> None:
    fake.enqueue(
        error_response(429, "slow down", retry_after=7),
        error_response(503, "unavailable"),
        error_response(400, "too long", code="context_length_exceeded"),
        error_response(400, "max_output_tokens must be positive"),
    )
    errors: list[ApplicationError] = []
    for _ in range(4):
        with pytest.raises(ApplicationError) as raised:
            await provider.complete(request())
        errors.append(raised.value)
    rate_limited, unavailable, too_long, bad = errors
    assert (rate_limited.non_retryable, rate_limited.next_retry_delay) == (
        False,
        timedelta(seconds=7),
    )
    assert is_overloaded(unavailable.type, unavailable.details)  # moves to a fallback model
    assert is_context_too_long(too_long.type, too_long.details)  # compacts
    assert (bad.type, bad.non_retryable) == ("ModelHTTPError", True)


async def test_the_prompt_prefix_is_read_from_the_cache_from_the_second_step_on(
    fake: FakeOpenAIServer, provider: OpenAIResponsesProvider
) -> None:
    first, second = await quote_then_answer(fake, provider.complete)

    assert first.usage.cached_tokens == 0
    # The instructions, task and tools are a byte-identical prefix of the second prompt.
    assert second.usage.cached_tokens >= 1024
    assert second.usage.cache_read_share > 0.8


def test_chat_settings_are_translated_and_a_typed_answer_asks_for_its_schema() -> None:
    from smyth_temporal.models._openai_responses import params

    typed = request(max_tokens=50, reasoning_effort="low", temperature=0.2).model_copy(
        update={"output": OutputSchema(name="Quote", json_schema={"type": "object"})}
    )
    wire = params(typed)
    assert (wire["max_output_tokens"], wire["reasoning"], wire["temperature"]) == (
        50,
        {"effort": "low"},
        0.2,
    )
    assert "max_tokens" not in wire
    # What else the settings include is kept, a single name as well as a list.
    assert params(request(include="file_search_call.results"))["include"] == [
        "file_search_call.results",
        "reasoning.encrypted_content",
    ]
    assert wire["text"]["format"] == {
        "type": "json_schema",
        "name": "Quote",
        "schema": {"type": "object"},
        "strict": False,
    }


@pytest.mark.parametrize(
    ("model", "reasons"),
    [
        ("gpt-5", True),
        ("gpt-5-mini-2025-08-07", True),
        ("o3", True),
        ("o4-mini", True),
        ("codex-mini-latest", True),
        ("gpt-5-chat-latest", False),
        ("gpt-4o", False),
        ("gpt-4.1-mini", False),
        ("omni-moderation-latest", False),
    ],
)
def test_only_models_that_reason_ask_for_encrypted_reasoning(model: str, reasons: bool) -> None:
    # A model that does not reason refuses a request that asks ("Encrypted content is
    # not supported with this model"): a fallback from gpt-5 to gpt-4o must not ask.
    provider = OpenAIResponsesProvider(api_key="sk-test")
    asking = request().model_copy(update={"model": model})
    assert ("include" in provider.params(asking)) is reasons
    assert is_reasoning_model(model) is reasons
    # Settings that ask for reasoning say the model reasons, whatever its name.
    told = asking.model_copy(update={"settings": {"reasoning_effort": "low"}})
    assert provider.params(told)["include"] == ["reasoning.encrypted_content"]


async def test_reasoning_without_encrypted_content_is_not_sent_back_when_nothing_is_stored(
    fake: FakeOpenAIServer,
) -> None:
    provider = OpenAIResponsesProvider(base_url=fake.base_url, api_key="sk-test", reasoning=False)
    first, second = await quote_then_answer(fake, provider.complete)

    [item] = first.message.provider_items
    assert item["encrypted_content"] is None
    # Sent back, it would name an item the server never stored: a 404, the run failed.
    assert second.message.content == "ACME trades at 42."
    assert all(i.get("type") != "reasoning" for i in fake.requests[1].json["input"])


async def test_a_fallback_to_a_model_that_does_not_reason_gets_no_reasoning_items(
    fake: FakeOpenAIServer, provider: OpenAIResponsesProvider
) -> None:
    fake.enqueue(
        responses_answer(
            function_calls=[("call_1", "get_quote", {"symbol": "ACME"})], reasoning="Think."
        )
    )
    first = await provider.complete(request())
    call = first.message.tool_calls[0]
    later = request(first.message, Message.tool_result(call, "42.0"), step=1)

    to_gpt_4o = provider.params(later.model_copy(update={"model": "gpt-4o"}))

    assert "include" not in to_gpt_4o
    assert [i.get("type") for i in to_gpt_4o["input"][2:]] == [
        "function_call",
        "function_call_output",
    ]


def test_the_default_provider_serves_openai_responses_names_with_the_workers_key() -> None:
    routes = default_provider(ModelSettings.load(openai_api_key="sk-worker-key"))
    provider, name = routes.resolve("openai-responses:gpt-5")
    assert (type(provider), name) == (OpenAIResponsesProvider, "gpt-5")


def test_reasoning_tokens_add_up() -> None:
    total = Usage(output_tokens=10, reasoning_tokens=4) + Usage(output_tokens=5, reasoning_tokens=1)
    assert (total.output_tokens, total.reasoning_tokens) == (15, 5)


async def test_an_agent_carries_reasoning_across_its_tool_call(
    client: Client, agents: AgentClient, task_queue: str, fake: FakeOpenAIServer
) -> None:
    fake.enqueue(
        responses_answer(
            function_calls=[("call_a", "get_quote", {"symbol": "ACME"})], reasoning="Look it up."
        ),
        responses_answer("ACME trades at 101.5"),
    )
    # The agent's model is "test-model": say it reasons.
    provider = OpenAIResponsesProvider(base_url=fake.base_url, api_key="sk-test", reasoning=True)
    async with agent_worker(client, Analyst, model=provider, task_queue=task_queue):
        handle = await agents.start(Analyst, "Price of ACME?")
        result = await agents.result(handle.id)

    assert result.output == "ACME trades at 101.5"
    _, second = (r.json for r in fake.requests)
    # Through the workflow's state and back: the item the model gave, sealed, unchanged.
    [reasoning] = [i for i in second["input"] if i.get("type") == "reasoning"]
    assert reasoning["encrypted_content"] and reasoning["summary"][0]["text"] == "Look it up."
    assert result.usage.reasoning_tokens > 0


def test_a_tool_call_id_the_workflow_renamed_goes_back_with_the_models_id() -> None:
    from smyth_temporal.models._openai_responses import to_items

    call = ToolCall(id="call_0_0", name="get_quote", arguments="{}", original_id="fc_model")
    items = to_items([Message(role="assistant", tool_calls=[call]), Message.tool_result(call, "1")])
    assert [i["call_id"] for i in items] == ["fc_model", "fc_model"]
