"""The request every provider's tests send: instructions, a question, two tools.

``tests/models/test_anthropic_provider.py``, ``test_google_provider.py`` and
``test_openai_responses.py`` build the same prompt for their own model and fake server.
"""

from __future__ import annotations

from typing import Any

from smyth_temporal.types.messages import Message
from smyth_temporal.types.model import ModelRequest

QUOTE_TOOL = {
    "type": "function",
    "function": {
        "name": "get_quote",
        "description": "Latest price for a ticker symbol.",
        "parameters": {"type": "object", "properties": {"symbol": {"type": "string"}}},
    },
}
NOTE_TOOL = {
    "type": "function",
    "function": {"name": "add_note", "parameters": {"type": "object", "properties": {}}},
}


def quote_request(
    model: str,
    instructions: str,
    *messages: Message,
    step: int = 0,
    settings: dict[str, Any] | None = None,
) -> ModelRequest:
    """Ask ``model`` to quote ACME with both tools, ``messages`` following the question.

    Args:
        model: The model name the provider sees (without its ``provider:`` prefix).
        instructions: The system prompt (long enough for the provider to cache).
        *messages: The turn so far, after the question.
        step: The request's step.
        settings: Model settings; none when omitted.
    """
    prompt = [Message.system(instructions), Message.user("Quote ACME"), *messages]
    return ModelRequest(
        model=model,
        messages=prompt,
        tools=[QUOTE_TOOL, NOTE_TOOL],
        step=step,
        settings=settings or {},
    )
