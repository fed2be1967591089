"""Invariant: a call's reservation never assumes fewer reply tokens than its provider sends."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from smyth_temporal.activities._budget import BudgetGuard
from smyth_temporal.models import ProviderPrefixes
from smyth_temporal.models._anthropic import AnthropicProvider
from smyth_temporal.models._google import GoogleProvider, _config
from smyth_temporal.testing import ScriptedModel
from smyth_temporal.types.budget import PriceTable
from smyth_temporal.types.messages import Message
from smyth_temporal.types.model import ModelRequest

_ANTHROPIC = AnthropicProvider(api_key="sk-ant-test-key")
_GUARD = BudgetGuard(PriceTable(), ProviderPrefixes(ScriptedModel([]), {"anthropic": _ANTHROPIC}))

_GEMINI_GUARD = BudgetGuard(PriceTable(), GoogleProvider(api_key="gemini-test-key"))

_bounds = st.one_of(st.none(), st.integers(1, 200_000))


@given(max_tokens=_bounds, temperature=st.one_of(st.none(), st.floats(0, 1)))
def test_a_claude_reservation_holds_the_max_tokens_the_provider_sends(
    max_tokens: int | None, temperature: float | None
) -> None:
    settings: dict[str, Any] = {}
    if max_tokens is not None:
        settings["max_tokens"] = max_tokens
    if temperature is not None:
        settings["temperature"] = temperature
    request = ModelRequest(
        model="anthropic:claude-sonnet-4-5", messages=[Message.user("Hi")], settings=settings
    )
    sent = _ANTHROPIC.params(request.model_copy(update={"model": "claude-sonnet-4-5"}))
    assert _GUARD._estimate(request).output_tokens == sent["max_tokens"]


@given(max_tokens=_bounds, max_output_tokens=_bounds)
def test_a_gemini_reservation_holds_the_bound_the_provider_sends(
    max_tokens: int | None, max_output_tokens: int | None
) -> None:
    settings = {
        k: v
        for k, v in {"max_tokens": max_tokens, "max_output_tokens": max_output_tokens}.items()
        if v is not None
    }
    request = ModelRequest(model="gemini-2.5-pro", messages=[Message.user("Hi")], settings=settings)
    sent = _config(request).get("max_output_tokens")
    reserved = _GEMINI_GUARD._estimate(request).output_tokens
    # What Gemini is sent bounds the reply; nothing sent, the model's 65,536 does. Both
    # names set and disagreeing, the reservation read max_tokens while the later
    # max_output_tokens was sent (found by this test).
    assert reserved >= (sent if sent is not None else 65_536)
