"""A fake Gemini API server for tests, with thought signatures and context caching.

Like :class:`~smyth_temporal.testing.FakeAnthropicServer`, it fakes only the HTTP edge,
so the real ``google-genai`` client builds the requests and parses the answers
(``genai.Client(api_key=..., http_options={"base_url": server.base_url})``):

* ``POST /v1beta/models/MODEL:generateContent`` (any API version; Vertex AI's
  ``projects/P/locations/L/publishers/google/models/MODEL`` too) answers with the turns a test
  scripted (:meth:`FakeGoogleServer.enqueue`, FIFO): text, function calls, thinking,
  or an error (:func:`google_error`: a 429 ``RESOURCE_EXHAUSTED`` with a ``RetryInfo``
  delay, a 503 ``UNAVAILABLE``, ...). ``:streamGenerateContent?alt=sse`` gets the same
  answer as the API streams it: one ``GenerateContentResponse`` per server-sent
  event, text a word at a time, each function call whole, the finish reason and the
  usage in the last.
* **Thought signatures.** A turn scripted with ``thinking`` is signed, as Gemini's
  thinking models sign theirs: the first function call part (else the last part)
  carries a ``thoughtSignature``, an HMAC of the part under a key of this server, and
  with ``thinkingConfig.includeThoughts`` the thought summary comes first as a
  ``thought`` part. A request whose model turns carry a signature this server did not
  give that part, or leave out one it gave, gets a 400, as the API refuses them.
* **Implicit caching.** The prompt is the sequence of parts: the system instruction's,
  the function declarations, then each content's parts. The longest prefix (at a part
  boundary, per model) that an earlier request sent too is reported as
  ``cachedContentTokenCount`` when it has at least ``min_cache_tokens`` tokens.
* **Explicit caching.** ``POST /v1beta/cachedContents`` stores a prefix (system
  instruction, tools, contents) and answers its name; a request naming it in
  ``cachedContent`` has that prefix put before its own contents, all of it counted
  as cached (and may not set a system instruction or tools of its own, as the API
  requires). A prefix under ``min_cache_tokens`` is refused with the API's 400.
  ``GET`` and ``DELETE`` ``/v1beta/cachedContents/ID`` read and drop one.
* **Token counts** are a deterministic approximation: a part's canonical JSON (sorted
  keys, no signature) has ``ceil(chars / 4)`` tokens.
* **Context window.** With ``context_window`` set, a longer prompt gets the API's 400
  ``The input token count (N) exceeds the maximum number of tokens allowed (M).``
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import math
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from smyth_temporal.testing._fake_anthropic import _words
from smyth_temporal.testing._fake_http import Exchange
from smyth_temporal.testing._fake_scripted import CacheReport, ScriptedFake

__all__ = ["FakeGoogleServer", "GoogleTurn", "google_error", "google_turn"]

# The SDK's API version (v1, v1beta, ...) and, on Vertex AI, the resource's place.
_PREFIX = re.compile(r"^/v1[a-z0-9]*/(projects/[^/]+/locations/[^/]+/)?(publishers/[^/]+/)?")
_MODELS_PREFIX = "models/"
_CACHES_PATH = "cachedContents"
_CHARS_PER_TOKEN = 4
_DROP_AFTER = "_dropAfter"  # the answer's own note, never sent
_DEFAULT_MIN_CACHE_TOKENS = 1024  # Gemini 2.5 Flash's minimum; 2.5 Pro's is higher

# The API's HTTP status for each of its error statuses.
_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


@dataclass(frozen=True)
class GoogleTurn:
    """One scripted answer: the parts of a candidate, or an HTTP error.

    Attributes:
        parts: The candidate's parts (``text``, ``functionCall``), in the REST shape.
        thinking: The thought summary; set, the answer is signed (see the module).
        finish_reason: The candidate's finish reason (``STOP``, ``MAX_TOKENS``, ``SAFETY``).
        status: The HTTP status (200 for an answer).
        error: For an error: the body's ``error`` object (``code``, ``message``,
            ``status``, ``details``).
        headers: Extra response headers.
        drop_after: Streamed: hang up after this many events, without ending the
            stream, as a connection lost midway does.
    """

    parts: list[dict[str, Any]] = field(default_factory=list)
    thinking: str | None = None
    finish_reason: str = "STOP"
    status: int = 200
    error: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    drop_after: int | None = None


def google_turn(
    text: str | None = None,
    function_calls: list[tuple[str, dict[str, Any]]] | None = None,
    *,
    thinking: str | None = None,
    finish_reason: str = "STOP",
) -> GoogleTurn:
    """A scripted answer: text, then ``(name, args)`` function calls (no ids, as Gemini)."""
    parts: list[dict[str, Any]] = []
    if text is not None:
        parts.append({"text": text})
    for name, args in function_calls or []:
        parts.append({"functionCall": {"name": name, "args": args}})
    return GoogleTurn(parts=parts, thinking=thinking, finish_reason=finish_reason)


def google_error(
    status: int,
    message: str,
    *,
    status_name: str | None = None,
    retry_delay: float | None = None,
) -> GoogleTurn:
    """A scripted error in the API's shape, ``google_error(429, "...", retry_delay=7)``.

    ``retry_delay`` adds the ``google.rpc.RetryInfo`` detail the API sends with a
    ``RESOURCE_EXHAUSTED`` (``"retryDelay": "7s"``).
    """
    details: list[dict[str, Any]] = []
    if retry_delay is not None:
        details.append(
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{retry_delay:g}s"}
        )
    error: dict[str, Any] = {
        "code": status,
        "message": message,
        "status": status_name or _STATUS_NAMES.get(status, "UNKNOWN"),
    }
    if details:
        error["details"] = details
    return GoogleTurn(status=status, error=error)


class FakeGoogleServer(ScriptedFake[GoogleTurn]):
    """A fake Gemini API on 127.0.0.1 and an ephemeral port (``with`` or ``async with``).

    Point ``genai.Client(api_key=..., http_options={"base_url": server.base_url})`` at
    it. With no scripted turn left it answers 500, so an under-scripted test fails
    readably.
    """

    def __init__(
        self,
        *,
        context_window: int | None = None,
        min_cache_tokens: int = _DEFAULT_MIN_CACHE_TOKENS,
        respond: Callable[[dict[str, Any]], GoogleTurn] | None = None,
    ) -> None:
        """A server.

        Args:
            context_window: Refuse longer prompts, as the API does.
            min_cache_tokens: The fewest tokens a prefix is cached with (implicitly or
                explicitly).
            respond: Answers a request (its JSON body) when no scripted turn is left,
                for runs whose requests are not known in advance.
        """
        super().__init__(respond)
        self.context_window = context_window
        self.min_cache_tokens = min_cache_tokens
        self._seen: set[str] = set()  # every prefix sent, per model (implicit caching)
        self._caches: dict[str, dict[str, Any]] = {}
        self._issued: dict[str, str] = {}  # a signed part (without it) -> its signature
        self._key = uuid.uuid4().bytes

    @property
    def caches(self) -> dict[str, dict[str, Any]]:
        """The explicit caches alive, by name."""
        with self._lock:
            return dict(self._caches)

    def sign(self, part: dict[str, Any]) -> str:
        """The signature this server gives ``part`` (its REST shape, without a signature)."""
        digest = hmac.new(self._key, _canonical(part).encode(), hashlib.sha256).digest()
        return base64.b64encode(digest).decode()

    def answer(self, exchange: Exchange) -> None:
        """Answer the API's routes; anything else is a 404."""
        request = exchange.request
        path = _PREFIX.sub("", urlsplit(request.path).path.rstrip("/"))
        body = request.json if isinstance(request.json, dict) else {}
        try:
            if path.startswith(_MODELS_PREFIX) and request.method == "POST":
                model, _, method = path[len(_MODELS_PREFIX) :].partition(":")
                if method in ("generateContent", "streamGenerateContent"):
                    self._generate(exchange, model, body, stream=method != "generateContent")
                    return
            elif path == _CACHES_PATH and request.method == "POST":
                exchange.send_json(*self._create_cache(body))
                return
            elif path.startswith(_CACHES_PATH + "/"):
                exchange.send_json(*self._cache_entry(request.method, path))
                return
        except Exception as exc:  # a request the fake cannot read: say so, as a 500
            exchange.send_json(*_error(500, f"fake Gemini server failed: {exc!r}"))
            return
        exchange.send_json(*_error(404, f"no such endpoint: {request.method} {path}"))

    # -- the API's behaviour ---------------------------------------------------------

    def _generate(self, exchange: Exchange, model: str, body: dict[str, Any], stream: bool) -> None:
        status, answer, headers = self._answer(model, body)
        drop_after = answer.pop(_DROP_AFTER, None)
        if status != 200 or not stream:
            exchange.send_json(status, answer, headers)
            return
        exchange.start_stream(headers=headers)
        for index, chunk in enumerate(_chunks(answer)):
            if index == drop_after:
                exchange.hang_up()  # no last chunk: the client sees the body cut off
                return
            exchange.event(json.dumps(chunk))
        exchange.end_stream()

    def _answer(
        self, model: str, body: dict[str, Any]
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        refused = self._check_signatures(body)
        if refused:
            return _error(400, refused)
        cached: list[tuple[str, int]] = []
        name = body.get("cachedContent")
        if name is not None:
            # Vertex AI names it by its whole resource path.
            short = str(name)[str(name).find("cachedContents/") :]
            with self._lock:
                entry = self._caches.get(short)
            if entry is None:
                return _error(403, f"CachedContent not found (or permission denied): {name}")
            if body.get("systemInstruction") or body.get("tools") or body.get("toolConfig"):
                return _error(
                    400,
                    "CachedContent can not be used with GenerateContent request setting "
                    "system_instruction, tools or tool_config.",
                )
            if not str(entry["model"]).endswith(f"models/{model}"):
                return _error(400, f"model {model} does not match the cached content's model")
            cached = list(_prompt_parts(entry["body"]))
        parts = cached + list(_prompt_parts({"contents": body.get("contents")}))
        if name is None:
            parts = list(_prompt_parts(body))
        total = sum(tokens for _, tokens in parts)
        if self.context_window is not None and total > self.context_window:
            return _error(
                400,
                f"The input token count ({total}) exceeds the maximum number of tokens "
                f"allowed ({self.context_window}).",
            )
        turn = self._next_turn(body)
        if turn is None:
            return _error(500, "fake Gemini server has no scripted turn left")
        if turn.error is not None:
            return turn.status, {"error": turn.error}, dict(turn.headers)
        read = sum(tokens for _, tokens in cached) if cached else self._implicit(model, parts)
        config = body.get("generationConfig") or {}
        # The API reads proto field names in either spelling, and the SDK sends nested
        # ones as the caller wrote them (``include_thoughts``).
        thinking = config.get("thinkingConfig") or config.get("thinking_config") or {}
        thoughts = bool(thinking.get("includeThoughts") or thinking.get("include_thoughts"))
        content = self._signed(turn, with_thoughts=thoughts)
        output = sum(_tokens(part) for part in content)
        self._report(CacheReport(total - read, read, 0, output))
        usage: dict[str, Any] = {
            "promptTokenCount": total,
            "candidatesTokenCount": output,
            "totalTokenCount": total + output,
        }
        if read:
            usage["cachedContentTokenCount"] = read
        answer: dict[str, Any] = {
            "candidates": [
                {
                    "content": {"role": "model", "parts": content},
                    "finishReason": turn.finish_reason,
                    "index": 0,
                }
            ],
            "usageMetadata": usage,
            "modelVersion": model,
            "responseId": uuid.uuid4().hex[:20],
        }
        if turn.drop_after is not None:
            answer[_DROP_AFTER] = turn.drop_after
        return 200, answer, dict(turn.headers)

    def _implicit(self, model: str, parts: list[tuple[str, int]]) -> int:
        """Tokens of the longest prefix an earlier request sent too; remembers this one's."""
        digest = hashlib.sha256(model.encode())
        running = 0
        read = 0
        with self._lock:
            for canonical, tokens in parts:
                digest.update(canonical.encode())
                running += tokens
                key = digest.hexdigest()
                if key in self._seen:
                    read = running
                self._seen.add(key)
        return read if read >= self.min_cache_tokens else 0

    def _signed(self, turn: GoogleTurn, *, with_thoughts: bool) -> list[dict[str, Any]]:
        parts = [dict(part) for part in turn.parts]
        if turn.thinking is None or not parts:
            return parts
        index = next((i for i, p in enumerate(parts) if "functionCall" in p), len(parts) - 1)
        signature = self.sign(parts[index])
        with self._lock:
            self._issued[_issued_key(parts[index])] = signature
        parts[index] = {**parts[index], "thoughtSignature": signature}
        if with_thoughts:
            parts.insert(0, {"text": turn.thinking, "thought": True})
        return parts

    def _check_signatures(self, body: dict[str, Any]) -> str | None:
        """Why the request's model turns are refused, or ``None``."""
        for content in body.get("contents") or []:
            if content.get("role") != "model":
                continue
            for part in content.get("parts") or []:
                signature = part.get("thoughtSignature")
                plain = {k: v for k, v in part.items() if k != "thoughtSignature"}
                with self._lock:
                    issued = self._issued.get(_issued_key(plain))
                if signature is None and issued is not None:
                    return "Function call is missing a thought_signature in functionCall parts."
                if signature is not None and not hmac.compare_digest(
                    _bytes(str(signature)), _bytes(self.sign(plain))
                ):
                    return "Thought signature is not valid."
        return None

    def _create_cache(self, body: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
        tokens = sum(tokens for _, tokens in _prompt_parts(body))
        if tokens < self.min_cache_tokens:
            return _error(
                400,
                f"Cached content is too small. total_token_count={tokens}, "
                f"min_total_token_count={self.min_cache_tokens}",
            )
        name = f"cachedContents/{uuid.uuid4().hex[:12]}"
        ttl = float(str(body.get("ttl") or "3600s").rstrip("s"))
        now = datetime.now(UTC)
        entry = {
            "name": name,
            "model": body.get("model"),
            "createTime": now.isoformat(),
            "updateTime": now.isoformat(),
            "expireTime": (now + timedelta(seconds=ttl)).isoformat(),
            "usageMetadata": {"totalTokenCount": tokens},
        }
        with self._lock:
            self._caches[name] = {**entry, "body": body}
        return 200, entry, {}

    def _cache_entry(self, method: str, name: str) -> tuple[int, dict[str, Any], dict[str, str]]:
        with self._lock:
            entry = self._caches.pop(name, None) if method == "DELETE" else self._caches.get(name)
        if entry is None:
            return _error(404, f"CachedContent not found: {name}")
        if method == "DELETE":
            return 200, {}, {}
        return 200, {k: v for k, v in entry.items() if k != "body"}, {}


def _prompt_parts(body: dict[str, Any]) -> Iterator[tuple[str, int]]:
    """The prompt's parts in cache order: (canonical JSON, tokens)."""
    system = body.get("systemInstruction") or {}
    for part in system.get("parts") or []:
        yield _part("system", part)
    for tool in body.get("tools") or []:
        for declaration in tool.get("functionDeclarations") or []:
            yield _part("tool", declaration)
    for content in body.get("contents") or []:
        for part in content.get("parts") or []:
            yield _part(str(content.get("role")), part)


def _part(role: str, part: dict[str, Any]) -> tuple[str, int]:
    plain = {k: v for k, v in part.items() if k != "thoughtSignature"}
    canonical = json.dumps([role, plain], sort_keys=True, separators=(",", ":"))
    return canonical, math.ceil(len(canonical) / _CHARS_PER_TOKEN)


def _issued_key(part: dict[str, Any]) -> str:
    """What a signed part is known by: a call by its name and arguments, others whole.

    An id added to a call on the way back does not make it another call.
    """
    call = part.get("functionCall") or part.get("function_call")
    if isinstance(call, dict):
        return _canonical({"call": [call.get("name"), call.get("args")]})
    return _canonical({k: v for k, v in part.items() if k != "thoughtSignature"})


def _bytes(signature: str) -> bytes:
    """A signature's bytes, from either base64 alphabet (the SDK sends the URL-safe one)."""
    try:
        return base64.urlsafe_b64decode(signature.replace("+", "-").replace("/", "_"))
    except ValueError:
        return b""


def _canonical(part: dict[str, Any]) -> str:
    return json.dumps(part, sort_keys=True, separators=(",", ":"))


def _tokens(part: dict[str, Any]) -> int:
    return math.ceil(len(_canonical(part)) / _CHARS_PER_TOKEN)


def _error(status: int, message: str) -> tuple[int, dict[str, Any], dict[str, str]]:
    error = {"code": status, "message": message, "status": _STATUS_NAMES.get(status, "UNKNOWN")}
    return status, {"error": error}, {}


def _chunks(answer: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """An answer as the API streams it: text a word at a time, the usage last."""
    [candidate] = answer["candidates"]
    pieces: list[dict[str, Any]] = []
    for part in candidate["content"]["parts"]:
        if "text" not in part:
            pieces.append(part)
            continue
        words = _words(part["text"])
        for index, word in enumerate(words):
            piece = {k: v for k, v in part.items() if k != "thoughtSignature"}
            piece["text"] = word
            if index == len(words) - 1 and "thoughtSignature" in part:
                piece["thoughtSignature"] = part["thoughtSignature"]
            pieces.append(piece)
    pieces = pieces or [{"text": ""}]
    for index, piece in enumerate(pieces):
        chunk: dict[str, Any] = {
            "candidates": [{"content": {"role": "model", "parts": [piece]}, "index": 0}],
            "modelVersion": answer["modelVersion"],
            "responseId": answer["responseId"],
        }
        if index == len(pieces) - 1:
            chunk["candidates"][0]["finishReason"] = candidate["finishReason"]
            chunk["usageMetadata"] = answer["usageMetadata"]
        yield chunk
