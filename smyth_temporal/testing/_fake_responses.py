"""The OpenAI Responses API as ``FakeOpenAIServer`` speaks it (``POST /v1/responses``).

A scripted answer (:func:`responses_answer`) is a ``response`` object; the server
finishes it from the request the way the API would:

* **Reasoning items.** With ``include=["reasoning.encrypted_content"]`` each
  reasoning item gets an ``encrypted_content``: an HMAC of the item under a key of
  this server. A request that sends back a reasoning item the server did not issue,
  or one altered, gets the API's 400 (``invalid_encrypted_content``), and so does a
  reasoning item without the item it led to after it (the API's "provided without
  its required following item"); one without encrypted content, while ``store`` is
  off, names an item the server never stored: 404.
* **Prompt caching** as OpenAI documents it: the prompt (tools, instructions, then
  the input items) is cached by prefix, per model, after each request; a later
  request reads the longest cached prefix ending at an item boundary, counted from
  1,024 tokens in steps of 128 (``input_tokens_details.cached_tokens``).
* **Usage**, when the script gives none: a block's canonical JSON (sorted keys) has
  ``ceil(chars / 4)`` tokens; output tokens count the answer's text, arguments and
  reasoning summaries, the last as ``output_tokens_details.reasoning_tokens``.
* **Streaming** (``"stream": true``): ``response.created``, then each output item as
  ``response.output_item.added``, its text as ``response.output_text.delta`` a word
  at a time (or its arguments as ``response.function_call_arguments.delta``),
  ``response.output_item.done``, and ``response.completed`` with the whole response.

Standard library only, like the server.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

from smyth_temporal.testing._fake_stream import StreamPlan, text_pieces

__all__ = ["ResponsesLedger", "plan_responses_stream", "responses_answer"]

_CHARS_PER_TOKEN = 4
_CACHE_MINIMUM = 1024  # OpenAI caches prompts from this many tokens ...
_CACHE_STEP = 128  # ... and reports hits in steps of this many
_ARGUMENT_PIECE_CHARS = 8
_ENCRYPTED_CONTENT = "reasoning.encrypted_content"


def responses_answer(
    text: str | None = None,
    function_calls: list[tuple[str, str, dict[str, Any] | str]] | None = None,
    *,
    reasoning: str | None = None,
    model: str = "fake-model",
    status: str = "completed",
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A Responses API ``response`` object: reasoning, then text, then function calls.

    Pass it to :meth:`FakeOpenAIServer.enqueue`, as is or in a ``FakeResponse``.

    Args:
        text: The assistant message's text, if any.
        function_calls: ``(call_id, name, arguments)``; dict arguments are JSON-encoded.
        reasoning: A reasoning item's summary text (its ``encrypted_content`` is
            filled in by the server when the request asks for it).
        model: The model the response names.
        status: ``completed``, or ``incomplete`` (then ``max_output_tokens`` is why).
        usage: The usage to report; ``None``: the server counts it from the request.

    Returns:
        The body as a JSON-serialisable dict.
    """
    output: list[dict[str, Any]] = []
    if reasoning is not None:
        summary = [{"type": "summary_text", "text": reasoning}]
        output.append({"type": "reasoning", "id": _id("rs"), "summary": summary})
    if text is not None:
        output.append(
            {
                "type": "message",
                "id": _id("msg"),
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        )
    for call_id, name, arguments in function_calls or []:
        output.append(
            {
                "type": "function_call",
                "id": _id("fc"),
                "call_id": call_id,
                "name": name,
                "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                "status": "completed",
            }
        )
    incomplete = {"reason": "max_output_tokens"} if status == "incomplete" else None
    return {
        "id": _id("resp"),
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "model": model,
        "output": output,
        "error": None,
        "incomplete_details": incomplete,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage,
    }


class ResponsesLedger:
    """What the server remembers between Responses requests: its key and its cache."""

    def __init__(self) -> None:
        self._key = uuid.uuid4().bytes
        self._lock = threading.Lock()
        self._cached: set[tuple[str, str]] = set()  # (model, prefix digest)

    def refusal(self, request: Any) -> tuple[int, str, str] | None:
        """How the API would refuse ``request``'s reasoning items: status, message, code.

        ``None``: it would not. A reasoning item without encrypted content names an item
        the server stored, which it did not (``store`` false): 404.
        """
        items = request.get("input") if isinstance(request, dict) else None
        if not isinstance(items, list):
            return None
        for index, item in enumerate(items):
            if not isinstance(item, dict) or item.get("type") != "reasoning":
                continue
            if item.get("encrypted_content") is None and not request.get("store"):
                message = (
                    f"Item with id '{item.get('id')}' not found. Items are not persisted "
                    "when `store` is set to false."
                )
                return 404, message, "item_not_found"
            if item.get("encrypted_content") != self._seal(item):
                message = f"The encrypted content for item {item.get('id')} could not be verified."
                return 400, message, "invalid_encrypted_content"
            following = next(
                (
                    i
                    for i in items[index + 1 :]
                    if isinstance(i, dict) and i.get("type") != "reasoning"
                ),
                None,
            )
            if following is None or not _produced(following):
                message = (
                    f"Item '{item.get('id')}' of type 'reasoning' was provided without "
                    "its required following item."
                )
                return 400, message, "invalid_request_error"
        return None

    def finish(self, body: dict[str, Any], request: Any) -> dict[str, Any]:
        """``body`` as the API would send it for ``request``: sealed, with usage."""
        body = json.loads(json.dumps(body))  # the script's copy stays as it was
        request = request if isinstance(request, dict) else {}
        include = request.get("include") or []
        for item in body.get("output", []):
            if item.get("type") == "reasoning":
                item["encrypted_content"] = (
                    self._seal(item) if _ENCRYPTED_CONTENT in include else None
                )
        if body.get("usage") is None:
            body["usage"] = self._usage(body, request)
        return body

    def _seal(self, item: dict[str, Any]) -> str:
        summary = json.dumps(item.get("summary"), sort_keys=True)
        message = f"{item.get('id')}\n{summary}".encode()
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()

    def _usage(self, body: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
        model = str(request.get("model"))
        total, cached = 0, 0
        digest = hashlib.sha256()
        prefixes: list[str] = []
        for block in _prompt_blocks(request):
            total += _tokens(block)
            digest.update(json.dumps(block, sort_keys=True).encode())
            key = digest.copy().hexdigest()
            prefixes.append(key)
            with self._lock:
                if (model, key) in self._cached:
                    cached = total
        with self._lock:
            self._cached.update((model, key) for key in prefixes)
        reasoning = sum(
            _tokens(part["text"])
            for item in body.get("output", [])
            if item.get("type") == "reasoning"
            for part in item.get("summary", [])
        )
        answer = sum(_tokens(_item_text(item)) for item in body.get("output", []))
        return {
            "input_tokens": total,
            "input_tokens_details": {"cached_tokens": _reported_hit(cached)},
            "output_tokens": answer + reasoning,
            "output_tokens_details": {"reasoning_tokens": reasoning},
            "total_tokens": total + answer + reasoning,
        }


def plan_responses_stream(body: dict[str, Any]) -> StreamPlan:
    """The server-sent events of a streamed ``body`` (each event's data has its ``type``)."""
    created = {**body, "status": "in_progress", "output": [], "usage": None}
    pieces: list[dict[str, Any]] = []
    for index, item in enumerate(body.get("output", [])):
        pieces.extend(_item_events(index, item))
    closing_type = "response.completed" if body.get("status") == "completed" else ""
    closing_type = closing_type or f"response.{body.get('status')}"
    return StreamPlan(
        opening={"type": "response.created", "response": created},
        pieces=pieces,
        closing=[{"type": closing_type, "response": body}],
    )


def _item_events(index: int, item: dict[str, Any]) -> Iterator[dict[str, Any]]:
    kind = item.get("type")
    if kind == "message":
        yield {
            "type": "response.output_item.added",
            "output_index": index,
            "item": {**item, "status": "in_progress", "content": []},
        }
        for part_index, part in enumerate(item.get("content", [])):
            empty = {**part, "text": ""}
            yield {
                "type": "response.content_part.added",
                "item_id": item["id"],
                "output_index": index,
                "content_index": part_index,
                "part": empty,
            }
            for piece in text_pieces(part.get("text", "")):
                yield {
                    "type": "response.output_text.delta",
                    "item_id": item["id"],
                    "output_index": index,
                    "content_index": part_index,
                    "delta": piece,
                    "logprobs": [],
                }
            yield {
                "type": "response.output_text.done",
                "item_id": item["id"],
                "output_index": index,
                "content_index": part_index,
                "text": part.get("text", ""),
                "logprobs": [],
            }
    elif kind == "function_call":
        yield {
            "type": "response.output_item.added",
            "output_index": index,
            "item": {**item, "status": "in_progress", "arguments": ""},
        }
        for piece in text_pieces(item.get("arguments", ""), _ARGUMENT_PIECE_CHARS):
            yield {
                "type": "response.function_call_arguments.delta",
                "item_id": item["id"],
                "output_index": index,
                "delta": piece,
            }
    else:
        yield {"type": "response.output_item.added", "output_index": index, "item": item}
    yield {"type": "response.output_item.done", "output_index": index, "item": item}


def _prompt_blocks(request: dict[str, Any]) -> Iterator[Any]:
    """The prompt in the order the cache sees it: tools, instructions, input items."""
    yield from request.get("tools") or []
    if request.get("instructions"):
        yield request["instructions"]
    items = request.get("input")
    if isinstance(items, str):
        yield items
    elif isinstance(items, list):
        yield from items


def _produced(item: dict[str, Any]) -> bool:
    """Whether ``item`` is one a model outputs (what a reasoning item leads to)."""
    return item.get("type") == "function_call" or item.get("role") == "assistant"


def _item_text(item: dict[str, Any]) -> str:
    if item.get("type") == "message":
        return "".join(part.get("text", "") for part in item.get("content", []))
    if item.get("type") == "function_call":
        return f"{item.get('name')}{item.get('arguments')}"
    return ""


def _tokens(block: Any) -> int:
    text = block if isinstance(block, str) else json.dumps(block, sort_keys=True)
    return math.ceil(len(text) / _CHARS_PER_TOKEN)


def _reported_hit(tokens: int) -> int:
    """Cached tokens as OpenAI reports them: none under 1,024, then in steps of 128."""
    if tokens < _CACHE_MINIMUM:
        return 0
    return _CACHE_MINIMUM + (tokens - _CACHE_MINIMUM) // _CACHE_STEP * _CACHE_STEP


def _id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:16]}"
