"""Hypothesis strategies for conversations, shared by the providers' invariants.

Each provider's invariant (``tests/invariants/test_anthropic_prefix.py``,
``test_google_parts.py``, ``test_responses_items.py``) draws the same conversations:
system messages, users, assistants with or without text and tool calls, tool results, in
any order. What differs is the call ids a provider writes and what its assistants carry
(thinking blocks, reasoning items, signed parts): those are the arguments here.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from smyth_temporal.types.messages import Message, ToolCall

TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
    for name in ("zeta", "alpha", "mid")
]
"""Three tools, not in name order (a provider sorting them must still cache them)."""

texts = st.text(max_size=12)


def tool_calls(call_ids: tuple[str, str]) -> st.SearchStrategy[list[ToolCall]]:
    """Up to two calls of ``alpha`` or ``zeta``, with ``call_ids`` and odd arguments too."""
    return st.lists(
        st.builds(
            ToolCall,
            id=st.sampled_from(call_ids),
            name=st.sampled_from(["alpha", "zeta"]),
            arguments=st.sampled_from(['{"a": 1}', "[]", "not json", "{}"]),
        ),
        max_size=2,
    )


def messages(
    call_ids: tuple[str, str],
    *,
    provider_items: st.SearchStrategy[list[dict[str, Any]]] | None = None,
    tool_name: str | None = None,
    more: tuple[st.SearchStrategy[Message], ...] = (),
) -> st.SearchStrategy[Message]:
    """Any message of a conversation.

    Args:
        call_ids: The ids of the provider's tool calls (their results answer them).
        provider_items: What an assistant message carries for its provider (nothing when
            omitted).
        tool_name: The name a tool result carries (none when omitted).
        more: Other messages the provider's conversations have.
    """
    return st.one_of(
        st.builds(Message.system, texts),
        st.builds(Message.user, texts),
        st.builds(
            lambda content, calls, items: Message(
                role="assistant", content=content, tool_calls=calls, provider_items=items
            ),
            st.none() | texts,
            tool_calls(call_ids),
            provider_items if provider_items is not None else st.just([]),
        ),
        *more,
        st.builds(
            lambda call_id, content: Message(
                role="tool", tool_call_id=call_id, name=tool_name, content=content
            ),
            st.sampled_from(call_ids),
            texts,
        ),
    )
