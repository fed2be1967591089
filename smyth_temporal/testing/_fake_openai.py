"""A fake OpenAI-compatible HTTP server for tests.

Tests never talk to a real LLM, but they should still exercise the real ``openai``
client: request building, response parsing and error mapping all happen in that
package, so faking at the HTTP edge is the only way to test them honestly. The server
below speaks just enough of the OpenAI HTTP API for that:

* ``POST /v1/chat/completions`` answers with responses the test scripted beforehand
  (:meth:`FakeOpenAIServer.enqueue`), in FIFO order. A request with ``"stream": true``
  gets its completion as OpenAI streams one: server-sent ``chat.completion.chunk``
  events, the text a word at a time, tool-call arguments in pieces, usage last if
  ``stream_options.include_usage`` asks for it, then ``data: [DONE]``.
* ``POST /v1/responses`` answers from the same script, as the Responses API
  (``responses_answer`` builds a ``response`` object; ``_fake_responses`` says how
  the server seals reasoning items, counts cached tokens and streams). Added in 0.10.0.
* ``POST /v1/embeddings`` answers on its own with deterministic vectors
  (:func:`fake_embedding`), so memory features can be tested without scripting.
* Every request is recorded (:attr:`FakeOpenAIServer.requests`).

Example:
    ```python
    async with FakeOpenAIServer() as server:
        server.enqueue(chat_completion("hello"))
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        completion = await client.chat.completions.create(model="m", messages=[...])
    ```

It is built on the standard library only (``http.server``) so it adds no dependency
and runs in a daemon thread next to any event loop.
"""

from __future__ import annotations

import base64
import collections
import hashlib
import json
import struct
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

from smyth_temporal.testing._fake_http import Exchange, FakeHTTPServer, RecordedRequest
from smyth_temporal.testing._fake_responses import ResponsesLedger, plan_responses_stream
from smyth_temporal.testing._fake_stream import StreamPlan, plan_stream

__all__ = [
    "FakeOpenAIServer",
    "FakeResponse",
    "RecordedRequest",
    "chat_completion",
    "error_response",
    "fake_embedding",
]

_CHAT_COMPLETIONS_PATH = "/v1/chat/completions"
_EMBEDDINGS_PATH = "/v1/embeddings"
_RESPONSES_PATH = "/v1/responses"
_DEFAULT_EMBEDDING_DIMENSIONS = 8
# Large enough for any test, small enough that a typo cannot make the server build a
# multi-gigabyte response.
_MAX_EMBEDDING_DIMENSIONS = 65_536


@dataclass(frozen=True)
class FakeResponse:
    """A response the fake server sends for one chat completion request.

    Attributes:
        status: The HTTP status code.
        body: The JSON body, or ``None`` to send an empty body.
        headers: Extra response headers (they override the defaults, such as
            ``Content-Type``).
        delay: Seconds to wait before answering; longer than the client's timeout, it
            makes the client time out.
        first_token_delay: For a streamed answer: seconds between the first chunk
            (the role) and the first piece of the message, as a model's time to first
            token. Added in 0.3.0.
        drop_after: For a streamed answer: hang up after this many pieces of the
            message (text or tool-call pieces; fewer if the message has fewer),
            without finishing the stream, as a connection lost midway does. ``None``
            streams to the end. Added in 0.3.0.
        piece_chars: For a streamed answer: the length of each piece of text and
            tool-call arguments; ``None`` streams the text a word at a time (with the
            whitespace after it) and arguments in pieces of eight characters. Added in
            0.3.0.
    """

    status: int = 200
    body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    first_token_delay: float = 0.0
    drop_after: int | None = None
    piece_chars: int | None = None


def chat_completion(
    content: str | None = None,
    tool_calls: list[tuple[str, str, dict[str, Any] | str]] | None = None,
    *,
    model: str = "fake-model",
    prompt_tokens: int = 10,
    completion_tokens: int = 5,
) -> dict[str, Any]:
    """Build an OpenAI-shaped chat completion body with one assistant message.

    Pass the result to :meth:`FakeOpenAIServer.enqueue` directly (status 200), or as
    ``FakeResponse(body=...)`` to add a delay, headers or streaming options.

    Args:
        content: The assistant's text, or ``None`` (usual when it calls tools).
        tool_calls: Tool calls as ``(call_id, function_name, arguments)``. Dict
            arguments are JSON-encoded; a string is sent as is, so tests can send
            malformed JSON.
        model: The model name reported in the body.
        prompt_tokens: Reported input token usage.
        completion_tokens: Reported output token usage.

    Returns:
        The body as a JSON-serialisable dict.
    """
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    if tool_calls:
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                },
            }
            for call_id, name, arguments in tool_calls
        ]
    return {
        "id": f"chatcmpl-fake-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if tool_calls else "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def error_response(
    status: int,
    message: str,
    *,
    retry_after: float | None = None,
    error_type: str | None = None,
    code: str | None = None,
) -> FakeResponse:
    """Build an error response with an OpenAI-shaped body.

    Args:
        status: The HTTP status code, such as 429.
        message: The error message, as the provider would word it.
        retry_after: If given, sent as the ``Retry-After`` header (in seconds; whole
            numbers are sent without a decimal point, as servers usually do).
        error_type: The body's ``error.type``; defaults to a type matching the status.
        code: The body's ``error.code``.

    Returns:
        A response to pass to :meth:`FakeOpenAIServer.enqueue`.
    """
    headers: dict[str, str] = {}
    if retry_after is not None:
        headers["Retry-After"] = (
            str(int(retry_after)) if float(retry_after).is_integer() else str(retry_after)
        )
    return FakeResponse(
        status=status,
        body=_error_body(message, error_type or _default_error_type(status), code),
        headers=headers,
    )


def fake_embedding(text: str, dimensions: int = _DEFAULT_EMBEDDING_DIMENSIONS) -> list[float]:
    """Return the deterministic embedding the fake server gives for ``text``.

    The vector is seeded by a hash of the text, so equal texts get equal vectors and
    different texts (almost surely) different ones, across runs and processes. It has
    unit length up to float32 rounding: every component is a float32 value, so the
    ``float`` and ``base64`` encodings of the API decode to exactly these numbers.

    Args:
        text: The input text (token-array inputs are hashed by their JSON form).
        dimensions: The vector's length.

    Returns:
        The embedding.

    Raises:
        ValueError: If ``dimensions`` is not positive.
    """
    if dimensions < 1:
        raise ValueError(f"dimensions must be positive, got {dimensions}")
    raw: list[float] = []
    counter = 0
    while len(raw) < dimensions:
        digest = hashlib.sha256(f"{counter}:{text}".encode()).digest()
        # Eight 4-byte words per digest, each mapped to [-1, 1].
        raw.extend(word / 0xFFFFFFFF * 2.0 - 1.0 for (word,) in struct.iter_unpack(">I", digest))
        counter += 1
    raw = raw[:dimensions]
    norm = sum(value * value for value in raw) ** 0.5 or 1.0
    return [_to_float32(value / norm) for value in raw]


class FakeOpenAIServer(FakeHTTPServer):
    """A fake OpenAI-compatible HTTP server on 127.0.0.1 and an ephemeral port.

    Use it as a context manager (``with`` or ``async with``) or call :meth:`start`
    and :meth:`stop`. Point the real client at :attr:`base_url`
    (``http://127.0.0.1:PORT/v1``).

    Chat completion requests get the scripted responses in the order they were
    enqueued; with none left, the server answers 500 with an error saying so, so a
    test that under-scripts fails with a readable message. Other paths answer 404.
    """

    url_suffix = "/v1"

    def __init__(self) -> None:
        super().__init__()
        self._queue: collections.deque[FakeResponse] = collections.deque()
        self._responses = ResponsesLedger()

    # -- scripting and inspection ----------------------------------------------------

    def enqueue(self, *responses: FakeResponse | Mapping[str, Any]) -> None:
        """Append responses for the next chat completion requests, served FIFO.

        Args:
            *responses: Responses to serve; a mapping is shorthand for a 200 response
                with that JSON body (such as the result of :func:`chat_completion`).
        """
        with self._lock:
            for response in responses:
                if isinstance(response, FakeResponse):
                    self._queue.append(response)
                else:
                    self._queue.append(FakeResponse(body=dict(response)))

    @property
    def pending(self) -> int:
        """How many scripted responses are not served yet."""
        with self._lock:
            return len(self._queue)

    def _next_response(self) -> FakeResponse | None:
        with self._lock:
            return self._queue.popleft() if self._queue else None

    # -- the API's behaviour (called in handler threads) ----------------------------

    def answer(self, exchange: Exchange) -> None:
        """Answer chat completions, responses and embeddings; anything else is a 404."""
        request = exchange.request
        route = urlsplit(request.path).path.rstrip("/")
        if request.method == "POST" and route == _CHAT_COMPLETIONS_PATH:
            self._chat_completion(exchange)
        elif request.method == "POST" and route == _RESPONSES_PATH:
            self._responses_answer(exchange)
        elif request.method == "POST" and route == _EMBEDDINGS_PATH:
            self._embeddings(exchange)
        else:
            _send(
                exchange,
                FakeResponse(
                    status=404,
                    body=_error_body(
                        f"fake OpenAI server does not implement {request.method} {route}",
                        "invalid_request_error",
                        "unknown_url",
                    ),
                ),
            )

    def _scripted(self, exchange: Exchange, path: str) -> FakeResponse | None:
        """The next scripted response, after its delay (``None``: the server stopped)."""
        response = self._next_response()
        if response is None:
            response = FakeResponse(
                status=500,
                body=_error_body(
                    f"fake OpenAI server has no scripted response for POST {path}; "
                    "call server.enqueue(...) before the request",
                    "fake_server_error",
                    "no_scripted_response",
                ),
            )
        if response.delay > 0 and not self._wait(response.delay):
            # Stopped while waiting: hang up rather than answer a client that is gone.
            exchange.hang_up()
            return None
        return response

    def _chat_completion(self, exchange: Exchange) -> None:
        request = exchange.request
        response = self._scripted(exchange, _CHAT_COMPLETIONS_PATH)
        if response is None:
            return
        plan = _stream_plan(response, request.json) if request.streamed else None
        self._answer(exchange, response, plan)

    def _responses_answer(self, exchange: Exchange) -> None:
        request = exchange.request
        refusal = self._responses.refusal(request.json)
        if refusal is not None:
            status, message, code = refusal
            _send(exchange, error_response(status, message, code=code))
            return
        response = self._scripted(exchange, _RESPONSES_PATH)
        if response is None:
            return
        body = response.body
        if response.status != 200 or not isinstance(body, dict) or "output" not in body:
            _send(exchange, response)  # errors, and bodies that are not responses, as they are
            return
        response = replace(response, body=self._responses.finish(body, request.json))
        assert response.body is not None
        plan = plan_responses_stream(response.body) if request.streamed else None
        self._answer(exchange, response, plan, named=True)

    def _answer(
        self,
        exchange: Exchange,
        response: FakeResponse,
        plan: StreamPlan | None,
        *,
        named: bool = False,
    ) -> None:
        """Send ``response`` whole, or streamed as ``plan`` says."""
        if plan is None:
            _send(exchange, response)
            return
        self._stream(exchange, response, plan, named=named)

    def _stream(
        self, exchange: Exchange, response: FakeResponse, plan: StreamPlan, *, named: bool
    ) -> None:
        """Send a completion as server-sent events, in the chunked transfer encoding.

        ``named``: each event has an ``event:`` line with its data's ``type`` and the
        stream ends without ``[DONE]`` (the Responses API's streams).
        """
        exchange.start_stream(response.status, response.headers)

        def send(chunk: dict[str, Any]) -> None:
            exchange.event(json.dumps(chunk), chunk["type"] if named else None)

        send(plan.opening)
        if response.first_token_delay > 0 and not self._wait(response.first_token_delay):
            exchange.hang_up()
            return
        for index, chunk in enumerate(plan.pieces):
            if index == response.drop_after:
                break
            send(chunk)
        if response.drop_after is not None:
            # Closing without the chunked body's last, empty chunk: the client sees
            # the body cut off (httpx: "incomplete chunked read"), not a short stream.
            exchange.hang_up()
            return
        for chunk in plan.closing:
            send(chunk)
        if not named:
            exchange.chunk(b"data: [DONE]\n\n")
        exchange.end_stream()

    def _embeddings(self, exchange: Exchange) -> None:
        request = exchange.request.json
        if not isinstance(request, dict) or "input" not in request:
            _send(
                exchange,
                error_response(400, "fake OpenAI server: embeddings request needs an 'input'"),
            )
            return
        dimensions = request.get("dimensions", _DEFAULT_EMBEDDING_DIMENSIONS)
        if (
            not isinstance(dimensions, int)
            or isinstance(dimensions, bool)
            or not 1 <= dimensions <= _MAX_EMBEDDING_DIMENSIONS
        ):
            _send(exchange, error_response(400, f"invalid 'dimensions': {dimensions!r}"))
            return
        inputs = _embedding_inputs(request["input"])
        use_base64 = request.get("encoding_format") == "base64"
        data: list[dict[str, Any]] = []
        for index, text in enumerate(inputs):
            vector = fake_embedding(text, dimensions)
            embedding: list[float] | str = (
                # The openai client asks for base64 unless told otherwise: packed
                # little-endian float32, which it decodes back into a list.
                base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")
                if use_base64
                else vector
            )
            data.append({"object": "embedding", "index": index, "embedding": embedding})
        # A rough token count: what matters to tests is that usage is present and plausible.
        tokens = sum(max(1, len(text.split())) for text in inputs)
        _send(
            exchange,
            FakeResponse(
                body={
                    "object": "list",
                    "data": data,
                    "model": request.get("model", "fake-embedding-model"),
                    "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
                }
            ),
        )


def _send(exchange: Exchange, response: FakeResponse) -> None:
    """Send a scripted response whole; its headers override the defaults."""
    payload = b"" if response.body is None else json.dumps(response.body).encode()
    headers = {"Content-Type": "application/json"} if response.body is not None else {}
    exchange.send(response.status, payload, {**headers, **response.headers})


def _stream_plan(response: FakeResponse, request: dict[str, Any]) -> StreamPlan | None:
    """The chunks to stream ``response`` as, or None if it is not a completion to stream.

    Errors and bodies that are not chat completions are sent as they are, as OpenAI
    answers a failed streaming request with a plain JSON error.
    """
    body = response.body
    if response.status != 200 or not isinstance(body, dict) or not body.get("choices"):
        return None
    options = request.get("stream_options")
    with_usage = isinstance(options, dict) and options.get("include_usage") is True
    return plan_stream(body, with_usage=with_usage, piece_chars=response.piece_chars)


def _embedding_inputs(value: Any) -> list[str]:
    """Normalise the ``input`` field (text, texts, tokens, token lists) to strings."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and value and all(isinstance(item, int) for item in value):
        return [json.dumps(value)]
    if isinstance(value, list):
        return [item if isinstance(item, str) else json.dumps(item) for item in value]
    return [json.dumps(value)]


def _error_body(message: str, error_type: str, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type, "param": None, "code": code}}


def _default_error_type(status: int) -> str:
    # Error types in the style of OpenAI's, so the openai client fills exc.type.
    if status == 401:
        return "authentication_error"
    if status == 403:
        return "permission_error"
    if status == 404:
        return "not_found_error"
    if status == 429:
        return "rate_limit_exceeded"
    if status >= 500:
        return "server_error"
    return "invalid_request_error"


def _to_float32(value: float) -> float:
    result: float = struct.unpack("<f", struct.pack("<f", value))[0]
    return result
