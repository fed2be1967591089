"""An OpenAI-compatible chat endpoint over durable sessions (``/openai/v1``).

Any OpenAI client talks to an agent: ``model`` names the agent, ``user`` (or the
``X-Smyth-Session`` header) names the session, and only the last user message is sent,
because the session keeps the conversation itself (durably, across calls, restarts
and replicas). The reply comes back in OpenAI's shape, whole or as
``chat.completion.chunk`` events ending with ``data: [DONE]``; both carry the same
content: the agent's answer, or, with ``"smyth": {"interim_text": true}`` in the body,
every assistant message of the turn (the text written beside tool calls too), apart by
a blank line. A turn that stops at an approval ends the completion with a message naming
the request (and ``smyth_pending``); ``usage`` is the turn's.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Header, HTTPException, Request, status
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from smyth_temporal.gateway._auth import Operator, Reader
from smyth_temporal.gateway._gateway import GatewayDep, while_connected
from smyth_temporal.gateway._problems import openai_error, problem_of
from smyth_temporal.gateway._sessions import open_reply
from smyth_temporal.gateway._sse import SSE_RESPONSES, encode, event_stream
from smyth_temporal.gateway._turns import (
    ShownText,
    TurnItem,
    TurnMessage,
    TurnPending,
    TurnText,
    pending_notice,
    reply_or_pending,
    turn_items,
)
from smyth_temporal.types.messages import Usage
from smyth_temporal.types.sessions import SessionReply, session_workflow_id

__all__ = ["ChatCompletion", "ChatCompletionChunk", "ChatRequest", "ModelList", "router"]

router = APIRouter(prefix="/openai/v1", tags=["openai"])

SESSION_HEADER = "X-Smyth-Session"


class ChatMessage(BaseModel):
    """A message of the request (only the last user message is used)."""

    model_config = ConfigDict(extra="allow")

    role: str
    content: str | list[dict[str, Any]] | None = None

    def text(self) -> str:
        """The text: the content, or its text parts joined."""
        if isinstance(self.content, list):
            return "".join(str(p.get("text", "")) for p in self.content if p.get("type") == "text")
        return self.content or ""


class SmythOptions(BaseModel):
    """Smyth's own options of a request (``extra_body={"smyth": {...}}`` in OpenAI clients)."""

    model_config = ConfigDict(extra="forbid")

    interim_text: bool = False
    """Answer with every assistant message of the turn, the text the model wrote beside
    its tool calls too (streamed as written), not only the answer. Added in 0.9.0."""


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")

    include_usage: bool = False
    """End the stream with a chunk holding the turn's ``usage`` (and no choices)."""


class ChatRequest(BaseModel):
    """A chat completion request; sampling options are accepted and left to the agent."""

    model_config = ConfigDict(extra="allow")

    model: str
    """The agent's name."""
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    user: str | None = None
    """The session id (unless ``X-Smyth-Session`` names one)."""
    smyth: SmythOptions = Field(default_factory=SmythOptions)
    """Smyth's own options. Added in 0.9.0."""


class CompletionUsage(BaseModel):
    """The turn's tokens (``SessionReply.turn_usage``)."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    prompt_tokens_details: dict[str, int]
    completion_tokens_details: dict[str, int] | None = None
    """``reasoning_tokens``: of the completion tokens, those spent reasoning. Added in 0.10.0."""

    @classmethod
    def of(cls, usage: Usage | None) -> CompletionUsage | None:
        """``usage`` in OpenAI's shape (``None``: a worker older than 0.9.0 or a cut turn)."""
        if usage is None:
            return None
        return cls(
            prompt_tokens=usage.input_tokens,
            completion_tokens=usage.output_tokens,
            total_tokens=usage.total_tokens,
            prompt_tokens_details={"cached_tokens": usage.cached_tokens},
            completion_tokens_details={"reasoning_tokens": usage.reasoning_tokens},
        )


class PendingApproval(BaseModel):
    """The approval a completion stopped at (``smyth_pending``). Added in 0.9.0."""

    request_id: str
    tool: str
    workflow_id: str


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class Choice(BaseModel):
    index: int = 0
    message: AssistantMessage
    finish_reason: Literal["stop"] = "stop"


class ChatCompletion(BaseModel):
    """The reply, in OpenAI's shape, with the session's workflow id as ``smyth_session``."""

    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: CompletionUsage | None = None
    """The turn's tokens. Added in 0.9.0."""
    smyth_session: str
    """The session's workflow id (``GET /v1/runs/{id}`` shows its state)."""
    smyth_pending: PendingApproval | None = None
    """The approval the turn stopped at, if it did. Added in 0.9.0."""


class Delta(BaseModel):
    role: Literal["assistant"] | None = None
    content: str | None = None


class ChunkChoice(BaseModel):
    index: int = 0
    delta: Delta
    finish_reason: Literal["stop"] | None = None


class ChatCompletionChunk(BaseModel):
    """One event of a streamed reply."""

    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str
    choices: list[ChunkChoice]
    usage: CompletionUsage | None = None
    smyth_pending: PendingApproval | None = None


class Model(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int = 0
    owned_by: str = "smyth"


class ModelList(BaseModel):
    """The agents this gateway serves, as models."""

    object: Literal["list"] = "list"
    data: list[Model]


@router.get("/models", summary="The agents served, as models")
async def list_models(caller: Reader, gateway: GatewayDep) -> ModelList:
    """Every agent this gateway serves; its name is the ``model`` to ask for."""
    return ModelList(data=[Model(id=name) for name in gateway.agent_names])


@router.post(
    "/chat/completions",
    summary="Chat with an agent's session",
    response_model=ChatCompletion,
    response_model_exclude_none=True,
    responses=SSE_RESPONSES,
)
async def chat_completions(
    body: ChatRequest,
    caller: Operator,
    gateway: GatewayDep,
    request: Request,
    session: Annotated[str | None, Header(alias=SESSION_HEADER)] = None,
) -> ChatCompletion | StreamingResponse:
    """Send the last user message to the session named by ``user`` or ``X-Smyth-Session``."""
    name = gateway.agent(body.model)
    session_id = session or body.user
    if not session_id:
        raise HTTPException(
            status.HTTP_400_BAD_REQUEST,
            f"name the session: set `user` or the {SESSION_HEADER} header "
            "(the session keeps the conversation, so only the last user message is sent)",
        )
    text = next((m.text() for m in reversed(body.messages) if m.role == "user"), "")
    if not text.strip():
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "no user message with text to send")
    completion_id, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())
    workflow_id = session_workflow_id(name, caller.tenant, session_id)
    interim = body.smyth.interim_text
    answer = _Answer(interim, workflow_id)
    if not (body.stream or interim):  # the reply is all it says: no events to follow
        outcome = await while_connected(
            request,
            reply_or_pending(
                gateway.acting_for(caller),
                name,
                session_id,
                text,
                workflow_id=workflow_id,
                every=gateway.options.pending_check,
            ),
        )
        answer.add(outcome)
        return _completion(completion_id, created, name, answer)
    source = await open_reply(gateway, name, session_id, text, caller, turn_items)
    if body.stream:
        include_usage = body.stream_options is not None and body.stream_options.include_usage
        chunks = _Chunks(completion_id, created, name, answer, include_usage=include_usage)
        return event_stream(
            source,
            chunks.render,
            idle=gateway.options.ping_interval,
            on_error=lambda exc: encode(json.dumps(openai_error(problem_of(exc)))),
            last=encode("[DONE]"),
        )

    async def whole() -> None:  # every message of the turn: from its events
        try:
            async for item in source.items(gateway.options.ping_interval):
                if item is not None:
                    answer.add(item)
        finally:
            await source.aclose()

    await while_connected(request, whole())
    return _completion(completion_id, created, name, answer)


def _completion(completion_id: str, created: int, model: str, answer: _Answer) -> ChatCompletion:
    return ChatCompletion(
        id=completion_id,
        created=created,
        model=model,
        choices=[Choice(message=AssistantMessage(content="".join(answer.text)))],
        usage=CompletionUsage.of(answer.usage),
        smyth_session=answer.workflow_id,
        smyth_pending=answer.pending,
    )


class _Answer:
    """What a completion says, as pieces of text, the same whether streamed or not.

    By default only the answer: a message's text is known to be the answer only once
    the message is done without tool calls, so it goes out whole then. With
    ``interim_text`` every message goes out as it is written. OpenAI's stream cannot
    take text back: when a retried model call rewrites a message (``reset``), only what
    extends the text already sent goes out, or, if the new attempt wrote something
    else, its whole text after a line break.
    """

    def __init__(self, interim_text: bool, workflow_id: str) -> None:
        self.interim_text = interim_text
        self.workflow_id = workflow_id
        self.text: list[str] = []
        self.usage: Usage | None = None
        self.pending: PendingApproval | None = None
        self.done = False
        self._sent: dict[str, str] = {}
        self._shown = ShownText()

    def add(self, item: TurnItem) -> list[str]:
        """The pieces ``item`` adds (also kept in ``text``); sets ``done`` at the end."""
        pieces = [p for p in self._pieces(item) if p]
        self.text.extend(pieces)
        return pieces

    def _pieces(self, item: TurnItem) -> list[str]:
        if isinstance(item, SessionReply):
            self.done, self.usage = True, item.turn_usage
            # An answer with no message done without tool calls (max_steps reached):
            # the reply's text, as the session answers it.
            return [] if self._sent else [self._next("reply", item.text)]
        if isinstance(item, TurnPending):
            self.done = True
            self.pending = PendingApproval(
                request_id=item.request.id, tool=item.request.tool, workflow_id=self.workflow_id
            )
            return [self._next("pending", pending_notice(item.request))]
        if isinstance(item, TurnText) and self.interim_text:
            return [self._extend(item.message_id, item.text, item.reset)]
        if isinstance(item, TurnMessage) and (item.final or self.interim_text):
            if item.message_id in self._sent:
                return [self._extend(item.message_id, item.content, reset=True)]
            return [self._next(item.message_id, item.content)]
        return []

    def _next(self, message_id: str, text: str) -> str:
        """A message's first text: apart from the one before, by a blank line."""
        if not text:
            return ""
        started = bool(self._sent)
        self._sent[message_id] = text
        return "\n\n" + text if started else text

    def _extend(self, message_id: str, text: str, reset: bool) -> str:
        if message_id not in self._sent:
            self._shown.piece(message_id, text, reset=True)
            return self._next(message_id, text)
        piece = self._shown.piece(message_id, text, reset)
        self._sent[message_id] = self._shown.text(message_id)
        return piece


class _Chunks:
    """Turns a turn's items into ``chat.completion.chunk`` events (``_Answer`` says what)."""

    def __init__(
        self,
        completion_id: str,
        created: int,
        model: str,
        answer: _Answer,
        *,
        include_usage: bool = False,
    ) -> None:
        self._head = {"id": completion_id, "created": created, "model": model}
        self._answer = answer
        self._include_usage = include_usage
        self._started = False

    def render(self, item: TurnItem) -> bytes:
        """The events of ``item``: its text as deltas, then the finishing chunk(s)."""
        events = []
        for text in self._answer.add(item):
            delta = Delta(role=None if self._started else "assistant", content=text)
            self._started = True
            events.append(self._event([ChunkChoice(delta=delta)]))
        if self._answer.done:
            finish = ChunkChoice(delta=Delta(), finish_reason="stop")
            events.append(self._event([finish], pending=self._answer.pending))
            if self._include_usage:
                usage = CompletionUsage.of(self._answer.usage)
                events.append(self._event([], usage=usage))
        return b"".join(events)

    def _event(
        self,
        choices: list[ChunkChoice],
        *,
        usage: CompletionUsage | None = None,
        pending: PendingApproval | None = None,
    ) -> bytes:
        chunk = ChatCompletionChunk(
            **self._head, choices=choices, usage=usage, smyth_pending=pending
        )
        return encode(chunk.model_dump_json(exclude_none=True))
