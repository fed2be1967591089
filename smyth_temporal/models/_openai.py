"""The OpenAI-compatible model provider (OpenAI, Azure, vLLM, Ollama, llama.cpp, ...)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Literal

from smyth_temporal._redaction import masked_cause
from smyth_temporal.models._keys import provider_key
from smyth_temporal.models._openai_response import (
    FINAL_ANSWER_TOOL,
    StreamedCompletion,
    to_model_response,
)
from smyth_temporal.models._provider import TextSink
from smyth_temporal.security import Secrets
from smyth_temporal.settings import ModelSettings
from smyth_temporal.types.messages import Message
from smyth_temporal.types.model import ModelRequest, ModelResponse, OutputSchema
from smyth_temporal.types.secrets import SecretRef

if TYPE_CHECKING:
    from openai import AsyncOpenAI, AsyncStream
    from openai.types.chat import ChatCompletion, ChatCompletionChunk

__all__ = [
    "DEFAULT_MODEL_HTTP_TIMEOUT",
    "FINAL_ANSWER_TOOL",
    "OpenAIProvider",
    "StructuredOutput",
    "openai_client",
]

StructuredOutput = Literal["json_schema", "tool"]
"""How a typed final answer is asked for; see ``OpenAIProvider``."""

DEFAULT_MODEL_HTTP_TIMEOUT = 120.0
"""Seconds one HTTP request to the endpoint may take before it counts as timed out."""

_CHUNKS_BETWEEN_YIELDS = 64
"""Streamed chunks handled between two turns of the event loop (about 5 ms of work)."""


class OpenAIProvider:
    """Chat completions through the ``openai`` package against any compatible endpoint.

    The endpoint and key come from the arguments or, as the ``openai`` package does,
    from ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``. The client is built with its own
    retries off: Temporal's retry policy on the model activity is the only retry loop,
    and errors are classified for it (408/409/429/5xx and timeouts retryable, honouring
    ``Retry-After``; other 4xx final). ``stream`` hands over the text while the model
    writes it (a ``StreamingModelProvider``).

    Added in 0.1.0; ``stream`` added in 0.3.0. Changed in 0.4.0: ``api_key`` takes a
    ``secret("NAME")``; ``secrets``.
    """

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | SecretRef | None = None,
        timeout: float = DEFAULT_MODEL_HTTP_TIMEOUT,
        client: AsyncOpenAI | None = None,
        structured_output: StructuredOutput = "json_schema",
        secrets: Secrets | None = None,
    ) -> None:
        """Configure the provider; the key is checked now, so a worker fails at start.

        Args:
            base_url: The endpoint, e.g. ``http://localhost:11434/v1``.
            api_key: The key, or ``secret("NAME")`` to resolve it on the worker with
                ``secrets``; endpoints that need none accept any string. A secret, or
                a plain key of 12 characters or more, is masked in logs and tool results.
            timeout: Seconds per HTTP request.
            client: A ready client (its retry setting is left as the caller made it).
            structured_output: How a typed final answer (``AgentConfig.output_type``)
                is asked for: ``json_schema`` (the ``response_format`` of OpenAI, vLLM,
                Ollama, llama.cpp) or ``tool`` (a ``final_answer`` tool, for endpoints
                without structured output).
            secrets: What resolves a ``secret("NAME")`` key (default:
                ``Secrets.from_env()``: ``SMYTH_SECRETS_FILE``, then the environment,
                within ``SMYTH_ALLOWED_SECRETS``); pass the worker's own to use its
                backends (Vault, a cloud secrets manager).

        Raises:
            ConfigurationError: No API key given and ``OPENAI_API_KEY`` is not set, or
                the secret named is not allowed or not set on this worker.
        """
        if client is None:
            client = openai_client(
                base_url=base_url, api_key=api_key, timeout=timeout, secrets=secrets
            )
        self._client = client
        self._structured_output = structured_output

    @property
    def base_url(self) -> str:
        """The endpoint this provider calls."""
        return str(self._client.base_url)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Send one chat-completions request.

        Raises:
            temporalio.exceptions.ApplicationError: Classified retryable or not.
        """
        import openai

        from smyth_temporal.models._errors import to_application_error

        try:
            completion = await self._client.chat.completions.create(**self._params(request))
        except openai.OpenAIError as exc:
            raise to_application_error(exc) from masked_cause(exc)
        return to_model_response(completion, request)

    async def stream(self, request: ModelRequest, on_text: TextSink) -> ModelResponse:
        """Send one chat-completions request, streaming its text to ``on_text``.

        The response is the one ``complete`` would give, and the pieces concatenate to
        its ``content``. With ``structured_output="tool"`` and a typed answer asked
        for, the answer comes as the final-answer tool's arguments and replaces the
        text, so there the content reaches ``on_text`` in one piece, at the end.

        Raises:
            temporalio.exceptions.ApplicationError: Classified as ``complete``
                classifies; a stream cut off midway is retryable.

        Added in 0.3.0.
        """
        import openai

        from smyth_temporal.models._errors import to_application_error

        held_back = request.output is not None and self._structured_output == "tool"
        try:
            completion = await self._stream_completion(request, None if held_back else on_text)
        except openai.OpenAIError as exc:
            raise to_application_error(exc) from masked_cause(exc)
        if completion is None:
            raise to_application_error(ValueError("the model endpoint streamed no chunks"))
        response = to_model_response(completion, request)
        if held_back and response.message.content:
            on_text(response.message.content)
        return response

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        """The chat-completions parameters for ``request``."""
        params: dict[str, Any] = dict(request.settings)
        tools = list(request.tools)
        if request.output is not None and self._structured_output == "json_schema":
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": request.output.name,
                    "schema": request.output.json_schema,
                    "strict": False,
                },
            }
        elif request.output is not None:
            tools.append(_final_answer_tool(request.output))
        if tools:
            params["tools"] = tools
        params["model"] = request.model
        params["messages"] = [_to_openai(m) for m in request.messages]
        sent = unwalked(params, "messages", "tools")
        sent["messages"] = []  # required by create(); extra_body's list replaces it
        return sent

    async def _stream_completion(
        self, request: ModelRequest, on_text: TextSink | None
    ) -> ChatCompletion | None:
        """The streamed completion (``None`` if no chunk came), text passed on as it comes."""
        # Not openai's ChatCompletionStreamState: it rebuilds the whole message for each
        # chunk, quadratic in the number of tool calls (StreamedCompletion says more).
        streamed = StreamedCompletion()
        params = self._params(request)
        # Usage comes in a last chunk only if asked for; other stream options the
        # settings hold (vLLM's continuous_usage_stats, say) are kept.
        params["stream_options"] = {**params.get("stream_options", {}), "include_usage": True}
        stream = await self._client.chat.completions.create(**params, stream=True)
        received = 0
        async with stream:
            async for chunk in _with_openai_errors(stream):
                received += 1
                if received % _CHUNKS_BETWEEN_YIELDS == 0:
                    # Chunks already buffered come with no pause for the event loop:
                    # let the activity's heartbeat in during a long burst.
                    await asyncio.sleep(0)
                if not chunk.choices and chunk.usage is None:
                    continue  # Azure's content-filter notes hold no part of the answer
                streamed.add(chunk)
                text = _text_delta(chunk)
                if text and on_text is not None:
                    on_text(text)
        return streamed.completion()


def openai_client(
    *,
    base_url: str | None,
    api_key: str | SecretRef | None,
    timeout: float,
    secrets: Secrets | None,
) -> AsyncOpenAI:
    """An ``AsyncOpenAI`` client with its retries off, its key checked and masked.

    The arguments are ``OpenAIProvider``'s; the endpoint and key default to
    ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``.

    Raises:
        ConfigurationError: No key given or set, or the secret named cannot be resolved.
    """
    from openai import AsyncOpenAI

    endpoint = ModelSettings.load()
    key = provider_key(
        api_key,
        endpoint.openai_api_key,
        secrets,
        variable="OPENAI_API_KEY",
        missing="the OpenAI-compatible model provider needs an API key: set OPENAI_API_KEY "
        "(any value for endpoints without keys) or choose another provider",
    )
    return AsyncOpenAI(
        base_url=base_url or endpoint.openai_base_url or None,
        api_key=key,
        max_retries=0,
        timeout=timeout,
    )


def unwalked(params: dict[str, Any], *keys: str) -> dict[str, Any]:
    """``params`` with ``keys`` moved into ``extra_body``, which the SDK sends as given.

    As ``create()``'s arguments, the ``openai`` SDK first walks every message or item
    through its TypedDict unions, a no-op for dicts already in the wire shape (these
    parameters have no aliases or formats), on every call: on a quiet machine 52 ms of
    a chat turn of 301 messages and 115 ms of a Responses turn, against 2.4 and 4.6 ms
    for the whole call unwalked (``bench.openai_wire``).
    """
    moved = {key: params[key] for key in keys if key in params}
    sent = {key: value for key, value in params.items() if key not in moved}
    sent["extra_body"] = {**(params.get("extra_body") or {}), **moved}
    return sent


async def _with_openai_errors(
    stream: AsyncStream[ChatCompletionChunk],
) -> AsyncIterator[ChatCompletionChunk]:
    """The stream's chunks; a connection lost midway raises as openai's own error.

    openai 3 wraps transport failures met while streaming; earlier versions let
    httpx's through (``RemoteProtocolError``, ``ReadError``, ``ReadTimeout``), which
    would be classified as unknown errors instead of connection errors and timeouts.
    """
    import httpx
    import openai

    try:
        async for chunk in stream:
            yield chunk
    except httpx.TimeoutException as exc:
        raise openai.APITimeoutError(request=stream.response.request) from exc
    except httpx.RequestError as exc:
        raise openai.APIConnectionError(request=stream.response.request) from exc


def _text_delta(chunk: ChatCompletionChunk) -> str:
    """The piece of the answer's text (the first choice's) that ``chunk`` carries."""
    return next((c.delta.content or "" for c in chunk.choices if c.index == 0), "")


def _to_openai(message: Message) -> dict[str, Any]:
    """A message in the chat-completions wire shape."""
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    wire: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        wire["tool_calls"] = [
            {
                "id": call.wire_id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in message.tool_calls
        ]
    return wire


def _final_answer_tool(output: OutputSchema) -> dict[str, Any]:
    """The ``final_answer`` tool whose arguments are the typed answer."""
    schema = dict(output.json_schema)
    if schema.get("type") != "object":
        # Tool arguments are a JSON object: a primitive answer goes in "value".
        defs = schema.pop("$defs", None)
        schema = {"type": "object", "properties": {"value": schema}, "required": ["value"]}
        if defs:
            schema["$defs"] = defs
    return {
        "type": "function",
        "function": {
            "name": FINAL_ANSWER_TOOL,
            "description": f"Give your final answer, a {output.name}, and stop.",
            "parameters": schema,
        },
    }
