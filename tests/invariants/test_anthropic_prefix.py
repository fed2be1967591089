"""Invariant (Hypothesis): a conversation that grows keeps its cached prefix.

Whatever the conversation (system messages before and after it began, users, assistants
with text, tool calls and signed thinking, tool results, in any order) and whatever is
appended, the prompt blocks of the earlier request, in the order the API caches them
(tools, system, messages), are the first blocks of the later request, byte for byte
without their ``cache_control`` markers: each step's prompt extends the last one's, so
the cache the last step wrote is read. And each request has at most four breakpoints,
the API's limit.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from smyth_temporal.models._anthropic import AnthropicProvider
from smyth_temporal.testing._fake_anthropic import _prompt_blocks
from smyth_temporal.types.messages import Message
from smyth_temporal.types.model import ModelRequest
from tests.helpers import conversations
from tests.helpers.conversations import TOOLS, texts

PROVIDER = AnthropicProvider(api_key="sk-ant-invariant")
thinking = st.lists(
    st.builds(
        lambda text: {"type": "thinking", "thinking": text, "signature": f"sig-{text}"}, texts
    ),
    max_size=1,
)
messages = conversations.messages(("toolu_1", "toolu_2"), provider_items=thinking)


def blocks(conversation: list[Message]) -> list[str]:
    params = PROVIDER.params(ModelRequest(model="m", messages=conversation, tools=TOOLS))
    return [canonical for canonical, _, _ in _prompt_blocks(params)]


def breakpoints(conversation: list[Message]) -> int:
    params = PROVIDER.params(ModelRequest(model="m", messages=conversation, tools=TOOLS))
    return sum(marked for _, _, marked in _prompt_blocks(params))


@given(st.lists(messages, max_size=8), st.lists(messages, max_size=4))
def test_a_growing_conversation_keeps_its_prompt_as_a_prefix(
    earlier: list[Message], appended: list[Message]
) -> None:
    before, after = blocks(earlier), blocks([*earlier, *appended])
    assert after[: len(before)] == before
    assert breakpoints([*earlier, *appended]) <= 4
