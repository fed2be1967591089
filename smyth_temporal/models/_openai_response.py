"""Chat completions, streamed or not, as ``ModelResponse``s (the OpenAI provider's side)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from smyth_temporal.types.messages import Message, ToolCall, Usage
from smyth_temporal.types.model import ModelRequest, ModelResponse, OutputSchema

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletion, ChatCompletionChunk
    from openai.types.completion_usage import CompletionUsage

__all__ = ["FINAL_ANSWER_TOOL", "StreamedCompletion", "to_model_response"]

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


class StreamedCompletion:
    """A streamed chat completion put together chunk by chunk, in time linear in its size.

    openai's ``ChatCompletionStreamState`` re-serialises the whole message so far for
    every chunk: a turn of 1,000 tool calls took about 50 s of CPU on the worker's event
    loop, long enough for heartbeats to stop and the call to be retried forever. Here
    each chunk only appends its pieces; they are joined once, at the end.

    Strings accumulate as openai's accumulator does (pieces of text, ids, names and
    arguments concatenate; ``type`` is replaced), so the completion is the one it gave
    (``tests/invariants/test_streamed_completion.py`` holds it to that); calls are
    ordered by their index, whatever order their pieces come in.
    """

    def __init__(self) -> None:
        self._head: dict[str, Any] | None = None
        self._choices: dict[int, _Choice] = {}
        self._usage: CompletionUsage | None = None

    def add(self, chunk: ChatCompletionChunk) -> None:
        """Take one chunk of the stream."""
        if self._head is None:
            self._head = {
                "id": chunk.id,
                "created": chunk.created,
                "model": chunk.model,
                "service_tier": chunk.service_tier,
            }
        self._head["system_fingerprint"] = chunk.system_fingerprint
        if chunk.usage is not None:
            self._usage = chunk.usage
        for choice in chunk.choices:
            self._choices.setdefault(choice.index, _Choice()).add(choice)

    def completion(self) -> ChatCompletion | None:
        """The completion so far (``None`` before the first chunk).

        An empty text is ``None``, as an unstreamed answer has it: streams open with an
        empty text even when the model only calls tools (vLLM does).
        """
        from openai.types.chat import ChatCompletion

        if self._head is None:
            return None
        choices = [self._choices[index].wire(index) for index in sorted(self._choices)]
        return ChatCompletion.construct(
            **self._head, object="chat.completion", choices=choices, usage=self._usage
        )


@dataclass
class _Pieces:
    """A string streamed in pieces: ``None`` until a piece comes, joined once."""

    pieces: list[str] | None = None

    def add(self, piece: str | None) -> None:
        if piece is None:
            return
        if self.pieces is None:
            self.pieces = []
        self.pieces.append(piece)

    def text(self) -> str | None:
        return None if self.pieces is None else "".join(self.pieces)


@dataclass
class _Call:
    """One tool call of a streamed message."""

    type: str | None = None
    id: _Pieces = field(default_factory=_Pieces)
    name: _Pieces = field(default_factory=_Pieces)
    arguments: _Pieces = field(default_factory=_Pieces)

    def wire(self) -> dict[str, Any]:
        function = {"name": self.name.text(), "arguments": self.arguments.text()}
        return {"id": self.id.text(), "type": self.type, "function": function}


@dataclass
class _Choice:
    """One choice of a streamed completion: its message's pieces and its finish."""

    role: str | None = None
    finish_reason: str | None = None
    content: _Pieces = field(default_factory=_Pieces)
    refusal: _Pieces = field(default_factory=_Pieces)
    calls: dict[int, _Call] = field(default_factory=dict)

    def add(self, choice: Any) -> None:
        delta = choice.delta
        self.role = delta.role or self.role
        self.content.add(delta.content)
        self.refusal.add(delta.refusal)
        for piece in delta.tool_calls or []:
            call = self.calls.setdefault(piece.index, _Call())
            call.type = piece.type or call.type
            call.id.add(piece.id)
            if piece.function is not None:
                call.name.add(piece.function.name)
                call.arguments.add(piece.function.arguments)
        self.finish_reason = choice.finish_reason or self.finish_reason

    def wire(self, index: int) -> dict[str, Any]:
        message: dict[str, Any] = {
            "role": self.role or "assistant",
            "content": self.content.text() or None,
            "refusal": self.refusal.text(),
        }
        if self.calls:
            message["tool_calls"] = [self.calls[i].wire() for i in sorted(self.calls)]
        return {"index": index, "finish_reason": self.finish_reason, "message": message}
