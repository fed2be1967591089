"""``ScriptedModel``: a model provider that plays a script, for tests and offline runs."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from temporalio.exceptions import ApplicationError

from smyth_temporal.agent.messages import Message, ToolCall, Usage
from smyth_temporal.models._types import ModelRequest, ModelResponse

__all__ = ["ScriptStep", "ScriptedModel", "raw_tool_call", "reply", "tool_call"]

ScriptStep = ModelResponse | Sequence[ModelResponse] | Callable[[ModelRequest], ModelResponse]
"""One model turn of a script: a response, several tool-call responses merged into
one turn, or a function of the request (to answer from what the tools returned)."""


def reply(text: str) -> ModelResponse:
    """A turn in which the model answers with ``text`` and calls no tool.

    Added in 0.1.0.
    """
    return ModelResponse(message=Message(role="assistant", content=text))


def tool_call(name: str, /, **arguments: Any) -> ModelResponse:
    """A turn in which the model calls tool ``name`` with ``arguments``.

    Put several in a list to make one turn with several calls.

    Added in 0.1.0.
    """
    return raw_tool_call(name, json.dumps(arguments))


def raw_tool_call(name: str, arguments: str, /) -> ModelResponse:
    """A turn in which the model calls ``name`` with arguments written verbatim.

    The arguments may be malformed JSON: that is the point, to test how an agent
    copes with bad model output.

    Added in 0.1.0.
    """
    call = ToolCall(id="", name=name, arguments=arguments)
    return ModelResponse(message=Message(role="assistant", tool_calls=[call]))


class ScriptedModel:
    """A model provider that answers turn ``n`` of an agent with step ``n`` of a script.

    The turn comes from the request (``ModelRequest.step``), not from a counter, so the
    script picks up at the right place after a worker crash, an activity retry or on
    another worker process. A turn past the end of the script fails the run with a
    clear, non-retryable error. Every request is kept in ``requests`` for assertions.

    ```python
    model = ScriptedModel([tool_call("get_quote", symbol="ACME"), reply("ACME is up.")])
    ```

    Added in 0.1.0.
    """

    def __init__(self, steps: Sequence[ScriptStep], *, tokens_per_turn: int = 10) -> None:
        """Create the model.

        Args:
            steps: One entry per model turn, in order.
            tokens_per_turn: Usage reported per turn (input and output each), so that
                usage accounting can be tested too.
        """
        self.steps = list(steps)
        self.tokens_per_turn = tokens_per_turn
        self.requests: list[ModelRequest] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer with the script's step for ``request.step``."""
        self.requests.append(request)
        index = request.step - 1
        if not 0 <= index < len(self.steps):
            raise ApplicationError(
                f"ScriptedModel has no step {request.step} (the script has {len(self.steps)}); "
                f"agent {request.agent!r} asked for one more model turn than scripted",
                type="ScriptExhausted",
                non_retryable=True,
            )
        step = self.steps[index]
        if callable(step):
            response = step(request)
        elif isinstance(step, ModelResponse):
            response = step
        else:
            response = ModelResponse(
                message=Message(
                    role="assistant",
                    content=next((r.message.content for r in step if r.message.content), None),
                    tool_calls=[c for r in step for c in r.message.tool_calls],
                )
            )
        return _numbered(response, request.step, self.tokens_per_turn)


def _numbered(response: ModelResponse, step: int, tokens: int) -> ModelResponse:
    """Give tool calls the unique ids a real model would, and report some usage."""
    calls = [
        call if call.id else call.model_copy(update={"id": f"call_{step}_{index}"})
        for index, call in enumerate(response.message.tool_calls)
    ]
    return response.model_copy(
        update={
            "message": response.message.model_copy(update={"tool_calls": calls, "step": step}),
            "usage": Usage(requests=1, input_tokens=tokens, output_tokens=tokens),
            "model": "scripted",
            "finish_reason": "tool_calls" if calls else "stop",
        }
    )
