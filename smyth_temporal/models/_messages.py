"""What the native providers read out of a conversation the same way."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from smyth_temporal.types.messages import Message, ToolCall

__all__ = ["arguments_object", "leading_system"]


def leading_system(messages: Sequence[Message]) -> list[Message]:
    """The system messages the conversation opens with: instructions, then memories.

    The vendors' APIs take them apart from the turns (a system prompt, a system
    instruction); a system message after the conversation began is a turn's text.
    """
    leading: list[Message] = []
    for message in messages:
        if message.role != "system":
            break
        leading.append(message)
    return leading


def arguments_object(call: ToolCall) -> dict[str, Any]:
    """A tool call's arguments as the JSON object the vendors' APIs want.

    The arguments are kept as the model wrote them; what is not a JSON object is
    wrapped (``{"arguments": text}`` for text that is not JSON, ``{"value": ...}`` for
    another JSON value), so the call still goes back to the model as it was made.
    """
    try:
        parsed = json.loads(call.arguments)
    except ValueError:
        return {"arguments": call.arguments}
    return parsed if isinstance(parsed, dict) else {"value": parsed}
