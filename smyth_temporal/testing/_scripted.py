"""``ScriptedModel``: a model provider that plays a script, for tests and offline runs."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any

from temporalio.exceptions import ApplicationError

from smyth_temporal.models import TextSink
from smyth_temporal.testing._fake_stream import text_pieces
from smyth_temporal.types.messages import Message, ToolCall, Usage
from smyth_temporal.types.model import ModelRequest, ModelResponse

__all__ = [
    "Judge",
    "ScriptStep",
    "ScriptedAgents",
    "ScriptedModel",
    "Summarizer",
    "abstaining_judge",
    "raw_tool_call",
    "reply",
    "scripted_summary",
    "tool_call",
]

ScriptStep = ModelResponse | Sequence[ModelResponse] | Callable[[ModelRequest], ModelResponse]
"""One model turn of a script: a response, several tool-call responses merged into
one turn, or a function of the request (to answer from what the tools returned)."""


Summarizer = Callable[[ModelRequest], str]
"""Answers a summary request (``ModelRequest.purpose == "summary"``) with its text."""

Judge = Callable[[ModelRequest], str]
"""Answers a review request (``ModelRequest.purpose == "review"``, an automatic
reviewer's) with its text: a JSON verdict. Added in 0.9.0."""


def abstaining_judge(request: ModelRequest) -> str:
    """The scripted model's default review: it abstains, so the people decide.

    Added in 0.9.0.
    """
    return '{"verdict": "abstain", "reason": "scripted"}'


_SUMMARY_QUOTE_CHARS = 300


def scripted_summary(request: ModelRequest) -> str:
    """The scripted model's default summary: deterministic, and traceable in tests.

    It names how many transcript lines it read and quotes the start of the last one.

    Added in 0.2.0.
    """
    transcript = request.messages[-1].content or "" if request.messages else ""
    lines = [line for line in transcript.split("\n\n") if line.strip()]
    last = lines[-1][:_SUMMARY_QUOTE_CHARS] if lines else ""
    return f"Summary of {len(lines)} earlier messages. Latest: {last}"


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

    Summary requests (context compaction) are not turns: ``summarizer`` answers them
    and they are kept in ``summary_requests``.

    It can stream too (a ``StreamingModelProvider``): ``stream`` answers as
    ``complete`` does and hands over the text a word at a time.

    ```python
    model = ScriptedModel([tool_call("get_quote", symbol="ACME"), reply("ACME is up.")])
    ```

    Added in 0.1.0; ``stream`` and ``piece_delay`` added in 0.3.0.
    """

    def __init__(
        self,
        steps: Sequence[ScriptStep],
        *,
        tokens_per_turn: int = 10,
        summarizer: Summarizer = scripted_summary,
        piece_delay: float = 0.0,
        judge: Judge = abstaining_judge,
    ) -> None:
        """Create the model.

        Args:
            steps: One entry per model turn, in order.
            tokens_per_turn: Usage reported per turn (input and output each), so that
                usage accounting can be tested too.
            summarizer: Writes the summaries compaction asks for (it may raise, to
                test a failing summarizer).
            piece_delay: Seconds ``stream`` waits between two pieces of text, so a
                test can watch the text arrive (or interrupt it midway).
            judge: Writes the verdicts automatic model reviewers ask for (default:
                abstain). Added in 0.9.0.
        """
        self.steps = list(steps)
        self.tokens_per_turn = tokens_per_turn
        self.summarizer = summarizer
        self.piece_delay = piece_delay
        self.requests: list[ModelRequest] = []
        self.summary_requests: list[ModelRequest] = []
        self.judge = judge
        self.review_requests: list[ModelRequest] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer with the script's step for ``request.step`` (or a summary)."""
        if request.purpose == "summary":
            self.summary_requests.append(request)
            text = self.summarizer(request)
            return _numbered(reply(text), request.step, self.tokens_per_turn)
        if request.purpose == "review":
            self.review_requests.append(request)
            return _numbered(reply(self.judge(request)), request.step, self.tokens_per_turn)
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

    async def stream(self, request: ModelRequest, on_text: TextSink) -> ModelResponse:
        """Answer as ``complete`` does, passing the text to ``on_text`` word by word.

        Each piece is a word with the whitespace after it, so the pieces concatenate
        exactly to the reply's content.

        Added in 0.3.0.
        """
        response = await self.complete(request)
        for index, piece in enumerate(text_pieces(response.message.content or "")):
            if index and self.piece_delay > 0:
                await asyncio.sleep(self.piece_delay)
            on_text(piece)
        return response


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


class ScriptedAgents:
    """One ``ScriptedModel`` per agent type, for a worker that serves several agents.

    Each agent's turns are counted from its own run's steps, so a parent and its
    sub-agents (or two agents a test runs one after the other) each play their own
    script. A request from an agent without a script fails its run, non-retryably.

    ```python
    model = ScriptedAgents(
        Boss=ScriptedModel([tool_call("delegate", agent="Intern", task="Quote."), reply("Done.")]),
        Intern=ScriptedModel([reply("ACME at 42.")]),
    )
    ```

    Added in 0.5.0.
    """

    def __init__(self, **scripts: ScriptedModel) -> None:
        """Create the model; each keyword names an agent (its workflow type)."""
        self.scripts = scripts

    def _script(self, request: ModelRequest) -> ScriptedModel:
        script = self.scripts.get(request.agent)
        if script is None:
            raise ApplicationError(
                f"ScriptedAgents has no script for agent {request.agent!r} "
                f"(scripted: {', '.join(sorted(self.scripts))})",
                type="ScriptExhausted",
                non_retryable=True,
            )
        return script

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer with the requesting agent's script."""
        return await self._script(request).complete(request)

    async def stream(self, request: ModelRequest, on_text: TextSink) -> ModelResponse:
        """Stream the requesting agent's script."""
        return await self._script(request).stream(request, on_text)
