"""A fake Anthropic Messages API server for tests, with prompt caching as the API does it.

Like :class:`~smyth_temporal.testing.FakeOpenAIServer`, it fakes only the HTTP edge,
so the real ``anthropic`` client builds the requests and parses the answers:

* ``POST /v1/messages`` answers with the turns a test scripted (:meth:`enqueue`, FIFO):
  text, tool use, extended thinking, or an error (:func:`anthropic_error`: a 429 with
  ``retry-after``, a 529 ``overloaded_error``, ...). ``"stream": true`` gets the
  answer as the API streams it: ``message_start``, each block's
  ``content_block_start``/``_delta``/``_stop`` (text a word at a time, tool input as
  ``input_json_delta``, thinking then its ``signature_delta``), ``message_delta``,
  ``message_stop``.
* **Thinking signatures.** Each thinking block it gives out is signed (an HMAC of the
  text under a key of this server); a request whose assistant turns carry a thinking
  block it did not issue, or one altered, gets a 400, as the API refuses them.
* **Prompt caching**, as the API documents it: the prompt is the sequence of blocks
  tools, then system, then the messages' content blocks; a block with
  ``cache_control`` is a breakpoint. Each breakpoint's prefix is written to the cache
  (``cache_creation_input_tokens``: the tokens after the longest prefix already
  cached); the longest cached prefix ending at a block boundary at most 20 blocks
  before a breakpoint is read (``cache_read_input_tokens``); ``input_tokens`` is
  the rest. Prefixes are compared without their ``cache_control`` markers and per
  model; entries never expire.
* **Token counts** are a deterministic approximation: a block's canonical JSON
  (sorted keys, no ``cache_control``) has ``ceil(chars / 4)`` tokens.
* **Context window.** With ``context_window`` set, a prompt of more tokens gets the
  API's 400 ``prompt is too long: N tokens > M maximum``.

Built on the standard library (``http.server``) in a daemon thread.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from smyth_temporal.testing._fake_http import Exchange
from smyth_temporal.testing._fake_scripted import CacheReport, ScriptedFake

__all__ = [
    "AnthropicTurn",
    "CacheReport",
    "FakeAnthropicServer",
    "anthropic_error",
    "anthropic_turn",
]

_MESSAGES_PATH = "/v1/messages"
_CHARS_PER_TOKEN = 4
_LOOKBACK_BLOCKS = 20  # the API checks this many block boundaries before a breakpoint


@dataclass(frozen=True)
class AnthropicTurn:
    """One scripted answer: blocks of a message, or an HTTP error.

    Attributes:
        blocks: The answer's content blocks (``text``, ``tool_use``, ``thinking``);
            a thinking block's signature is filled in by the server.
        stop_reason: The message's stop reason.
        status: The HTTP status (200 for a message).
        error: For an error: the body's ``error`` object (``type``, ``message``).
        headers: Extra response headers (``retry-after``).
    """

    blocks: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str = "end_turn"
    status: int = 200
    error: dict[str, str] | None = None
    headers: dict[str, str] = field(default_factory=dict)


def anthropic_turn(
    text: str | None = None,
    tool_uses: list[tuple[str, str, dict[str, Any]]] | None = None,
    *,
    thinking: str | None = None,
) -> AnthropicTurn:
    """A scripted answer: thinking first, then text, then ``(id, name, input)`` tool uses."""
    blocks: list[dict[str, Any]] = []
    if thinking is not None:
        blocks.append({"type": "thinking", "thinking": thinking})
    if text is not None:
        blocks.append({"type": "text", "text": text})
    for call_id, name, arguments in tool_uses or []:
        blocks.append({"type": "tool_use", "id": call_id, "name": name, "input": arguments})
    return AnthropicTurn(blocks=blocks, stop_reason="tool_use" if tool_uses else "end_turn")


def anthropic_error(
    status: int, error_type: str, message: str, *, retry_after: float | None = None
) -> AnthropicTurn:
    """A scripted error in the API's shape: ``anthropic_error(529, "overloaded_error", "...")``."""
    headers = {"retry-after": f"{retry_after:g}"} if retry_after is not None else {}
    return AnthropicTurn(
        status=status, error={"type": error_type, "message": message}, headers=headers
    )


class FakeAnthropicServer(ScriptedFake[AnthropicTurn]):
    """A fake Messages API on 127.0.0.1 and an ephemeral port (``with`` or ``async with``).

    Point ``anthropic.AsyncAnthropic(base_url=server.base_url, ...)`` at it. With no
    scripted turn left it answers 500, so an under-scripted test fails readably.
    """

    def __init__(
        self,
        *,
        context_window: int | None = None,
        respond: Callable[[dict[str, Any]], AnthropicTurn] | None = None,
    ) -> None:
        """A server.

        Args:
            context_window: Refuse longer prompts, as the API does.
            respond: Answers a request (its JSON body) when no scripted turn is left,
                for runs whose requests are not known in advance (a compaction's
                summary call comes between two turns).
        """
        super().__init__(respond)
        self.context_window = context_window
        self._cache: set[str] = set()
        self._key = uuid.uuid4().bytes

    def answer(self, exchange: Exchange) -> None:
        """Answer ``POST /v1/messages`` (JSON or streamed); anything else is a 404."""
        body = exchange.request.json
        path = urlsplit(exchange.request.path).path.rstrip("/")
        if path != _MESSAGES_PATH or not isinstance(body, dict):
            exchange.send_json(*_error(404, "not_found_error", f"no such endpoint: {path}"))
            return
        try:
            status, answer, extra = self._answer(body)
        except Exception as exc:  # a request the fake cannot read: say so, as a 500
            status, answer, extra = _error(500, "api_error", f"fake server failed: {exc!r}")
        if status != 200 or body.get("stream") is not True:
            exchange.send_json(status, answer, extra)
            return
        exchange.start_stream()
        for name, event in _events(answer):
            exchange.event(json.dumps(event), name)
        exchange.end_stream()

    def sign(self, thinking: str) -> str:
        """The signature this server gives a thinking block with this text."""
        return hmac.new(self._key, thinking.encode(), hashlib.sha256).hexdigest()

    # -- the API's behaviour ---------------------------------------------------------

    def _answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
        """The status, JSON body and headers for one Messages request."""
        refused = self._check_signatures(body)
        if refused:
            return _error(400, "invalid_request_error", refused)
        blocks = list(_prompt_blocks(body))
        total = sum(tokens for _, tokens, _ in blocks)
        if self.context_window is not None and total > self.context_window:
            too_long = f"prompt is too long: {total} tokens > {self.context_window} maximum"
            return _error(400, "invalid_request_error", too_long)
        turn = self._next_turn(body)
        if turn is None:
            return _error(500, "api_error", "fake Anthropic server has no scripted turn left")
        if turn.error is not None:
            return _error(turn.status, turn.error["type"], turn.error["message"], turn.headers)
        read, written = self._cache_use(str(body.get("model")), blocks)
        content = [self._signed(block) for block in turn.blocks]
        output = sum(_tokens(block) for block in content)
        report = CacheReport(total - read - written, read, written, output)
        self._report(report)
        message: dict[str, Any] = {
            "id": f"msg_{uuid.uuid4().hex[:24]}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model"),
            "content": content,
            "stop_reason": turn.stop_reason,
            "stop_sequence": None,
            "usage": {
                "input_tokens": report.input_tokens,
                "cache_read_input_tokens": read,
                "cache_creation_input_tokens": written,
                "output_tokens": output,
            },
        }
        return 200, message, turn.headers

    def _signed(self, block: dict[str, Any]) -> dict[str, Any]:
        if block.get("type") != "thinking":
            return block
        return {**block, "signature": self.sign(str(block.get("thinking", "")))}

    def _check_signatures(self, body: dict[str, Any]) -> str | None:
        """Why the request's thinking blocks are refused, or ``None``."""
        for turn in body.get("messages") or []:
            if turn.get("role") != "assistant" or not isinstance(turn.get("content"), list):
                continue
            for block in turn["content"]:
                if block.get("type") != "thinking":
                    continue
                expected = self.sign(str(block.get("thinking", "")))
                if not hmac.compare_digest(str(block.get("signature", "")), expected):
                    return "messages: invalid signature in thinking block"
        return None

    def _cache_use(self, model: str, blocks: list[tuple[str, int, bool]]) -> tuple[int, int]:
        """Tokens read from and written to the cache; the breakpoints' prefixes are cached."""
        prefixes: list[tuple[str, int]] = []  # (hash, tokens) of each prefix, block by block
        digest = hashlib.sha256(model.encode())
        running = 0
        for canonical, tokens, _ in blocks:
            digest.update(canonical.encode())
            running += tokens
            prefixes.append((digest.copy().hexdigest(), running))
        breakpoints = [i for i, (_, _, marked) in enumerate(blocks) if marked][-4:]
        read = 0
        with self._lock:
            for point in breakpoints:
                for index in range(point, max(point - _LOOKBACK_BLOCKS, -1), -1):
                    if prefixes[index][0] in self._cache:
                        read = max(read, prefixes[index][1])
                        break
            written = max((prefixes[p][1] for p in breakpoints), default=0) - read
            self._cache.update(prefixes[p][0] for p in breakpoints)
        return read, max(written, 0)


def _prompt_blocks(body: dict[str, Any]) -> Iterator[tuple[str, int, bool]]:
    """The prompt's blocks in cache order: (canonical JSON, tokens, has a breakpoint)."""
    for tool in body.get("tools") or []:
        yield _block("tool", tool)
    system = body.get("system")
    if isinstance(system, str):
        system = [{"type": "text", "text": system}]
    for block in system or []:
        yield _block("system", block)
    for turn in body.get("messages") or []:
        content = turn.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        for block in content or []:
            yield _block(str(turn.get("role")), block)


def _block(role: str, block: dict[str, Any]) -> tuple[str, int, bool]:
    plain = {k: v for k, v in block.items() if k != "cache_control"}
    canonical = json.dumps([role, plain], sort_keys=True, separators=(",", ":"))
    return canonical, math.ceil(len(canonical) / _CHARS_PER_TOKEN), "cache_control" in block


def _tokens(block: dict[str, Any]) -> int:
    return math.ceil(len(json.dumps(block, sort_keys=True)) / _CHARS_PER_TOKEN)


def _error(
    status: int, error_type: str, message: str, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, Any], dict[str, str]]:
    body = {"type": "error", "error": {"type": error_type, "message": message}}
    return status, body, dict(headers or {})


def _events(message: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """A message as the API's server-sent events."""
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 0}}
    yield "message_start", {"type": "message_start", "message": start}
    for index, block in enumerate(message["content"]):
        kind = block["type"]
        if kind == "text":
            opening: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": w} for w in _words(block["text"])]
        elif kind == "tool_use":
            opening = {**block, "input": {}}
            text = json.dumps(block["input"])
            pieces = [text[i : i + 8] for i in range(0, len(text), 8)] or [""]
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces]
        else:
            opening = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": w} for w in _words(block["thinking"])]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        yield (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": opening},
        )
        for delta in deltas:
            yield (
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            )
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": usage["output_tokens"]},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def _words(text: str) -> list[str]:
    """Text in pieces that concatenate back to it, a word (and its space) at a time."""
    pieces = [word + " " for word in text.split(" ")]
    pieces[-1] = pieces[-1][:-1]
    return [p for p in pieces if p] or [""]
