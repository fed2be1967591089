"""Invariants (Hypothesis) of the Google provider's conversions.

1. A conversation that grows keeps its prompt as a prefix: whatever the conversation
   after its instructions and task (system messages, users, assistants with text, tool calls
   and signed Gemini parts, tool results, in any order) and whatever is appended, the
   prompt parts of the earlier request, in the order Gemini caches them (system
   instruction, function declarations, contents), are the first parts of the later
   one: each step's prompt extends the last one's, so the implicit cache is read.
2. A streamed answer comes back together as it was: whatever parts an answer has
   (text, thoughts, function calls, signatures on any of them), the parts put back
   together from the fake's stream are the parts of the answer, signatures on the
   same parts, so a signed turn goes back unchanged whether it was streamed or not.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from google.genai import types as genai_types
from hypothesis import given
from hypothesis import strategies as st

from smyth_temporal.models._google import GEMINI_PART, GoogleProvider, _Parts
from smyth_temporal.testing._fake_google import _chunks
from smyth_temporal.types.messages import Message, ToolCall
from smyth_temporal.types.model import ModelRequest
from tests.helpers import conversations
from tests.helpers.conversations import TOOLS, texts

PROVIDER = GoogleProvider(api_key="gemini-invariant")
CALL_IDS = ("call_1_0", "call_1_1")


def signed(content: str | None, tool_calls: list[ToolCall], signature: str) -> Message:
    """An assistant message as the provider keeps a signed answer."""
    parts: list[dict[str, Any]] = [{"text": "thinking", "thought": True}]
    if content:
        parts.append({"text": content})
    parts.extend(
        {"function_call": {"name": c.name, "args": {"a": 1}}, "thought_signature": signature}
        for c in tool_calls
    )
    items = [{"type": GEMINI_PART, "part": part} for part in parts]
    return Message(role="assistant", content=content, tool_calls=tool_calls, provider_items=items)


messages = conversations.messages(
    CALL_IDS,
    tool_name="alpha",
    more=(
        st.builds(
            signed,
            st.none() | texts,
            conversations.tool_calls(CALL_IDS),
            st.sampled_from(["c2ln", "AP8="]),
        ),
    ),
)


def prompt(conversation: list[Message]) -> list[str]:
    params = PROVIDER.params(ModelRequest(model="m", messages=conversation, tools=TOOLS))
    config = params["config"]
    parts = [("system", p) for p in (config.get("system_instruction") or {}).get("parts", [])]
    for tool in config.get("tools") or []:
        parts.extend(("tool", d) for d in tool["function_declarations"])
    for content in params["contents"]:
        parts.extend((content["role"], p) for p in content["parts"])
    return [json.dumps(part, sort_keys=True) for part in parts]


@given(
    st.lists(st.builds(Message.system, texts), max_size=2),
    texts,
    st.lists(messages, max_size=8),
    st.lists(messages, max_size=4),
)
def test_a_growing_conversation_keeps_its_prompt_as_a_prefix(
    opening: list[Message], task: str, earlier: list[Message], appended: list[Message]
) -> None:
    # Every request has its task: the instructions (and memories) come before it.
    earlier = [*opening, Message.user(task), *earlier]
    before, after = prompt(earlier), prompt([*earlier, *appended])
    assert after[: len(before)] == before


part = st.one_of(
    st.builds(lambda text: {"text": text}, st.text(min_size=1, max_size=20)),
    st.builds(lambda text: {"text": text, "thought": True}, st.text(min_size=1, max_size=20)),
    st.builds(
        lambda name: {"functionCall": {"name": name, "args": {"a": 1}}},
        st.sampled_from(["alpha", "zeta"]),
    ),
)
answers = st.lists(
    st.tuples(part, st.booleans()).map(
        lambda pair: {**pair[0], "thoughtSignature": "c2lnbmVk"} if pair[1] else pair[0]
    ),
    min_size=1,
    max_size=6,
).filter(
    # The API never gives two unsigned text parts of the same kind in a row: it would
    # have written one; a stream cannot tell them apart, and neither can the provider.
    lambda parts: (
        not any(
            "text" in a
            and "text" in b
            and "thoughtSignature" not in a
            and bool(a.get("thought")) == bool(b.get("thought"))
            for a, b in itertools.pairwise(parts)
        )
    )
)


@given(answers)
def test_a_streamed_answer_comes_back_together_part_for_part(parts: list[dict[str, Any]]) -> None:
    answer = {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 1},
        "modelVersion": "m",
        "responseId": "r",
    }
    together = _Parts()
    for chunk in _chunks(answer):
        response = genai_types.GenerateContentResponse.model_validate(chunk)
        for piece in response.candidates[0].content.parts:  # type: ignore[index, union-attr]
            together.add(piece)
    expected = [genai_types.Part.model_validate(p) for p in parts]
    assert together.parts == expected
