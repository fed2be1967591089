"""Token estimates that need no tokenizer download (workflow-safe, deterministic)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from smyth_temporal.types.messages import Message

__all__ = ["CHARS_PER_TOKEN", "MESSAGE_OVERHEAD_TOKENS", "TokenCounter", "estimate_tokens"]

TokenCounter = Callable[[Sequence[Message]], int]
"""Counts the tokens of a prompt. Runs in workflow code, so it must be deterministic
and do no I/O (an exact tokenizer whose vocabulary is already on disk qualifies)."""

CHARS_PER_TOKEN = 3.5
"""Characters per token assumed by the estimate.

OpenAI's tokenizers average about 4 characters per token on English prose and fewer
on JSON, code and numbers, which tool results are full of; 3.5 errs towards
overestimating, so a prompt is compacted a little early rather than rejected.
"""

MESSAGE_OVERHEAD_TOKENS = 4
"""Tokens each message costs beyond its text (role and separators, per OpenAI's guide)."""


def estimate_tokens(messages: Sequence[Message]) -> int:
    """Estimate the tokens ``messages`` take in a chat-completions prompt.

    Args:
        messages: The prompt.

    Returns:
        An estimate that errs high by a few percent on typical agent conversations.

    Added in 0.2.0.
    """
    chars = 0
    for message in messages:
        chars += len(message.content or "")
        for call in message.tool_calls:
            chars += len(call.name) + len(call.arguments) + len(call.id)
        if message.tool_call_id:
            chars += len(message.tool_call_id)
    return int(chars / CHARS_PER_TOKEN) + MESSAGE_OVERHEAD_TOKENS * len(messages)
