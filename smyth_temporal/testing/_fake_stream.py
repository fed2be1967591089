"""Chat completions as OpenAI streams them, for the fake server and the scripted model.

A streamed completion is a series of ``chat.completion.chunk`` objects: one with the
assistant's role, then the message in pieces (text, then each tool call's id and name
followed by its arguments), one with the finish reason and, when the request set
``stream_options.include_usage``, one with the usage and no choices.

Standard library only, like the fake server.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["StreamPlan", "plan_stream", "text_pieces"]

# Tool-call arguments are streamed in pieces this long when no piece size is given:
# compact JSON has no spaces to split words at, and a test should see several pieces.
_ARGUMENT_PIECE_CHARS = 8
# A word and the whitespace after it, or whitespace the text starts with.
_WORD = re.compile(r"\s+|\S+\s*")


def text_pieces(text: str, size: int | None = None) -> list[str]:
    """Split ``text`` into the pieces a model would stream; they join back to ``text``.

    Args:
        text: The text to split.
        size: Characters per piece; ``None`` splits into words, each with the
            whitespace after it (whitespace the text starts with is a piece of its own).

    Returns:
        The pieces, none empty (so none for an empty text).

    Raises:
        ValueError: If ``size`` is not positive.

    Added in 0.3.0.
    """
    if size is None:
        return _WORD.findall(text)
    if size < 1:
        raise ValueError(f"piece size must be positive, got {size}")
    return [text[start : start + size] for start in range(0, len(text), size)]


@dataclass(frozen=True)
class StreamPlan:
    """A chat completion as the chunks of its stream."""

    opening: dict[str, Any]
    """The first chunk: the assistant's role, no content yet."""
    pieces: list[dict[str, Any]]
    """The message, piece by piece: text, then each tool call's name and arguments."""
    closing: list[dict[str, Any]]
    """The finish reason, then (if asked for) usage."""


def plan_stream(
    body: Mapping[str, Any], *, with_usage: bool, piece_chars: int | None = None
) -> StreamPlan:
    """The chunks that stream the chat completion ``body`` (its first choice).

    Args:
        body: A chat completion, such as :func:`chat_completion` builds.
        with_usage: Whether to end with a usage chunk and put ``usage: null`` on the
            others (``stream_options.include_usage``).
        piece_chars: Characters per piece of text and arguments; ``None`` streams the
            text word by word and arguments eight characters at a time.

    Returns:
        The plan; the chunks are JSON-serialisable dicts.
    """
    choice = body["choices"][0]
    message = choice.get("message") or {}
    content = message.get("content")

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        choices = [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]
        return _chunk(body, choices, with_usage)

    # OpenAI opens a text answer with an empty text, and a tool-calling one with none.
    opening = chunk({"role": "assistant", "content": "" if content else None, "refusal": None})
    pieces = [chunk({"content": piece}) for piece in text_pieces(content or "", piece_chars)]
    for index, call in enumerate(message.get("tool_calls") or []):
        deltas = _call_deltas(index, call, piece_chars or _ARGUMENT_PIECE_CHARS)
        pieces.extend(chunk({"tool_calls": [delta]}) for delta in deltas)
    closing = [chunk({}, choice.get("finish_reason"))]
    if with_usage:
        closing.append({**_chunk(body, [], with_usage), "usage": body.get("usage")})
    return StreamPlan(opening=opening, pieces=pieces, closing=closing)


def _chunk(
    body: Mapping[str, Any], choices: list[dict[str, Any]], with_usage: bool
) -> dict[str, Any]:
    """A ``chat.completion.chunk`` of the completion ``body`` with these choices."""
    chunk: dict[str, Any] = {
        "id": body.get("id", "chatcmpl-fake"),
        "object": "chat.completion.chunk",
        "created": body.get("created", 0),
        "model": body.get("model", "fake-model"),
        "system_fingerprint": None,
        "choices": choices,
    }
    if with_usage:
        chunk["usage"] = None  # OpenAI sends usage: null on every chunk but the last
    return chunk


def _call_deltas(index: int, call: Mapping[str, Any], size: int) -> list[dict[str, Any]]:
    """One tool call as deltas: its id and name first, then its arguments in pieces."""
    function = call.get("function") or {}
    head = {
        "index": index,
        "id": call.get("id"),
        "type": call.get("type", "function"),
        "function": {"name": function.get("name"), "arguments": ""},
    }
    arguments = text_pieces(function.get("arguments") or "", size)
    return [head, *({"index": index, "function": {"arguments": piece}} for piece in arguments)]
