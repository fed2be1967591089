"""The Anthropic provider through the real ``anthropic`` SDK against the fake Messages API."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from temporalio.exceptions import ApplicationError

from smyth_temporal.models import ProviderPrefixes, default_provider
from smyth_temporal.models._anthropic import AnthropicProvider
from smyth_temporal.settings import ModelSettings
from smyth_temporal.testing import (
    FakeAnthropicServer,
    anthropic_error,
    anthropic_turn,
)
from smyth_temporal.types.budget import Price
from smyth_temporal.types.messages import Message, ToolCall, Usage
from smyth_temporal.types.model import ModelRequest, ModelResponse
from tests.helpers.provider_requests import QUOTE_TOOL, quote_request

INSTRUCTIONS = "You analyse markets. " * 40


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropicServer]:
    async with FakeAnthropicServer(context_window=5_000) as server:
        yield server


@pytest.fixture
def provider(fake: FakeAnthropicServer) -> AnthropicProvider:
    return AnthropicProvider(base_url=fake.base_url, api_key="sk-ant-test-key")


def request(*messages: Message, step: int = 0) -> ModelRequest:
    return quote_request("claude-test", INSTRUCTIONS, *messages, step=step)


async def test_tool_use_and_usage_with_cache_tokens(
    fake: FakeAnthropicServer, provider: AnthropicProvider
) -> None:
    fake.enqueue(anthropic_turn(tool_uses=[("toolu_1", "get_quote", {"symbol": "ACME"})]))
    first = await provider.complete(request())
    fake.enqueue(anthropic_turn("ACME trades at 42."))
    call = first.message.tool_calls[0]
    second = await provider.complete(
        request(first.message, Message.tool_result(call, "42.0"), step=1)
    )

    assert (call.name, json.loads(call.arguments), first.finish_reason) == (
        "get_quote",
        {"symbol": "ACME"},
        "tool_calls",
    )
    assert second.message.content == "ACME trades at 42."
    [one, two] = fake.reports
    # The first call writes the prefix, the second reads it and writes only its new turns.
    assert first.usage == Usage(
        requests=1,
        input_tokens=one.prompt_tokens,
        output_tokens=one.output_tokens,
        cache_write_tokens=one.cache_creation_input_tokens,
    )
    assert (one.cache_read_input_tokens, one.cache_creation_input_tokens) == (0, one.prompt_tokens)
    assert second.usage.cached_tokens == two.cache_read_input_tokens == one.prompt_tokens
    assert second.usage.input_tokens == two.prompt_tokens
    sent = fake.requests[1].json["messages"]
    assert sent[1] == {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "get_quote", "input": {"symbol": "ACME"}}
        ],
    }
    assert sent[2]["content"][0]["type"] == "tool_result"


async def test_streamed_text_concatenates_to_the_answer(
    fake: FakeAnthropicServer, provider: AnthropicProvider
) -> None:
    fake.enqueue(anthropic_turn("ACME is up three percent today."))
    pieces: list[str] = []
    response = await provider.stream(request(), pieces.append)

    assert fake.requests[0].json["stream"] is True
    assert len(pieces) > 1
    assert "".join(pieces) == response.message.content == "ACME is up three percent today."
    assert response.usage.input_tokens == fake.reports[0].prompt_tokens


@pytest.mark.parametrize("streamed", [False, True])
async def test_thinking_blocks_go_back_unchanged_with_their_signature(
    fake: FakeAnthropicServer, provider: AnthropicProvider, streamed: bool
) -> None:
    fake.enqueue(
        anthropic_turn(
            tool_uses=[("toolu_1", "get_quote", {"symbol": "ACME"})],
            thinking="The user wants a quote; call get_quote.",
        ),
        anthropic_turn("42."),
    )
    first = (
        await provider.stream(request(), lambda _: None)
        if streamed
        else await provider.complete(request())
    )
    call = first.message.tool_calls[0]
    await provider.complete(request(first.message, Message.tool_result(call, "42.0"), step=1))

    [thinking] = first.message.provider_items
    assert thinking == {
        "type": "thinking",
        "thinking": "The user wants a quote; call get_quote.",
        "signature": fake.sign("The user wants a quote; call get_quote."),
    }
    # The fake refuses a thinking block it did not sign; this one went back first, intact.
    assert fake.requests[1].json["messages"][1]["content"][0] == thinking
    assert len(fake.reports) == 2


async def test_an_altered_thinking_block_is_refused_as_a_final_error(
    fake: FakeAnthropicServer, provider: AnthropicProvider
) -> None:
    forged = Message(
        role="assistant",
        tool_calls=[ToolCall(id="toolu_1", name="get_quote", arguments='{"symbol": "ACME"}')],
        provider_items=[{"type": "thinking", "thinking": "changed", "signature": "bad"}],
    )
    with pytest.raises(ApplicationError) as raised:
        await provider.complete(request(forged, Message(role="tool", tool_call_id="toolu_1")))
    assert raised.value.non_retryable
    assert "signature" in str(raised.value)


async def test_a_429_asks_temporal_to_wait_its_retry_after(
    fake: FakeAnthropicServer, provider: AnthropicProvider
) -> None:
    fake.enqueue(anthropic_error(429, "rate_limit_error", "slow down", retry_after=7))
    with pytest.raises(ApplicationError) as raised:
        await provider.complete(request())
    error = raised.value
    assert (error.type, error.non_retryable, error.next_retry_delay) == (
        "ModelHTTPError",
        False,
        timedelta(seconds=7),
    )


async def test_an_overloaded_api_is_retryable_as_model_overloaded(
    fake: FakeAnthropicServer, provider: AnthropicProvider
) -> None:
    fake.enqueue(anthropic_error(529, "overloaded_error", "Overloaded"))
    with pytest.raises(ApplicationError) as raised:
        await provider.stream(request(), lambda _: None)
    assert (raised.value.type, raised.value.non_retryable) == ("ModelOverloaded", False)


async def test_a_prompt_over_the_context_window_is_final_context_too_long(
    fake: FakeAnthropicServer, provider: AnthropicProvider
) -> None:
    with pytest.raises(ApplicationError) as raised:
        await provider.complete(request(Message.user("x" * 40_000)))
    assert (raised.value.type, raised.value.non_retryable) == ("ModelContextTooLong", True)
    assert "prompt is too long" in str(raised.value)


async def test_a_bad_request_is_final(
    fake: FakeAnthropicServer, provider: AnthropicProvider
) -> None:
    fake.enqueue(anthropic_error(400, "invalid_request_error", "max_tokens: must be positive"))
    with pytest.raises(ApplicationError) as raised:
        await provider.complete(request())
    assert (raised.value.type, raised.value.non_retryable) == ("ModelHTTPError", True)


def test_the_cached_prefix_is_byte_identical_from_step_to_step() -> None:
    provider = AnthropicProvider(api_key="sk-ant-test-key", cache_ttl="1h")
    call = ToolCall(id="toolu_1", name="get_quote", arguments='{"symbol": "ACME"}')
    turn = Message(role="assistant", tool_calls=[call])
    first = provider.params(request())
    later = provider.params(request(turn, Message.tool_result(call, "42.0"), step=1))

    def plain(value: object) -> str:
        text = json.dumps(value)
        return text.replace(', "cache_control": {"type": "ephemeral", "ttl": "1h"}', "")

    assert json.dumps(first["tools"]) == json.dumps(later["tools"])
    assert json.dumps(first["system"]) == json.dumps(later["system"])
    assert plain(first["messages"]) == plain(later["messages"][:1])
    # Tools sorted by name; breakpoints on the last tool, the system and the last block.
    assert [t["name"] for t in later["tools"]] == ["add_note", "get_quote"]
    assert later["tools"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert "cache_control" in later["system"][-1]
    assert "cache_control" in later["messages"][-1]["content"][-1]


async def test_a_compaction_summary_is_a_breakpoint_that_later_steps_read(
    fake: FakeAnthropicServer, provider: AnthropicProvider
) -> None:
    task = Message.user("Watch ACME all day.")
    summary = Message(role="system", content="Summary: ACME was 40, then 41.", compaction="c1")
    compacted = [Message.system(INSTRUCTIONS), task, summary, Message.user("And now?")]
    params = provider.params(ModelRequest(model="m", messages=compacted, tools=[QUOTE_TOOL]))
    [opening] = params["messages"]
    marked = [b["text"] for b in opening["content"] if "cache_control" in b]
    assert marked == ["[system] Summary: ACME was 40, then 41.", "And now?"]

    fake.enqueue(anthropic_turn("41."), anthropic_turn("42."), anthropic_turn("43."))
    first = await provider.complete(ModelRequest(model="m", messages=compacted))
    # A later step whose last turn differs from the first's reads up to the summary:
    later = [*compacted[:3], Message.user("Any news?")]
    second = await provider.complete(ModelRequest(model="m", messages=later))
    # ... exactly the prompt that ends with the summary, all of it cached.
    prefix = await provider.complete(ModelRequest(model="m", messages=compacted[:3]))
    assert first.usage.cached_tokens == 0
    assert prefix.usage.cached_tokens == prefix.usage.input_tokens
    assert second.usage.cached_tokens == prefix.usage.input_tokens


class Recording:
    """A provider that answers empty and keeps the requests."""

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        return ModelResponse(message=Message(role="assistant", content=""))


async def test_the_model_string_prefix_picks_the_provider() -> None:
    openai, anthropic = Recording(), Recording()
    routes = ProviderPrefixes(openai, {"openai": openai, "anthropic": lambda: anthropic})

    for model, expected in [
        ("anthropic:claude-test", (anthropic, "claude-test")),
        ("openai:gpt-4o", (openai, "gpt-4o")),
        ("gpt-4o-mini", (openai, "gpt-4o-mini")),
        ("llama3:8b", (openai, "llama3:8b")),
    ]:
        assert routes.resolve(model) == expected
    await routes.complete(ModelRequest(model="anthropic:claude-test", messages=[]))
    assert [r.model for r in anthropic.requests] == ["claude-test"]


def test_the_default_provider_serves_anthropic_names_with_the_workers_key() -> None:
    settings = ModelSettings.load(anthropic_api_key="sk-ant-worker-key")
    routes = default_provider(settings)
    provider, name = routes.resolve("anthropic:claude-test")
    assert (type(provider), name) == (AnthropicProvider, "claude-test")


def test_cache_writes_and_reads_have_their_own_prices() -> None:
    price = Price(input=3.0, cached_input=0.3, cache_write=3.75, output=15.0)
    usage = Usage(
        input_tokens=1_000_000, cached_tokens=600_000, cache_write_tokens=300_000, output_tokens=0
    )
    assert price.cost(usage) == pytest.approx(0.1 * 3.0 + 0.6 * 0.3 + 0.3 * 3.75)


def test_without_the_extra_the_import_names_the_install_command() -> None:
    code = (
        "import sys; sys.modules['anthropic'] = None\n"
        "try:\n    import smyth_temporal.models._anthropic\n"
        "except ImportError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'smyth-temporal[anthropic]'" in out.stdout


def test_the_cache_read_share_of_a_usage() -> None:
    assert Usage(input_tokens=1000, cached_tokens=800).cache_read_share == 0.8
    assert Usage().cache_read_share == 0.0


async def test_a_real_key_quoted_in_an_error_is_masked_and_a_short_placeholder_is_not(
    fake: FakeAnthropicServer,
) -> None:
    key = "sk-ant-api03-abcdefghijklmnop"
    messages = []
    for given in (key, "bench"):
        provider = AnthropicProvider(base_url=fake.base_url, api_key=given)
        fake.enqueue(anthropic_error(401, "authentication_error", f"invalid x-api-key {given}"))
        with pytest.raises(ApplicationError) as raised:
            await provider.complete(request())
        messages.append(str(raised.value))
    assert key not in messages[0] and "abcdefghijklmnop" not in messages[0]
    assert messages[1].endswith("invalid x-api-key bench")
