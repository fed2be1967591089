"""An OpenAI-compatible chat endpoint over durable sessions (``/openai/v1``).

Any OpenAI client talks to an agent: ``model`` names the agent, ``user`` (or the
``X-Smyth-Session`` header) names the session, and only the last user message is sent,
because the session keeps the conversation itself (durably, across calls, restarts
and replicas). The reply comes back in OpenAI's shape, whole or as
``chat.completion.chunk`` events ending with ``data: [DONE]``.
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
from smyth_temporal.gateway._sessions import Piece, streamed_reply
from smyth_temporal.gateway._sse import SSE_RESPONSES, encode, event_stream
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


class ChatRequest(BaseModel):
    """A chat completion request; sampling options are accepted and left to the agent."""

    model_config = ConfigDict(extra="allow")

    model: str
    """The agent's name."""
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    user: str | None = None
    """The session id (unless ``X-Smyth-Session`` names one)."""


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
    smyth_session: str
    """The session's workflow id (``GET /v1/runs/{id}`` shows its state)."""


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
    if body.stream:
        source = await streamed_reply(gateway, name, session_id, text, caller)
        chunks = _Chunks(completion_id, created, name)
        return event_stream(
            source,
            chunks.render,
            idle=gateway.options.ping_interval,
            on_error=lambda exc: encode(json.dumps(openai_error(problem_of(exc)))),
            last=encode("[DONE]"),
        )
    reply = await while_connected(
        request,
        gateway.acting_for(caller).send(name, session_id, text),
    )
    assert reply is not None  # waited for
    return ChatCompletion(
        id=completion_id,
        created=created,
        model=name,
        choices=[Choice(message=AssistantMessage(content=reply.text))],
        smyth_session=session_workflow_id(name, caller.tenant, session_id),
    )


class _Chunks:
    """Turns a reply's pieces into ``chat.completion.chunk`` events.

    OpenAI's stream cannot take text back: when a retried model call rewrites a message
    (``reset``), only what extends the text already sent goes out, or, if the new
    attempt wrote something else, its whole text after a line break.
    """

    def __init__(self, completion_id: str, created: int, model: str) -> None:
        self._head = {"id": completion_id, "created": created, "model": model}
        self._sent: dict[str | None, str] = {}

    def render(self, piece: Piece) -> bytes:
        """One piece as an event: text as a delta, the reply as the finishing chunk."""
        if isinstance(piece, SessionReply):
            return self._event(Delta(), finish_reason="stop")
        started = bool(self._sent)
        before = self._sent.get(piece.message_id)
        now = piece.text if piece.reset else (before or "") + piece.text
        self._sent[piece.message_id] = now
        if before is None:  # a message's first piece; a later message of the reply
            text = "\n\n" + now if started else now  # stands apart from the one before
        else:
            text = now[len(before) :] if now.startswith(before) else "\n" + now
        return self._event(Delta(role=None if started else "assistant", content=text))

    def _event(self, delta: Delta, finish_reason: Literal["stop"] | None = None) -> bytes:
        chunk = ChatCompletionChunk(
            **self._head, choices=[ChunkChoice(delta=delta, finish_reason=finish_reason)]
        )
        return encode(chunk.model_dump_json(exclude_none=True))
