"""Chat completions, streamed or not, as ``ModelResponse``s (the OpenAI provider's side)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from smyth_temporal.types.messages import Message, ToolCall, Usage
from smyth_temporal.types.model import ModelRequest, ModelResponse, OutputSchema

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletion

__all__ = ["FINAL_ANSWER_TOOL", "to_model_response"]

FINAL_ANSWER_TOOL = "final_answer"
"""The tool a typed answer is given through when ``structured_output="tool"``."""


def to_model_response(completion: ChatCompletion, request: ModelRequest) -> ModelResponse:
    """The ``ModelResponse`` for a completed chat completion, streamed or not."""
    from smyth_temporal.models._errors import to_application_error

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
            cached_tokens=_cached(usage),
        ),
        finish_reason=choice.finish_reason,
        model=completion.model,
    )


def _cached(usage: Any) -> int:
    """Prompt tokens served from the endpoint's cache, where it says (OpenAI does)."""
    details = getattr(usage, "prompt_tokens_details", None)
    return (getattr(details, "cached_tokens", None) or 0) if details is not None else 0


def _final_answer(arguments: str, output: OutputSchema) -> str:
    """The answer's JSON text from the final-answer tool's arguments."""
    if output.json_schema.get("type") == "object":
        return arguments
    try:
        return json.dumps(json.loads(arguments)["value"])
    except (ValueError, KeyError, TypeError):
        return arguments  # validated (and reported to the model) in the workflow
