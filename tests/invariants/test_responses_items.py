"""Invariant (Hypothesis): the Responses provider's input keeps its prefix and is never refused.

Whatever the conversation (system messages before and after it began, users, assistants
with text or not, tool calls or not, reasoning items or not, tool results, in any
order) and whatever is appended:

* the earlier request's prompt (tools, then input items, as OpenAI's cache reads it) is
  the start of the later request's, byte for byte, so the prefix cached by one step is
  read by the next; and the tools come in the same order whatever order they are given;
* the fake Responses API, which refuses a reasoning item not followed by the item it led
  to (as the API does), accepts every request's input.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from smyth_temporal.models._openai_responses import params
from smyth_temporal.testing._fake_responses import ResponsesLedger, _prompt_blocks
from smyth_temporal.types.messages import Message
from smyth_temporal.types.model import ModelRequest
from tests.helpers import conversations
from tests.helpers.conversations import TOOLS, texts

LEDGER = ResponsesLedger()


def sealed(text: str) -> dict[str, object]:
    """A reasoning item as the fake API gives it out (sealed by its key)."""
    item: dict[str, object] = {
        "type": "reasoning",
        "id": f"rs_{abs(hash(text))}",
        "summary": [{"type": "summary_text", "text": text}],
    }
    item["encrypted_content"] = LEDGER._seal(item)
    return item


reasoning = st.lists(st.builds(sealed, texts), max_size=2)
messages = conversations.messages(("call_1", "call_2"), provider_items=reasoning)


def wire(conversation: list[Message], tools: list[dict[str, Any]] = TOOLS) -> dict[str, Any]:
    return params(ModelRequest(model="m", messages=conversation, tools=tools))


def prompt(conversation: list[Message]) -> list[str]:
    return [json.dumps(block, sort_keys=True) for block in _prompt_blocks(wire(conversation))]


@given(st.lists(messages, max_size=8), st.lists(messages, max_size=4))
def test_a_growing_conversation_keeps_its_prompt_as_a_prefix(
    earlier: list[Message], appended: list[Message]
) -> None:
    before, after = prompt(earlier), prompt([*earlier, *appended])
    assert after[: len(before)] == before


@given(st.lists(messages, max_size=10))
def test_the_api_never_refuses_the_reasoning_items_sent_back(conversation: list[Message]) -> None:
    assert LEDGER.refusal(wire(conversation)) is None


@given(st.permutations(TOOLS))
def test_the_tools_go_in_one_order_whatever_order_they_are_given(
    tools: list[dict[str, Any]],
) -> None:
    assert wire([], tools)["tools"] == wire([])["tools"]
