"""The Anthropic model provider: the Messages API through the ``anthropic`` package.

Needs the ``anthropic`` extra (``pip install 'smyth-temporal[anthropic]'``); importing
this module without it fails with that command. Agents name its models
``anthropic:NAME`` (``AgentConfig(model="anthropic:claude-sonnet-4-5")``).

What the Messages API has and chat completions do not, kept here:

* **Prompt caching.** The request carries up to four ``cache_control`` breakpoints
  (the API's limit): the last tool, the system prompt (the instructions and recalled
  memories the conversation opens with), the latest compaction summary (which follows
  the task) and the last block of the last message. The tools are sorted by name and
  every block is built the same way each step, so the prefix before each breakpoint
  is byte-identical from one step to the next and the API serves it from its cache
  (``cache_read_input_tokens``); a new summary starts a new prefix once.
  ``cache_ttl="1h"`` asks for the 1-hour cache.
* **Extended thinking.** ``thinking`` and ``redacted_thinking`` blocks (with their
  signatures) are kept in the assistant message's ``provider_items`` and sent back
  unchanged, first in that message, as the API requires between tool calls.
* **Errors.** Classified for Temporal's retry (the client's own retries are off):
  429 retryable with its ``retry-after``; 529 and ``overloaded_error`` retryable as
  ``ModelOverloaded``; a prompt over the context window final as
  ``ModelContextTooLong``; other 4xx final; 5xx, timeouts and lost connections
  retryable.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from temporalio.exceptions import ApplicationError

from smyth_temporal._redaction import masked_cause
from smyth_temporal.models._errors import _retry_after, status_failure, to_application_error
from smyth_temporal.models._keys import provider_key
from smyth_temporal.models._messages import arguments_object, leading_system
from smyth_temporal.models._openai_response import FINAL_ANSWER_TOOL, _final_answer
from smyth_temporal.models._provider import TextSink
from smyth_temporal.security import Secrets
from smyth_temporal.settings import ModelSettings
from smyth_temporal.types.messages import Message, ToolCall, Usage
from smyth_temporal.types.model import ModelRequest, ModelResponse
from smyth_temporal.types.secrets import SecretRef

try:
    import anthropic
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "the Anthropic model provider needs the anthropic package: "
        "pip install 'smyth-temporal[anthropic]'"
    ) from exc

__all__ = ["DEFAULT_MAX_TOKENS", "AnthropicProvider", "CacheTTL"]

CacheTTL = Literal["5m", "1h"]
"""How long a cached prefix lives after its last use: Anthropic's two options."""

DEFAULT_MAX_TOKENS = 4096
"""The answer's token limit when the request's settings give no ``max_tokens`` (the
Messages API requires one)."""

_DEFAULT_TIMEOUT = 120.0

_THINKING_TYPES = frozenset({"thinking", "redacted_thinking"})

# The API's stop reasons in the chat-completions words the rest of the SDK reads.
_FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
}


class AnthropicProvider:
    """Anthropic's Messages API, with prompt caching and extended thinking.

    The key comes from the argument, or ``ANTHROPIC_API_KEY`` on the worker (read by
    ``ModelSettings``); it never enters a workflow's history. The client's retries
    are off: Temporal's retry policy on the model activity is the only retry loop.
    Request settings (``temperature``, ``max_tokens``, ``thinking``, ...) are passed
    through; ``max_tokens`` defaults to ``DEFAULT_MAX_TOKENS``.

    Added in 0.10.0.
    """

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | SecretRef | None = None,
        timeout: float = _DEFAULT_TIMEOUT,
        client: anthropic.AsyncAnthropic | None = None,
        cache_ttl: CacheTTL = "5m",
        caching: bool = True,
        secrets: Secrets | None = None,
    ) -> None:
        """Configure the provider; the key is checked now, so a worker fails at start.

        Args:
            base_url: The endpoint (default: ``ANTHROPIC_BASE_URL``, else Anthropic's API).
            api_key: The key, or ``secret("NAME")`` resolved on the worker with
                ``secrets`` (default: ``ANTHROPIC_API_KEY``). Masked in logs (a plain
                key from 12 characters: shorter ones are test placeholders).
            timeout: Seconds per HTTP request.
            client: A ready client, e.g. ``AsyncAnthropicBedrock`` or
                ``AsyncAnthropicVertex`` (its retry setting is left as the caller made it).
            cache_ttl: ``5m`` (the API's default) or ``1h`` for prefixes reused less
                often than every five minutes (writes cost 2x input instead of 1.25x).
            caching: Place cache breakpoints (``False``: none, every prompt paid in full;
                a baseline to measure caching against).
            secrets: What resolves a ``secret("NAME")`` key (default: ``Secrets.from_env()``).

        Raises:
            ConfigurationError: No key given and ``ANTHROPIC_API_KEY`` is not set, or
                the secret named is not allowed or not set on this worker.
        """
        if client is None:
            endpoint = ModelSettings.load()
            key = provider_key(
                api_key,
                endpoint.anthropic_api_key,
                secrets,
                variable="ANTHROPIC_API_KEY",
                missing="the Anthropic model provider needs an API key: set "
                "ANTHROPIC_API_KEY or pass api_key=secret('NAME')",
            )
            client = anthropic.AsyncAnthropic(
                base_url=base_url or endpoint.anthropic_base_url or None,
                api_key=key,
                max_retries=0,
                timeout=timeout,
            )
        self._client = client
        self._caching = caching
        self._cache: dict[str, str] = {"type": "ephemeral"}
        if cache_ttl == "1h":
            self._cache["ttl"] = "1h"

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Send one Messages request.

        Raises:
            temporalio.exceptions.ApplicationError: Classified retryable or not.
        """
        try:
            message = await self._client.messages.create(**self.params(request))
        except anthropic.AnthropicError as exc:
            raise classify(exc) from masked_cause(exc)
        return to_model_response(message, request)

    async def stream(self, request: ModelRequest, on_text: TextSink) -> ModelResponse:
        """Send one Messages request, streaming its text to ``on_text``.

        With a typed answer asked for, the answer comes as the final-answer tool's
        input, so the content reaches ``on_text`` in one piece, at the end.

        Raises:
            temporalio.exceptions.ApplicationError: Classified as ``complete`` classifies.
        """
        held_back = request.output is not None
        try:
            async with self._client.messages.stream(**self.params(request)) as stream:
                async for event in stream:
                    if event.type == "text" and event.text and not held_back:
                        on_text(event.text)
                message = await stream.get_final_message()
        except anthropic.AnthropicError as exc:
            raise classify(exc) from masked_cause(exc)
        response = to_model_response(message, request)
        if held_back and response.message.content:
            on_text(response.message.content)
        return response

    def reply_bound(self, request: ModelRequest) -> int:
        """The ``max_tokens`` sent for ``request`` (its own, else ``DEFAULT_MAX_TOKENS``).

        A budget reserves this many reply tokens (see ``BoundedReplies``): thinking
        counts within it. Added in 0.10.0.
        """
        return int(request.settings.get("max_tokens") or DEFAULT_MAX_TOKENS)

    def params(self, request: ModelRequest) -> dict[str, Any]:
        """The Messages API parameters for ``request``, cache breakpoints placed."""
        params: dict[str, Any] = dict(request.settings)
        params.setdefault("max_tokens", DEFAULT_MAX_TOKENS)
        tools = sorted((_to_tool(t) for t in request.tools), key=lambda t: str(t["name"]))
        if request.output is not None:
            tools.append(_final_answer_tool(request.output.json_schema, request.output.name))
        if tools:
            tools[-1]["cache_control"] = self._cache
            params["tools"] = tools
        leading = leading_system(request.messages)
        if leading:
            system: list[dict[str, Any]] = [
                {"type": "text", "text": m.content or ""} for m in leading
            ]
            system[-1]["cache_control"] = self._cache  # the instructions (and memories)
            params["system"] = system
        turns = _to_turns(request.messages[len(leading) :], self._cache)
        if turns and turns[-1]["content"]:
            turns[-1]["content"][-1]["cache_control"] = self._cache
        params["model"] = request.model
        params["messages"] = turns
        if not self._caching:
            _drop_breakpoints(params)
        return params


def _drop_breakpoints(params: dict[str, Any]) -> None:
    blocks = [*params.get("tools", []), *params.get("system", [])]
    blocks.extend(block for turn in params["messages"] for block in turn["content"])
    for block in blocks:
        block.pop("cache_control", None)


def classify(exc: BaseException) -> ApplicationError:
    """An error of the ``anthropic`` package as a retryable or final ``ApplicationError``.

    Types: ``ModelOverloaded`` (529 or an ``overloaded_error``, retryable),
    ``ModelContextTooLong`` (the prompt exceeds the context window, final),
    ``ModelHTTPError`` (others by status: 408/409/429/5xx retryable honouring
    ``retry-after``), ``ModelTimeout`` and ``ModelConnectionError`` (retryable).
    """
    if isinstance(exc, anthropic.APIStatusError):
        return _from_status_error(exc)
    if isinstance(exc, anthropic.APITimeoutError):
        return ApplicationError(
            "model request timed out before the endpoint answered",
            {"exception_type": type(exc).__name__},
            type="ModelTimeout",
        )
    if isinstance(exc, anthropic.APIConnectionError):
        return ApplicationError(
            "could not connect to the Anthropic endpoint",
            {"exception_type": type(exc).__name__},
            type="ModelConnectionError",
        )
    return to_application_error(exc)


def _from_status_error(exc: anthropic.APIStatusError) -> ApplicationError:
    status = exc.status_code
    error = exc.body.get("error") if isinstance(exc.body, dict) else None
    error_type = error.get("type") if isinstance(error, dict) else None
    text = error.get("message") if isinstance(error, dict) else None
    message = text if isinstance(text, str) else ""
    return status_failure(
        status,
        message,
        error_type=error_type,
        request_id=exc.request_id,
        retry_after=_retry_after(exc.response.headers),
        overloaded=status == 529 or error_type == "overloaded_error",
        too_long=_too_long(message),
    )


def _too_long(message: str) -> bool:
    """Whether the API's message says the prompt exceeds the context window."""
    lowered = message.lower()
    return "prompt is too long" in lowered or "context window" in lowered


def to_model_response(message: Any, request: ModelRequest) -> ModelResponse:
    """The ``ModelResponse`` for a Messages API answer (``anthropic.types.Message``)."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    kept: list[dict[str, Any]] = []
    for block in message.content:
        if block.type == "text":
            texts.append(block.text)
        elif block.type == "tool_use":
            calls.append(ToolCall(id=block.id, name=block.name, arguments=json.dumps(block.input)))
        elif block.type == "thinking":
            kept.append(
                {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
            )
        elif block.type == "redacted_thinking":
            kept.append({"type": "redacted_thinking", "data": block.data})
    content = "".join(texts) or None
    final = next((c for c in calls if c.name == FINAL_ANSWER_TOOL), None)
    if final is not None and request.output is not None:
        content, calls = _final_answer(final.arguments, request.output), []
    usage = message.usage
    read = usage.cache_read_input_tokens or 0
    written = usage.cache_creation_input_tokens or 0
    return ModelResponse(
        message=Message(
            role="assistant",
            content=content,
            tool_calls=calls,
            step=request.step,
            provider_items=kept,
        ),
        usage=Usage(
            requests=1,
            # The API counts uncached input apart; the SDK's input counts all of it.
            input_tokens=usage.input_tokens + read + written,
            output_tokens=usage.output_tokens,
            cached_tokens=read,
            cache_write_tokens=written,
        ),
        finish_reason=_FINISH_REASONS.get(message.stop_reason or "", message.stop_reason),
        model=message.model,
    )


def _to_turns(messages: Sequence[Message], cache: dict[str, str]) -> list[dict[str, Any]]:
    """Messages as Messages API turns: tool results in user turns, same roles merged.

    The latest compaction summary's block is a breakpoint: the prefix up to it (the
    task, then the summary) stays the same until the next compaction.
    """
    summary = max((i for i, m in enumerate(messages) if m.compaction is not None), default=-1)
    turns: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _to_blocks(message)
        if not blocks:
            continue
        if index == summary:
            blocks[-1]["cache_control"] = cache
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    return turns


def _to_blocks(message: Message) -> list[dict[str, Any]]:
    """One message's content blocks, in the order the API wants them."""
    if message.role == "tool":
        return [
            {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id,
                "content": message.content or "",
            }
        ]
    # Thinking blocks first and exactly as received: the API checks their signatures.
    blocks = [dict(item) for item in message.provider_items if item.get("type") in _THINKING_TYPES]
    if message.content:
        # A system message after the conversation began (a recalled memory) is sent
        # as the user's text: the API has no system turns.
        text = message.content if message.role != "system" else f"[system] {message.content}"
        blocks.append({"type": "text", "text": text})
    blocks.extend(
        {"type": "tool_use", "id": call.wire_id, "name": call.name, "input": arguments_object(call)}
        for call in message.tool_calls
    )
    return blocks


def _to_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """A chat-completions tool definition in the Messages API shape."""
    function = tool.get("function", tool)
    converted: dict[str, Any] = {"name": function["name"]}
    if function.get("description"):
        converted["description"] = function["description"]
    converted["input_schema"] = function.get("parameters") or {"type": "object", "properties": {}}
    return converted


def _final_answer_tool(schema: dict[str, Any], name: str) -> dict[str, Any]:
    """The tool whose input is the typed answer (the API has no response format)."""
    schema = dict(schema)
    if schema.get("type") != "object":
        defs = schema.pop("$defs", None)
        schema = {"type": "object", "properties": {"value": schema}, "required": ["value"]}
        if defs:
            schema["$defs"] = defs
    return {
        "name": FINAL_ANSWER_TOOL,
        "description": f"Give your final answer, a {name}, and stop.",
        "input_schema": schema,
    }
