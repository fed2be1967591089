"""OpenAI's Responses API as a model provider (``openai-responses:gpt-5``).

The same ``openai`` client, key and error classification as the chat-completions
provider (``OpenAIProvider``); what the Responses API adds, kept here:

* **Reasoning items.** Requests are stateless (``store=False``); a reasoning model's
  ask for ``include=["reasoning.encrypted_content"]`` (other models refuse it, so
  only models that reason do: ``is_reasoning_model``, or the provider's
  ``reasoning=``, or a request whose settings ask for reasoning). The model's reasoning
  comes back as ``reasoning`` items with encrypted content, kept in the assistant
  message's ``provider_items`` and sent back unchanged before the message's text and
  calls, so the model keeps its reasoning across tool calls without the server
  storing the conversation. Left out, as the API would refuse them: a reasoning item
  with nothing after it (an empty answer), one without encrypted content while
  ``store`` is off (it names an item the server never stored), and all of them for a
  model that does not reason (a fallback from gpt-5 to gpt-4o).
* **Items.** Messages become input items; tool calls become ``function_call`` items
  and their results ``function_call_output`` items, with the ids the model gave.
  Tools are sorted by name so the prompt's prefix is the same from step to step and
  OpenAI's prompt cache serves it (``input_tokens_details.cached_tokens``).
* **Settings.** Chat-completions names are translated: ``max_tokens`` and
  ``max_completion_tokens`` to ``max_output_tokens``, ``reasoning_effort`` to
  ``reasoning.effort``; others go as they are. A typed answer is asked for with
  ``text.format`` (a JSON schema, not strict).
* **Usage.** Input, cached, cache-write, output and reasoning tokens.
* **Errors.** ``to_application_error``, as the chat-completions provider; a stream
  that fails (``response.failed`` or an ``error`` event) or ends before the response
  completes is retryable, unless its code says the prompt is too long
  (``context_length_exceeded``, final, so the agent compacts).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from temporalio.exceptions import ApplicationError

from smyth_temporal._redaction import masked_cause
from smyth_temporal.models._openai import DEFAULT_MODEL_HTTP_TIMEOUT, openai_client, unwalked
from smyth_temporal.models._provider import TextSink
from smyth_temporal.security import Secrets
from smyth_temporal.types.messages import Message, ToolCall, Usage
from smyth_temporal.types.model import CONTEXT_TOO_LONG_ERROR, ModelRequest, ModelResponse
from smyth_temporal.types.secrets import SecretRef

if TYPE_CHECKING:
    from openai import AsyncOpenAI
    from openai.types.responses import Response

__all__ = ["OpenAIResponsesProvider", "is_reasoning_model"]

_ENCRYPTED_REASONING = "reasoning.encrypted_content"

_EVENTS_BETWEEN_YIELDS = 64
"""Streamed events handled between two turns of the event loop (see ``OpenAIProvider``)."""

# Chat-completions setting names and what the Responses API calls them.
_RENAMED_SETTINGS = {
    "max_tokens": "max_output_tokens",
    "max_completion_tokens": "max_output_tokens",
}

# o1, o3, o4-mini, gpt-5, gpt-5-mini, codex-mini: OpenAI's models that reason;
# gpt-5-chat does not (it refuses encrypted reasoning, as gpt-4o and gpt-4.1 do).
_REASONING_MODEL = re.compile(r"(?:o\d|gpt-5(?!-chat)|codex)")

# Why a response stopped early, in the chat-completions words the rest of the SDK reads.
_INCOMPLETE_REASONS = {"max_output_tokens": "length", "content_filter": "content_filter"}


def is_reasoning_model(model: str) -> bool:
    """Whether OpenAI's ``model`` reasons: the o-series, gpt-5 (not gpt-5-chat), codex.

    Added in 0.10.0.
    """
    return _REASONING_MODEL.match(model) is not None


class OpenAIResponsesProvider:
    """The Responses API through the ``openai`` package, reasoning carried between turns.

    Configured as ``OpenAIProvider`` is (``OPENAI_BASE_URL``, ``OPENAI_API_KEY`` or
    the arguments; the client's retries off). Agents name its models
    ``openai-responses:NAME`` with the default provider.

    Added in 0.10.0.
    """

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | SecretRef | None = None,
        timeout: float = DEFAULT_MODEL_HTTP_TIMEOUT,
        client: AsyncOpenAI | None = None,
        secrets: Secrets | None = None,
        reasoning: bool | Callable[[str], bool] = is_reasoning_model,
    ) -> None:
        """Configure the provider; the key is checked now, so a worker fails at start.

        Args:
            base_url: The endpoint (default: ``OPENAI_BASE_URL``, else OpenAI's).
            api_key: The key, or ``secret("NAME")`` resolved with ``secrets``
                (default: ``OPENAI_API_KEY``).
            timeout: Seconds per HTTP request.
            client: A ready client (its retry setting is left as the caller made it).
            secrets: What resolves a ``secret("NAME")`` key (default: ``Secrets.from_env()``).
            reasoning: Which models reason, so that their requests ask for the encrypted
                reasoning to carry between turns: a test of the model name (default:
                ``is_reasoning_model``; give your own for deployments named otherwise,
                as Azure's are), or ``True``/``False`` for every model.

        Raises:
            ConfigurationError: No key given and ``OPENAI_API_KEY`` is not set, or
                the secret named cannot be resolved on this worker.
        """
        if client is None:
            client = openai_client(
                base_url=base_url, api_key=api_key, timeout=timeout, secrets=secrets
            )
        self._client = client
        self._reasoning = reasoning

    def params(self, request: ModelRequest) -> dict[str, Any]:
        """The Responses API parameters this provider sends for ``request``."""
        reasons = self._reasoning
        if callable(reasons):
            reasons = reasons(request.model)
        asked = "reasoning" in request.settings or "reasoning_effort" in request.settings
        return params(request, encrypted_reasoning=reasons or asked)

    def _sent(self, request: ModelRequest) -> dict[str, Any]:
        # The items and tools skip the SDK's walk of its parameter types (see unwalked).
        return unwalked(self.params(request), "input", "tools")

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Send one Responses request.

        Raises:
            temporalio.exceptions.ApplicationError: Classified retryable or not.
        """
        import openai

        from smyth_temporal.models._errors import to_application_error

        try:
            response = await self._client.responses.create(**self._sent(request))
        except openai.OpenAIError as exc:
            raise to_application_error(exc) from masked_cause(exc)
        return to_model_response(response, request)

    async def stream(self, request: ModelRequest, on_text: TextSink) -> ModelResponse:
        """Send one Responses request, streaming its text to ``on_text``.

        The pieces concatenate to the answer's ``content``; the response is the one
        the stream's ``response.completed`` (or ``response.incomplete``) event holds.

        Raises:
            temporalio.exceptions.ApplicationError: Classified as ``complete``
                classifies; a stream that fails or stops before its end is retryable.
        """
        import openai

        from smyth_temporal.models._errors import to_application_error

        final: Response | None = None
        try:
            stream = await self._client.responses.create(**self._sent(request), stream=True)
            async with stream:
                received = 0
                async for event in stream:
                    received += 1
                    if received % _EVENTS_BETWEEN_YIELDS == 0:
                        await asyncio.sleep(0)  # let the activity's heartbeat in
                    if event.type == "response.output_text.delta":
                        on_text(event.delta)
                    elif event.type in ("response.completed", "response.incomplete"):
                        final = event.response
                    elif event.type == "response.failed":
                        error = event.response.error
                        raise _stream_error(
                            error.code if error else None, error.message if error else ""
                        )
                    elif event.type == "error":
                        raise _stream_error(event.code, event.message)
        except openai.OpenAIError as exc:
            raise to_application_error(exc) from masked_cause(exc)
        if final is None:
            raise _stream_error(None, "the stream ended before the response completed")
        return to_model_response(final, request)


def params(request: ModelRequest, *, encrypted_reasoning: bool = True) -> dict[str, Any]:
    """The Responses API parameters for ``request``.

    Args:
        request: The request.
        encrypted_reasoning: Ask for the reasoning's encrypted content (models that do
            not reason refuse the request that asks).
    """
    wire: dict[str, Any] = {}
    for name, value in request.settings.items():
        if name == "reasoning_effort":
            wire["reasoning"] = {**wire.get("reasoning", {}), "effort": value}
        elif name == "reasoning" and isinstance(value, dict):
            wire["reasoning"] = {**value, **wire.get("reasoning", {})}
        else:
            wire[_RENAMED_SETTINGS.get(name, name)] = value
    wire.setdefault("store", False)
    given = wire.get("include") or []
    include = [given] if isinstance(given, str) else list(given)
    if encrypted_reasoning and _ENCRYPTED_REASONING not in include:
        include.append(_ENCRYPTED_REASONING)
    if include:
        wire["include"] = include
    tools = sorted((_to_tool(t) for t in request.tools), key=lambda t: str(t["name"]))
    if tools:
        wire["tools"] = tools
    if request.output is not None:
        text = dict(wire.get("text") or {})
        text["format"] = {
            "type": "json_schema",
            "name": request.output.name,
            "schema": request.output.json_schema,
            "strict": False,
        }
        wire["text"] = text
    wire["model"] = request.model
    wire["input"] = to_items(
        request.messages, stored=bool(wire["store"]), reasoning=encrypted_reasoning
    )
    return wire


def to_items(
    messages: Sequence[Message], *, stored: bool = False, reasoning: bool = True
) -> list[dict[str, Any]]:
    """Messages as Responses input items, in order.

    Args:
        messages: The conversation.
        stored: The request has ``store`` on: the server keeps the items it gives out,
            so reasoning items without encrypted content may name them.
        reasoning: The model reasons. A model that does not (a fallback from gpt-5 to
            gpt-4o) gets no reasoning items: it could not read them.
    """
    items: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.tool_call_id,
                    "output": message.content or "",
                }
            )
        elif message.role == "assistant":
            items.extend(_assistant_items(message, stored, reasoning))
        else:
            items.append({"role": message.role, "content": message.content or ""})
    return items


def _assistant_items(message: Message, stored: bool, reasoning: bool) -> list[dict[str, Any]]:
    said: list[dict[str, Any]] = []
    if message.content:
        said.append({"role": "assistant", "content": message.content})
    said.extend(
        {
            "type": "function_call",
            "call_id": call.wire_id,
            "name": call.name,
            "arguments": call.arguments,
        }
        for call in message.tool_calls
    )
    if not said:
        return []  # reasoning alone is refused: it must lead to an item
    # Reasoning first, exactly as received: what the model thought before it answered.
    thought = [
        dict(item)
        for item in message.provider_items
        if reasoning
        and item.get("type") == "reasoning"
        and (stored or item.get("encrypted_content"))
    ]
    return [*thought, *said]


def _to_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """A chat-completions tool definition as a Responses function tool (not strict)."""
    function = tool.get("function", tool)
    converted: dict[str, Any] = {"type": "function", "name": function["name"]}
    if function.get("description"):
        converted["description"] = function["description"]
    converted["parameters"] = function.get("parameters") or {"type": "object", "properties": {}}
    # The Responses API makes function tools strict unless told: a schema that is not
    # strict-compatible (optional properties) would be refused.
    converted["strict"] = False
    return converted


def to_model_response(response: Response, request: ModelRequest) -> ModelResponse:
    """The ``ModelResponse`` for a Responses API ``response``."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    kept: list[dict[str, Any]] = []
    refused = False
    for item in response.output:
        if item.type == "message":
            for part in item.content:
                if part.type == "output_text":
                    texts.append(part.text)
                elif part.type == "refusal":
                    refused = True
        elif item.type == "function_call":
            calls.append(
                ToolCall(id=item.call_id, name=item.name, arguments=item.arguments or "{}")
            )
        elif item.type == "reasoning":
            kept.append(item.to_dict())
    if response.status == "failed":
        error = response.error
        raise _stream_error(error.code if error else None, error.message if error else "")
    return ModelResponse(
        message=Message(
            role="assistant",
            content="".join(texts) or None,
            tool_calls=calls,
            step=request.step,
            provider_items=kept,
        ),
        usage=_usage(response),
        finish_reason=_finish_reason(response, calls, refused),
        model=response.model,
    )


def _usage(response: Response) -> Usage:
    usage = response.usage
    if usage is None:
        return Usage(requests=1)
    details = usage.input_tokens_details
    output_details = usage.output_tokens_details
    return Usage(
        requests=1,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cached_tokens=(details.cached_tokens or 0) if details is not None else 0,
        cache_write_tokens=getattr(details, "cache_write_tokens", None) or 0,
        reasoning_tokens=(output_details.reasoning_tokens or 0) if output_details else 0,
    )


def _finish_reason(response: Response, calls: list[ToolCall], refused: bool) -> str:
    if refused:
        return "content_filter"
    if response.status == "incomplete":
        reason = response.incomplete_details.reason if response.incomplete_details else None
        return _INCOMPLETE_REASONS.get(reason or "", reason or "length")
    return "tool_calls" if calls else "stop"


def _stream_error(code: str | None, message: str) -> ApplicationError:
    """A response that failed after the request was taken (no HTTP status to classify)."""
    from smyth_temporal.models._errors import _truncate

    details = {"error_code": code}
    if code == "context_length_exceeded":
        return ApplicationError(
            f"the prompt is longer than the model's context window: {_truncate(message)}",
            details,
            type=CONTEXT_TOO_LONG_ERROR,
            non_retryable=True,
        )
    return ApplicationError(
        f"the model's response failed ({code or 'no code'}): {_truncate(message)}",
        details,
        type="ModelError",
        non_retryable=False,
    )
