"""What crosses the boundary between an agent workflow and the model activity (pure data)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from smyth_temporal.types.live import LiveTarget
from smyth_temporal.types.messages import Message, Usage

__all__ = [
    "CONTEXT_TOO_LONG_ERROR",
    "MODEL_ACTIVITY",
    "MODEL_QUEUE_SUFFIX",
    "OVERLOADED_ERROR",
    "ModelRequest",
    "ModelResponse",
    "OutputSchema",
    "RecordedRun",
    "is_context_too_long",
    "is_overloaded",
    "model_task_queue",
    "turn_key",
]

MODEL_ACTIVITY = "smyth.model.complete"
"""The model activity's type name; stable, so running agents survive deploys."""

MODEL_QUEUE_SUFFIX = "-models"
"""Model calls of agents on task queue ``Q`` go to ``Q-models`` (``model_task_queue``)."""


OVERLOADED_ERROR = "ModelOverloaded"
"""The error type of a model call the endpoint could not serve for load (a 529, an
``overloaded_error``): retryable, and where the agent has ``fallback_models`` the
call moves on to the next one. Added in 0.10.0."""

CONTEXT_TOO_LONG_ERROR = "ModelContextTooLong"
"""The error type of a prompt longer than the model's context window: final for the
call; the agent compacts and takes the turn again once. Added in 0.10.0."""

# 503 Service Unavailable and 529 (Anthropic's overloaded) say the endpoint could not
# take the call now, not that the call is wrong: another model may take it.
_UNAVAILABLE_STATUSES = frozenset({503, 529})


def _status(details: Sequence[Any]) -> object:
    first = details[0] if details else None
    return first.get("status_code") if isinstance(first, dict) else None


def is_overloaded(error_type: str | None, details: Sequence[Any] = ()) -> bool:
    """Whether a failed model call's error says the endpoint was overloaded or unavailable.

    ``ModelOverloaded``, or an HTTP error (``ModelHTTPError``) of status 503 or 529
    (``details[0]["status_code"]``, as the providers classify them).

    Added in 0.10.0.
    """
    if error_type == OVERLOADED_ERROR:
        return True
    return error_type == "ModelHTTPError" and _status(details) in _UNAVAILABLE_STATUSES


def is_context_too_long(error_type: str | None, details: Sequence[Any] = ()) -> bool:
    """Whether a failed model call's error says the prompt exceeds the context window.

    ``ModelContextTooLong`` (the Anthropic provider), or an OpenAI-compatible
    endpoint's ``context_length_exceeded`` error code.

    Added in 0.10.0.
    """
    if error_type == CONTEXT_TOO_LONG_ERROR:
        return True
    first = details[0] if details else None
    return isinstance(first, dict) and first.get("error_code") == "context_length_exceeded"


def model_task_queue(task_queue: str) -> str:
    """The task queue of the model calls of agents on ``task_queue``.

    Its own queue, so the server can rate-limit model calls for the whole fleet and
    share them fairly between tenants (``smyth limits set``); the workers of
    ``task_queue`` poll it too.

    Added in 0.5.0.
    """
    return task_queue + MODEL_QUEUE_SUFFIX


class OutputSchema(BaseModel):
    """The shape the model's final answer must have (``AgentConfig.output_type``).

    Added in 0.3.0.
    """

    name: str
    """A name for the shape (the type's name), as providers ask for one."""
    json_schema: dict[str, Any]
    """The JSON schema of the answer."""


class RecordedRun(BaseModel):
    """A run whose recorded model turns may answer a fork's (``replay_model_turns``).

    A reference, never a copy: the model activity reads the turns from the run's own
    history (and the runs it continued as new into), through the worker's data converter.

    Added in 0.10.0.
    """

    workflow_id: str
    """The parent's workflow id."""
    run_id: str
    """The run of the parent's chain that took the fork's step."""
    after_step: int = 0
    """The fork's step: only turns after it can be asked again, so only those are read."""


class ModelRequest(BaseModel):
    """One chat-completions request, as the workflow hands it to the model activity.

    Only serializable data: the worker resolves ``model`` to a provider and its
    credentials, so no key or client ever enters the workflow's history.
    """

    model: str
    """The model name; the worker's provider resolves it."""
    messages: list[Message]
    """The prompt."""
    tools: list[dict[str, Any]] = Field(default_factory=list)
    """Tool definitions in the chat-completions ``tools`` shape."""
    settings: dict[str, Any] = Field(default_factory=dict)
    """Extra request parameters (``temperature``, ``max_tokens``, ...)."""
    agent: str = ""
    """The agent's workflow type name (for logs and scripted models)."""
    step: int = 0
    """The agent step this request is for, from 0."""
    purpose: Literal["turn", "summary", "review"] = "turn"
    """``turn``: the agent's next move; ``summary``: compacting older turns into a
    summary (the step is then the one the compaction happened at); ``review``: an
    automatic reviewer judging an approval request (the step is the request's).
    Added in 0.2.0. Changed in 0.9.0: ``review``."""
    output: OutputSchema | None = None
    """The shape of the final answer, when the agent has an ``output_type``: providers
    ask for it (a JSON-schema response format, or a final-answer tool). Added in 0.3.0."""
    stream_id: str | None = None
    """When set, the model activity streams the text to the run's event stream as
    ``text_delta`` events of this message id (the result is the whole message either
    way). Added in 0.3.0."""
    live: LiveTarget | None = None
    """Where the streamed text goes: the turn's live channel (``types.live``). ``None``
    on a call scheduled before 0.6.0, which streams to the run's own stream. Added in
    0.6.0."""
    tenant: str = "default"
    """Whose agent asks: the fairness key of the call on the model task queue.
    Added in 0.5.0."""
    overloaded_after: int | None = None
    """When set, an overloaded or unavailable endpoint (``is_overloaded``) at this
    attempt or a later one fails the call for good (``ModelOverloaded``), so that the
    agent moves on to its next fallback model instead of retrying this one. ``None``:
    Temporal's retry policy alone decides. Added in 0.10.0."""
    replay_from: RecordedRun | None = None
    """Set on a fork's turns and summaries (``AgentInput.replay_model_turns``): when
    this run recorded a request equal to this one (``turn_key``), the model activity
    answers with its recorded response instead of calling the model. Added in 0.10.0."""


class ModelResponse(BaseModel):
    """The model's answer to a ``ModelRequest``."""

    message: Message
    """The assistant message: text, tool calls, or both."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens used by this request (``requests`` is 1)."""
    finish_reason: str | None = None
    """Why the model stopped, as the endpoint reported it."""
    model: str | None = None
    """The model that answered, as the endpoint reported it."""
    replayed: bool = False
    """Answered from a recorded run (``ModelRequest.replay_from``), not by the model:
    ``usage`` is then zero, as nothing was paid for it. Added in 0.10.0."""


_ANSWER_DECIDING = {"purpose", "model", "messages", "tools", "settings", "output"}
"""What decides a model's answer; not the step, the tenant or where the text streams."""


def turn_key(request: ModelRequest) -> str:
    """A hash of what decides the answer to ``request``: equal keys, the same question.

    Every request carries the whole conversation, so a fork's request equals its
    parent's recorded one exactly while the two conversations have not diverged.

    Added in 0.10.0.
    """
    asked = request.model_dump(mode="json", include=_ANSWER_DECIDING)
    text = json.dumps(asked, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()
