"""The OpenAI-compatible model provider (OpenAI, Azure, vLLM, Ollama, llama.cpp, ...)."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Literal

from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.types.messages import Message, ToolCall, Usage
from smyth_temporal.types.model import ModelRequest, ModelResponse, OutputSchema

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = [
    "DEFAULT_MODEL_HTTP_TIMEOUT",
    "FINAL_ANSWER_TOOL",
    "OpenAIProvider",
    "StructuredOutput",
]

FINAL_ANSWER_TOOL = "final_answer"
"""The tool a typed answer is given through when ``structured_output="tool"``."""

StructuredOutput = Literal["json_schema", "tool"]
"""How a typed final answer is asked for; see ``OpenAIProvider``."""

DEFAULT_MODEL_HTTP_TIMEOUT = 120.0
"""Seconds one HTTP request to the endpoint may take before it counts as timed out."""


class OpenAIProvider:
    """Chat completions through the ``openai`` package against any compatible endpoint.

    The endpoint and key come from the arguments or, as the ``openai`` package does,
    from ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``. The client is built with its own
    retries off: Temporal's retry policy on the model activity is the only retry loop,
    and errors are classified for it (408/409/429/5xx and timeouts retryable, honouring
    ``Retry-After``; other 4xx final).

    Added in 0.1.0.
    """

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = DEFAULT_MODEL_HTTP_TIMEOUT,
        client: AsyncOpenAI | None = None,
        structured_output: StructuredOutput = "json_schema",
    ) -> None:
        """Configure the provider; the key is checked now, so a worker fails at start.

        Args:
            base_url: The endpoint, e.g. ``http://localhost:11434/v1``.
            api_key: The key; endpoints that need none accept any string.
            timeout: Seconds per HTTP request.
            client: A ready client (its retry setting is left as the caller made it).
            structured_output: How a typed final answer (``AgentConfig.output_type``)
                is asked for: ``json_schema`` (the ``response_format`` of OpenAI, vLLM,
                Ollama, llama.cpp) or ``tool`` (a ``final_answer`` tool, for endpoints
                without structured output).

        Raises:
            ConfigurationError: No API key given and ``OPENAI_API_KEY`` is not set.
        """
        if client is None:
            from openai import AsyncOpenAI

            key = api_key or os.environ.get("OPENAI_API_KEY")
            if not key:
                raise ConfigurationError(
                    "the OpenAI-compatible model provider needs an API key: set OPENAI_API_KEY "
                    "(any value for endpoints without keys) or choose another provider"
                )
            client = AsyncOpenAI(
                base_url=base_url or os.environ.get("OPENAI_BASE_URL") or None,
                api_key=key,
                max_retries=0,
                timeout=timeout,
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
        try:
            completion = await self._client.chat.completions.create(
                model=request.model,
                messages=[_to_openai(m) for m in request.messages],  # type: ignore[misc]
                **params,
            )
        except openai.OpenAIError as exc:
            raise to_application_error(exc) from exc
        if not completion.choices:
            raise to_application_error(ValueError("the model endpoint returned no choices"))
        choice = completion.choices[0]
        calls = [
            ToolCall(
                id=call.id or f"call_{request.step}_{index}",
                name=call.function.name,
                arguments=call.function.arguments or "{}",
            )
            for index, call in enumerate(choice.message.tool_calls or [])
            if call.type == "function"
        ]
        content = choice.message.content
        final = next((c for c in calls if c.name == FINAL_ANSWER_TOOL), None)
        if final is not None and request.output is not None:
            # The final-answer tool is how the model answers, not a call to run.
            content, calls = _final_answer(final.arguments, request.output), []
        usage = completion.usage
        return ModelResponse(
            message=Message(
                role="assistant",
                content=content,
                tool_calls=calls,
                step=request.step,
            ),
            usage=Usage(
                requests=1,
                input_tokens=usage.prompt_tokens if usage else 0,
                output_tokens=usage.completion_tokens if usage else 0,
            ),
            finish_reason=choice.finish_reason,
            model=completion.model,
        )


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


def _final_answer(arguments: str, output: OutputSchema) -> str:
    """The answer's JSON text from the final-answer tool's arguments."""
    if output.json_schema.get("type") == "object":
        return arguments
    try:
        return json.dumps(json.loads(arguments)["value"])
    except (ValueError, KeyError, TypeError):
        return arguments  # validated (and reported to the model) in the workflow
