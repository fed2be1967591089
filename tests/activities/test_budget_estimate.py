"""What a model call reserves before it is made: its prompt and its reply's bound."""

from __future__ import annotations

import pytest

from smyth_temporal.activities._budget import DEFAULT_OUTPUT_ESTIMATE, _estimate
from smyth_temporal.activities.model import ModelActivities
from smyth_temporal.models import (
    AnthropicProvider,
    GoogleProvider,
    ModelProvider,
    ModelRouter,
    ProviderPrefixes,
)
from smyth_temporal.testing import ScriptedModel
from smyth_temporal.types.budget import Price, PriceTable
from smyth_temporal.types.messages import Message
from smyth_temporal.types.model import ModelRequest

DEFAULT_MAX_TOKENS = 4096
"""AnthropicProvider's ``max_tokens`` when a request sets none (its documented default)."""


@pytest.mark.parametrize("name", ["max_tokens", "max_completion_tokens", "max_output_tokens"])
def test_a_reservation_assumes_the_replys_bound_by_any_of_its_names(name: str) -> None:
    # Sent as max_output_tokens (the Responses and Gemini APIs' name, passed through by
    # their providers), the bound was not read: the call reserved 1,024 reply tokens
    # whatever it allowed.
    request = ModelRequest(model="m", messages=[Message.user("Hi")], settings={name: 8_000})
    assert _estimate(request).output_tokens == 8_000
    unbounded = ModelRequest(model="m", messages=[Message.user("Hi")])
    assert _estimate(unbounded).output_tokens == DEFAULT_OUTPUT_ESTIMATE


def _activities(provider: ModelProvider) -> ModelActivities:
    return ModelActivities(provider, PriceTable.of({"*": Price(input=1.0, output=1.0)}))


def test_a_claude_call_reserves_the_reply_tokens_its_provider_sends() -> None:
    # AnthropicProvider sends max_tokens=4096 when the request sets none, while the
    # reservation assumed 1,024 reply tokens: a Claude call could cost ~4x what it held.
    anthropic = AnthropicProvider(api_key="sk-ant-test-key")
    provider = ProviderPrefixes(ScriptedModel([]), {"anthropic": anthropic})
    guard = _activities(provider)._budget
    claude = ModelRequest(model="anthropic:claude-sonnet-4-5", messages=[Message.user("Hi")])
    assert guard._estimate(claude).output_tokens == DEFAULT_MAX_TOKENS
    assert anthropic.params(claude)["max_tokens"] == DEFAULT_MAX_TOKENS
    # The request's own bound still wins; a provider that does not say keeps the default.
    bounded = claude.model_copy(update={"settings": {"max_tokens": 300}})
    assert guard._estimate(bounded).output_tokens == 300
    plain = ModelRequest(model="gpt-4o-mini", messages=[Message.user("Hi")])
    assert guard._estimate(plain).output_tokens == DEFAULT_OUTPUT_ESTIMATE


def test_a_gemini_call_reserves_the_models_own_output_limit() -> None:
    # GoogleProvider sends no max_output_tokens unless asked: Gemini then stops at the
    # model's limit (65,536 tokens for 2.5), not at the 1,024 a reservation assumed.
    router = ModelRouter(
        {"gemini-*": GoogleProvider(api_key="gemini-test-key"), "*": ScriptedModel([])}
    )
    guard = _activities(router)._budget

    def reserved(model: str, **settings: int) -> int:
        request = ModelRequest(model=model, messages=[Message.user("Hi")], settings=settings)
        return guard._estimate(request).output_tokens

    assert reserved("gemini-2.5-pro") == 65_536
    assert reserved("gemini-2.0-flash") == 8_192
    assert reserved("gemini-2.5-flash", max_tokens=2_000) == 2_000
    assert reserved("gemini-2.5-flash", max_output_tokens=3_000) == 3_000
    assert reserved("llama3:8b") == DEFAULT_OUTPUT_ESTIMATE


def test_a_model_no_provider_serves_reserves_the_default_and_fails_in_the_call() -> None:
    guard = _activities(ModelRouter({"gemini-*": ScriptedModel([])}))._budget
    request = ModelRequest(model="claude-x", messages=[Message.user("Hi")])
    assert guard._estimate(request).output_tokens == DEFAULT_OUTPUT_ESTIMATE
