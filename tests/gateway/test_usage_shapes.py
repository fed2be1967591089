"""The gateway's usage, read by the real ``openai`` client's types: every count arrives."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from openai.types import CompletionUsage as OpenAICompletionUsage
from openai.types.responses import ResponseUsage

from smyth_temporal.gateway._openai import CompletionUsage
from smyth_temporal.gateway._responses_output import usage_of
from smyth_temporal.types.messages import Usage

counts = st.integers(min_value=0, max_value=10**9)


@st.composite
def usages(draw: st.DrawFn) -> Usage:
    """A turn's usage whose parts fit inside its totals, as a provider reports them."""
    output = draw(counts)
    input_tokens = draw(counts)
    return Usage(
        requests=1,
        input_tokens=input_tokens,
        output_tokens=output,
        cached_tokens=draw(st.integers(0, input_tokens)),
        cache_write_tokens=draw(st.integers(0, input_tokens)),
        reasoning_tokens=draw(st.integers(0, output)),
    )


@given(usages())
def test_the_responses_usage_carries_the_reasoning_and_cache_write_tokens(usage: Usage) -> None:
    shaped = usage_of(usage)
    assert shaped is not None
    read = ResponseUsage.model_validate(shaped)

    assert read.output_tokens_details.reasoning_tokens == usage.reasoning_tokens
    assert read.input_tokens_details.cached_tokens == usage.cached_tokens
    # Smyth's own key beside OpenAI's (the client's type keeps only its own fields).
    assert shaped["input_tokens_details"]["cache_write_tokens"] == usage.cache_write_tokens
    assert (read.input_tokens, read.output_tokens) == (usage.input_tokens, usage.output_tokens)


@given(usages())
def test_a_chat_completions_usage_carries_the_reasoning_tokens(usage: Usage) -> None:
    shaped = CompletionUsage.of(usage)
    assert shaped is not None
    read = OpenAICompletionUsage.model_validate(shaped.model_dump())

    assert read.completion_tokens_details is not None
    assert read.completion_tokens_details.reasoning_tokens == usage.reasoning_tokens
    assert read.prompt_tokens_details is not None
    assert read.prompt_tokens_details.cached_tokens == usage.cached_tokens
