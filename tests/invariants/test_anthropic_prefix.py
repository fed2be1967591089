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
from smyth_temporal.types.messages import Message, ToolCall
from smyth_temporal.types.model import ModelRequest

PROVIDER = AnthropicProvider(api_key="sk-ant-invariant")
TOOLS = [
    {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
    for name in ("zeta", "alpha", "mid")
]

texts = st.text(max_size=12)
calls = st.lists(
    st.builds(
        ToolCall,
        id=st.sampled_from(["toolu_1", "toolu_2"]),
        name=st.sampled_from(["alpha", "zeta"]),
        arguments=st.sampled_from(['{"a": 1}', "[]", "not json", "{}"]),
    ),
    max_size=2,
)
thinking = st.lists(
    st.builds(
        lambda text: {"type": "thinking", "thinking": text, "signature": f"sig-{text}"}, texts
    ),
    max_size=1,
)
messages = st.one_of(
    st.builds(Message.system, texts),
    st.builds(Message.user, texts),
    st.builds(
        lambda content, tool_calls, items: Message(
            role="assistant", content=content, tool_calls=tool_calls, provider_items=items
        ),
        st.none() | texts,
        calls,
        thinking,
    ),
    st.builds(
        lambda call_id, content: Message(role="tool", tool_call_id=call_id, content=content),
        st.sampled_from(["toolu_1", "toolu_2"]),
        texts,
    ),
)


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
