"""Persistent sessions: a message in, the reply out, whole or streamed as it is written.

The session is named by the agent, the caller's tenant and the session id in the
path, so a key reaches only its own tenant's sessions: the client acting for the key
(``Gateway.acting_for``) fills in the tenant and the sender.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Callable
from typing import Annotated, TypeVar

from fastapi import APIRouter, Header, Path, Query, Request, status
from fastapi.responses import JSONResponse, Response

from smyth_temporal.clients import ReplyChunk, ReplyStream
from smyth_temporal.gateway._auth import Operator
from smyth_temporal.gateway._gateway import Gateway, GatewayDep, while_connected
from smyth_temporal.gateway._models import MessageAccepted, MessageRequest
from smyth_temporal.gateway._sse import (
    SSE_RESPONSES,
    Lookahead,
    encode,
    error_event,
    event_stream,
    wants_stream,
)
from smyth_temporal.security import Principal
from smyth_temporal.types.sessions import SessionReply, WhileBusy, session_workflow_id

__all__ = ["Piece", "open_reply", "router", "streamed_reply"]

T = TypeVar("T")

router = APIRouter(prefix="/v1", tags=["sessions"])

SessionId = Annotated[
    str, Path(min_length=1, max_length=200, description="names the session (per agent and tenant)")
]

Piece = ReplyChunk | SessionReply
"""A piece of a streamed reply, then the whole reply."""


async def _pieces(stream: ReplyStream) -> AsyncIterator[Piece]:
    async for chunk in stream:
        yield chunk
    if stream.reply is not None:
        yield stream.reply


async def streamed_reply(
    gateway: Gateway,
    agent: str,
    session_id: str,
    text: str,
    caller: Principal,
    *,
    while_busy: WhileBusy | None = None,
) -> Lookahead[Piece]:
    """Send a message and read its reply as it is written: ``ReplyChunk``s, then the reply.

    Waits up to ``stream_grace`` for the first piece, so a refusal raises here.

    Raises:
        InvalidMessageError: The session refused the message.
    """
    return await open_reply(gateway, agent, session_id, text, caller, _pieces, while_busy)


async def open_reply(
    gateway: Gateway,
    agent: str,
    session_id: str,
    text: str,
    caller: Principal,
    read: Callable[[ReplyStream], AsyncIterator[T]],
    while_busy: WhileBusy | None = None,
    *,
    existing: bool = False,
) -> Lookahead[T]:
    """Send a message and read its reply with ``read``, one of the key's event streams.

    Waits up to ``stream_grace`` for the first item, so a refusal raises here.
    ``existing``: only continue a session (``AgentClient.send(existing=True)``).

    Raises:
        InvalidMessageError: The session refused the message.
        AgentNotFoundError: ``existing``, and the caller has no such session.
    """
    release = gateway.streams.take(caller)  # 429 past the key's cap
    try:
        stream = gateway.acting_for(caller).send(
            agent, session_id, text, while_busy=while_busy, stream=True, existing=existing
        )
    except BaseException:
        release()
        raise
    source: Lookahead[T] = Lookahead(read(stream), on_close=release)
    await source.settle(gateway.options.stream_grace)
    return source


def _render(piece: Piece) -> bytes:
    if isinstance(piece, SessionReply):
        return encode(piece.model_dump_json(), event="reply")
    return encode(json.dumps(dataclasses.asdict(piece)), event="chunk")


@router.post(
    "/agents/{agent}/sessions/{session_id}/messages",
    summary="Send a message to a session",
    response_model=SessionReply,
    responses={
        **SSE_RESPONSES,
        status.HTTP_202_ACCEPTED: {"model": MessageAccepted, "description": "posted"},
    },
)
async def send_message(
    agent: str,
    session_id: SessionId,
    body: MessageRequest,
    caller: Operator,
    gateway: GatewayDep,
    request: Request,
    accept: Annotated[str | None, Header()] = None,
    stream: Annotated[bool | None, Query(description="stream the reply as events")] = None,
) -> Response | SessionReply:
    """Send a message to the session, starting it if need be, and return the reply.

    With ``Accept: text/event-stream`` (or ``?stream=true``) the reply streams as it is
    written: ``event: chunk`` events (``{"text", "message_id", "reset"}``: with
    ``reset`` the message's text so far is void, start it again with ``text``), then
    one ``event: reply`` with the ``SessionReply``. With ``"wait": false`` the message
    is posted and 202 comes back at once. A message the session refuses (busy with
    ``while_busy: reject``, empty, closed session) is a 409.
    """
    name = gateway.agent(agent)
    if not body.wait:
        await gateway.acting_for(caller).send(
            name, session_id, body.text, while_busy=body.while_busy, wait=False
        )
        accepted = MessageAccepted(workflow_id=session_workflow_id(name, caller.tenant, session_id))
        return JSONResponse(accepted.model_dump(), status_code=status.HTTP_202_ACCEPTED)
    if wants_stream(accept, stream):
        source = await streamed_reply(
            gateway, name, session_id, body.text, caller, while_busy=body.while_busy
        )
        return event_stream(
            source, _render, idle=gateway.options.ping_interval, on_error=error_event
        )
    reply = await while_connected(
        request,
        gateway.acting_for(caller).send(name, session_id, body.text, while_busy=body.while_busy),
    )
    assert reply is not None  # waited for
    return reply
