"""OpenAI's Responses API over durable sessions (``/openai/v1/responses``).

A conversation is a session and each response one of its turns: ``model`` names the
agent, ``input`` (text, or messages of which the last user one is sent) is the turn's
message, and ``previous_response_id`` continues the same session, so the agent
remembers (durably, across calls, restarts and replicas) without the client sending
the conversation again. A response id names its tenant, agent, session and where the
turn began (``ResponseRef``); it is a name, not a credential: the key's tenant must be
the id's (another tenant's id is a 404, as a missing one) and every read goes through
the client acting for the key, so a forged id reaches nothing another key could not.

The output lists the turn's assistant messages (``phase`` ``commentary`` beside tool
calls, ``final_answer`` for the answer) and, as completed ``function_call`` items with
their ``output``, the tool calls the agent ran. Streamed, the same items come as the
Responses events (``response.created`` ... ``response.completed``). A turn that stops at
a pending approval ends the response ``incomplete``: an ``mcp_approval_request`` item
and a message name the request (OpenAI allows no reason value of its own for it, so
``incomplete_details.reason`` is null and ``metadata`` holds ``smyth_pending``); after
the decision the next response (``previous_response_id``) is answered once the turn is.
The decision itself may come as that next response's input: ``mcp_approval_response``
items (``_responses_approvals``), whose response is then the turn going on.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, HTTPException, Path, Request, status
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict

from smyth_temporal.clients import ReplyStream
from smyth_temporal.exceptions import AgentNotFoundError, InvalidMessageError
from smyth_temporal.gateway._auth import Operator, Reader
from smyth_temporal.gateway._gateway import Gateway, GatewayDep, while_connected
from smyth_temporal.gateway._problems import openai_error, problem_of
from smyth_temporal.gateway._responses_approvals import (
    APPROVAL_RESPONSE,
    ApprovalResponse,
    approval_responses,
    decide,
    settled,
)
from smyth_temporal.gateway._responses_output import (
    Builder,
    ResponseObject,
    text_message,
    usage_of,
)
from smyth_temporal.gateway._sessions import open_reply
from smyth_temporal.gateway._sse import SSE_RESPONSES, Lookahead, encode, event_stream
from smyth_temporal.gateway._turns import (
    TurnItem,
    TurnMessage,
    TurnPending,
    TurnTool,
    reply_or_pending,
    turn_items,
)
from smyth_temporal.security import Principal
from smyth_temporal.types.agent import AgentState
from smyth_temporal.types.approvals import ApprovalRequest
from smyth_temporal.types.events import MessageCompleted
from smyth_temporal.types.messages import Message, ToolCall
from smyth_temporal.types.sessions import SessionReply, WhileBusy, session_workflow_id

__all__ = ["ResponseObject", "ResponseRef", "ResponsesRequest", "router"]

router = APIRouter(prefix="/openai/v1", tags=["openai"])

_ID_PREFIX = "resp_"
_ID_MAX = 2000
"""Longer ids are refused unread (ids given out are far shorter)."""

T = TypeVar("T")


class ResponseRef(BaseModel):
    """What a response id names: a turn of one tenant's session of one agent."""

    model_config = ConfigDict(frozen=True)

    tenant: str
    agent: str
    session_id: str
    step: int
    """The session's step when the turn's message was taken (its messages come after)."""

    @property
    def workflow_id(self) -> str:
        """The session's workflow id."""
        return session_workflow_id(self.agent, self.tenant, self.session_id)

    def encode(self) -> str:
        """The response id."""
        packed = json.dumps([self.tenant, self.agent, self.session_id, self.step])
        return _ID_PREFIX + base64.urlsafe_b64encode(packed.encode()).decode().rstrip("=")

    @classmethod
    def decode(cls, response_id: str, caller: Principal) -> ResponseRef:
        """The turn ``response_id`` names, if it is one of ``caller``'s tenant.

        Raises:
            HTTPException: 404, alike for a malformed id, another tenant's and a missing one.
        """
        missing = HTTPException(status.HTTP_404_NOT_FOUND, f"no response {response_id!r}")
        if not response_id.startswith(_ID_PREFIX) or len(response_id) > _ID_MAX:
            raise missing
        body = response_id.removeprefix(_ID_PREFIX)
        try:
            fields = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
            tenant, agent, session_id, step = fields
            ref = cls(tenant=tenant, agent=agent, session_id=session_id, step=step)
        except (ValueError, TypeError, binascii.Error, RecursionError):
            raise missing from None
        if ref.tenant != caller.tenant:
            raise missing
        return ref


class ResponsesRequest(BaseModel):
    """A ``POST /responses`` body; sampling options are accepted and left to the agent."""

    model_config = ConfigDict(extra="allow")

    model: str
    """The agent's name."""
    input: str | list[dict[str, Any]]
    """Text, or input items of which the last user message is sent (the session keeps
    the conversation)."""
    instructions: str | None = None
    """Sent ahead of the input, in the same message: the agent keeps its own."""
    previous_response_id: str | None = None
    """Continue that response's session (the same durable conversation)."""
    stream: bool = False
    metadata: dict[str, str] | None = None

    def approvals(self) -> list[ApprovalResponse]:
        """The ``mcp_approval_response`` items: decisions on the previous response's requests."""
        return approval_responses(self.input) if isinstance(self.input, list) else []

    def text(self) -> str:
        """The message for the session (``""``: the input only decides approvals).

        With ``mcp_approval_response`` items, only a user message after the last of
        them is sent: the ones before it are the conversation a client sent again.

        Raises:
            HTTPException: 400 for input without a user text or with items other than text.
        """
        if isinstance(self.input, str):
            text = self.input
        else:
            kinds = [item.get("type") for item in self.input]
            answered = max((i for i, k in enumerate(kinds) if k == APPROVAL_RESPONSE), default=-1)
            text = _last_user_text(self.input[answered + 1 :])
            if answered >= 0 and not text.strip():
                return ""
        if not text.strip():
            raise HTTPException(status.HTTP_400_BAD_REQUEST, "input has no user text to send")
        return f"{self.instructions}\n\n{text}" if self.instructions else text


def _last_user_text(items: list[dict[str, Any]]) -> str:
    """The last user message's text; other roles are the session's own business."""
    for item in reversed(items):
        kind = item.get("type", "message")
        if kind != "message":
            raise HTTPException(
                status.HTTP_400_BAD_REQUEST,
                f"input item type {str(kind)[:40]!r} is not supported: send messages "
                "(the agent runs its own tools)",
            )
        if item.get("role") != "user":
            continue
        content = item.get("content")
        if isinstance(content, str):
            return content
        if not isinstance(content, list):
            raise HTTPException(status.HTTP_400_BAD_REQUEST, "a message's content is text or parts")
        texts = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") not in ("input_text", "text"):
                raise HTTPException(
                    status.HTTP_400_BAD_REQUEST, "only text parts (input_text) are supported"
                )
            texts.append(str(part.get("text", "")))
        return "".join(texts)
    return ""


async def _taken(stream: ReplyStream, step: list[int]) -> AsyncIterator[TurnItem]:
    """``turn_items``, noting the step at which the session took the message in ``step``."""

    def took(event: MessageCompleted) -> None:
        step.append(event.step)

    async for item in turn_items(stream, on_taken=took):
        yield item


@router.post(
    "/responses",
    summary="Create a response (a turn of an agent's session)",
    response_model=ResponseObject,
    responses=SSE_RESPONSES,
)
async def create_response(
    body: ResponsesRequest, caller: Reader, gateway: GatewayDep, request: Request
) -> ResponseObject | StreamingResponse:
    """Send ``input`` to a session of agent ``model`` and answer with the turn.

    Without ``previous_response_id`` a new session begins; with it, that response's
    session goes on. With ``stream`` the response comes as Responses events.
    ``mcp_approval_response`` items decide the previous response's requests
    (``_responses_approvals``); with no user text after them, the response is that
    turn going on. Sending text needs a key that may operate, deciding one that may
    approve, as in the REST API.
    """
    answers = body.approvals()
    caller.permit("approve" if answers else "operate")
    text = body.text()
    if text and answers:
        caller.permit("operate")
    name = gateway.agent(body.model)
    if answers and body.previous_response_id is None:
        raise HTTPException(
            status.HTTP_400_BAD_REQUEST,
            f"an {APPROVAL_RESPONSE} item answers a request of the previous response: "
            "send previous_response_id",
        )
    # A streamed continuation checks the session as it reads where its stream ends
    # (``send(existing=True)``), not before: one describe fewer, beside a query.
    checked_later = body.stream and not answers
    session_id = await _session_of(
        gateway, caller, name, body.previous_response_id, check=not checked_later
    )
    created = time.time()
    workflow_id = session_workflow_id(name, caller.tenant, session_id)

    def made(response: ResponseObject) -> ResponseObject:
        """``response`` with what the request said about it."""
        return response.model_copy(
            update={
                "created_at": created,
                "instructions": body.instructions,
                "metadata": {**(body.metadata or {}), **response.metadata},
                "previous_response_id": body.previous_response_id,
            }
        )

    if answers:
        assert body.previous_response_id is not None  # refused above
        decided = await decide(
            gateway.acting_for(caller),
            workflow_id,
            answers,
            response_id=body.previous_response_id,
            timeout=gateway.options.worker_timeout,
        )
        if not text:  # the response is the decided turn going on
            return await _went_on(gateway, caller, request, body, workflow_id, decided, made)

    continued = body.previous_response_id is not None
    if not body.stream:
        # The reply is enough to wait for (no events to follow, see reply_or_pending);
        # the turn's items then come from the reply or the session's state.
        def whole(while_busy: WhileBusy | None) -> Awaitable[SessionReply | TurnPending]:
            return reply_or_pending(
                gateway.acting_for(caller),
                name,
                session_id,
                text,
                workflow_id=workflow_id,
                every=gateway.options.pending_check,
                while_busy=while_busy,
            )

        outcome = await while_connected(
            request, _unless_waiting(gateway, caller, workflow_id, whole, continued=continued)
        )
        ref = ResponseRef(
            tenant=caller.tenant, agent=name, session_id=session_id, step=_last_step(outcome)
        )
        if isinstance(outcome, SessionReply) and _plain(outcome):
            return made(_replied(ref, outcome))  # one message, no tool: the reply is all
        state = await gateway.acting_for(caller).state(
            workflow_id, timeout=gateway.options.worker_timeout
        )
        return made(_answered(ref, text, state, outcome))

    taken: list[int] = []

    def streamed(while_busy: WhileBusy | None) -> Awaitable[Lookahead[TurnItem]]:
        return open_reply(
            gateway,
            name,
            session_id,
            text,
            caller,
            lambda s: _taken(s, taken),
            while_busy,
            existing=continued,
        )

    try:
        source = await _unless_waiting(gateway, caller, workflow_id, streamed, continued=continued)
    except AgentNotFoundError:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND, f"no response {body.previous_response_id!r}"
        ) from None
    builder: list[Builder] = []

    def render(item: TurnItem) -> bytes:
        events = []
        if not builder:  # the first item came after the session took the message
            ref = ResponseRef(
                tenant=caller.tenant,
                agent=name,
                session_id=session_id,
                step=taken[0] if taken else 0,
            )
            started = ResponseObject(
                id=ref.encode(), created_at=0, status="in_progress", model=name
            )
            builder.append(Builder(made(started)))
            events += builder[0].start()
        events += builder[0].add(item)
        return b"".join(encode(json.dumps(e), event=e["type"]) for e in events)

    return event_stream(source, render, idle=gateway.options.ping_interval, on_error=_error_event)


def _last_step(outcome: SessionReply | TurnPending) -> int:
    """Where the turn began, as far as its outcome tells: before its model calls."""
    if isinstance(outcome, TurnPending):
        return outcome.request.step - 1
    calls = outcome.turn_usage.requests if outcome.turn_usage is not None else 1
    return outcome.step - calls


def _plain(reply: SessionReply) -> bool:
    """A turn of one model call and no tool call: its reply is its only message."""
    usage = reply.turn_usage
    return usage is not None and usage.requests == 1 and usage.tool_calls == 0


def _replied(ref: ResponseRef, reply: SessionReply) -> ResponseObject:
    response = ResponseObject(id=ref.encode(), created_at=0, status="completed", model=ref.agent)
    builder = Builder(response)
    builder.add(TurnMessage(f"step-{reply.step}", reply.text, ()))
    builder.add(reply)
    return builder.response


def _answered(
    guess: ResponseRef, text: str, state: AgentState, outcome: SessionReply | TurnPending
) -> ResponseObject:
    """The whole response of the turn that answered ``text`` (or waits for a decision)."""
    ref = guess.model_copy(update={"step": _turn_start(state, text, guess.step)})
    response = _rebuilt(ref.encode(), ref, state)
    if isinstance(outcome, TurnPending):
        return response
    if not any(item.get("phase") == "final_answer" for item in response.output):
        # The turn ended without a message free of tool calls (max_steps): its reply.
        answer = f"msg_{hashlib.sha256(response.id.encode()).hexdigest()[:16]}_answer"
        response.output.append(text_message(answer, outcome.text, done=True, final=True))
    return response.model_copy(
        update={"status": "completed", "usage": usage_of(outcome.turn_usage)}
    )


def _error_event(exc: Exception) -> bytes:
    """An error after the stream began, as the Responses API's ``error`` event."""
    error = openai_error(problem_of(exc))["error"]
    data = {"type": "error", "sequence_number": 0, "param": None, **error}
    return encode(json.dumps(data), event="error")


async def _session_of(
    gateway: Gateway, caller: Principal, agent: str, previous: str | None, *, check: bool = True
) -> str:
    """The session a new response goes to: the previous response's, or a new one.

    Args:
        gateway: The gateway.
        caller: Who asks.
        agent: The agent named as the model.
        previous: The previous response's id, if any.
        check: Ask whether the session exists (and is the caller's); ``False``: the
            caller checks it itself before sending anything (``send(existing=True)``).

    Raises:
        HTTPException: 404 for a previous response that is not the caller's tenant's or
            whose session is gone; 400 for one of another agent. Nothing is started.
    """
    if previous is None:
        return f"resp-{uuid.uuid4().hex}"
    ref = ResponseRef.decode(previous, caller)
    if ref.agent != agent:
        raise HTTPException(
            status.HTTP_400_BAD_REQUEST,
            f"previous_response_id {previous!r} is a response of agent {ref.agent!r}, "
            f"not {agent!r}",
        )
    if check and await gateway.acting_for(caller).status(ref.workflow_id) is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no response {previous!r}")
    return ref.session_id


async def _unless_waiting(
    gateway: Gateway,
    caller: Principal,
    workflow_id: str,
    send: Callable[[WhileBusy | None], Awaitable[T]],
    *,
    continued: bool,
) -> T:
    """``send`` the input, unless the session waits for a decision (a 409 naming it).

    Input for a session that waits would wait behind the undecided turn, silently. A
    continued conversation's input goes first as ``reject`` (refused at once, unrecorded,
    if the session is busy): only then is the state asked for, and input for a session
    busy otherwise (a decided turn still going on) is sent again, to wait its turn.
    """
    if not continued:
        return await send(None)
    try:
        return await send("reject")
    except InvalidMessageError:
        state = await gateway.acting_for(caller).state(
            workflow_id, timeout=gateway.options.worker_timeout
        )
        if state.pending_approvals:
            request = state.pending_approvals[0]
            raise HTTPException(
                status.HTTP_409_CONFLICT,
                f"the session waits for a decision on request {request.id} ({request.tool}): "
                "decide it, then send the input again (it was not sent)",
            ) from None
    return await send(None)


ResponseId = Annotated[str, Path(min_length=1, max_length=2000, description="a response id")]


@router.get("/responses/{response_id}", summary="Retrieve a response")
async def get_response(
    response_id: ResponseId, caller: Reader, gateway: GatewayDep
) -> ResponseObject:
    """The response as its session holds it now.

    A turn that waited for approval when it was created may have completed since.
    Answers while the turn is among the session's recent messages
    (``AgentConfig.state_messages``); ``usage`` is only in the created response.
    """
    ref, state = await _state(response_id, caller, gateway)
    return _rebuilt(response_id, ref, state)


@router.post("/responses/{response_id}/cancel", summary="Cancel a response")
async def cancel_response(
    response_id: ResponseId, caller: Operator, gateway: GatewayDep
) -> ResponseObject:
    """Stop the response's turn if it still runs or waits for approval.

    An interrupt: running tool calls finish, a pending approval is withdrawn. A
    finished response is a 409.
    """
    ref, state = await _state(response_id, caller, gateway)
    response = _rebuilt(response_id, ref, state)
    if response.status not in ("in_progress", "incomplete"):
        raise HTTPException(
            status.HTTP_409_CONFLICT, f"response {response_id!r} has finished: nothing to cancel"
        )
    await gateway.acting_for(caller).interrupt(
        ref.workflow_id, reason="cancelled through the Responses API"
    )
    return response.model_copy(update={"status": "cancelled"})


async def _state(
    response_id: str, caller: Principal, gateway: Gateway
) -> tuple[ResponseRef, AgentState]:
    ref = ResponseRef.decode(response_id, caller)
    if ref.agent not in gateway.agent_names:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no response {response_id!r}")
    try:
        state = await gateway.acting_for(caller).state(
            ref.workflow_id, timeout=gateway.options.worker_timeout
        )
    except AgentNotFoundError:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no response {response_id!r}") from None
    return ref, state


async def _went_on(
    gateway: Gateway,
    caller: Principal,
    request: Request,
    body: ResponsesRequest,
    workflow_id: str,
    decided: list[ApprovalRequest],
    made: Callable[[ResponseObject], ResponseObject],
) -> ResponseObject | StreamingResponse:
    """The response of a turn that went on after its approvals were decided.

    It begins at the model call that asked for the first decided tool call (its
    ``function_call`` items show what ran), and ends with the answer, or ``incomplete``
    at the next request to decide. Whole, it is read from the session once the turn
    settled; streamed, the same response is told as events once it is known (pings
    while the turn goes on).
    """
    ref = ResponseRef.decode(body.previous_response_id or "", caller)
    ref = ref.model_copy(update={"step": min(r.step for r in decided) - 1})

    async def rebuilt() -> Builder:
        state = await settled(
            gateway.acting_for(caller),
            workflow_id,
            every=gateway.options.pending_check,
            timeout=gateway.options.worker_timeout,
        )
        started = ResponseObject(
            id=ref.encode(), created_at=0, status="in_progress", model=ref.agent
        )
        builder = Builder(made(started))
        _rebuild(builder, ref, state)
        if builder.response.status == "in_progress":  # ended without an answer
            builder.response.status = "failed"
            builder.response.error = {
                "code": "server_error",
                "message": f"the turn ended without an answer (the session is {state.status})",
            }
        return builder

    if not body.stream:
        return (await while_connected(request, rebuilt())).response

    async def once() -> AsyncIterator[Builder]:
        yield await rebuilt()

    def render(builder: Builder) -> bytes:
        events = builder.replay()
        return b"".join(encode(json.dumps(e), event=e["type"]) for e in events)

    return event_stream(
        Lookahead(once()), render, idle=gateway.options.ping_interval, on_error=_error_event
    )


def _rebuilt(response_id: str, ref: ResponseRef, state: AgentState) -> ResponseObject:
    """The response of turn ``ref`` from the session's recent messages."""
    builder = Builder(
        ResponseObject(id=response_id, created_at=0, status="in_progress", model=ref.agent)
    )
    _rebuild(builder, ref, state)
    return builder.response


def _rebuild(builder: Builder, ref: ResponseRef, state: AgentState) -> None:
    """Add the items of turn ``ref`` to ``builder``, from the session's recent messages.

    Raises:
        HTTPException: 404 when the turn is no longer among them.
    """
    response_id = builder.response.id
    turn = [m for m in state.messages if m.step is not None and m.step > ref.step]
    truncated = state.message_count > len(state.messages)
    if truncated and state.step > ref.step and (not turn or turn[0].step != ref.step + 1):
        raise HTTPException(
            status.HTTP_404_NOT_FOUND,
            f"response {response_id!r} is no longer among the session's recent messages",
        )
    calls: dict[str, ToolCall] = {}
    for message in turn:
        if message.role == "assistant":
            builder.add(_as_turn(message))
            calls.update({c.wire_id: c for c in message.tool_calls})
            if not message.tool_calls:
                builder.response.status = "completed"
                return
        elif message.role == "tool" and message.tool_call_id in calls:
            builder.add(TurnTool(calls[message.tool_call_id], message.content or "", False))
    pending = [a for a in state.pending_approvals if a.step > ref.step]
    if pending:
        builder.add(TurnPending(pending[0]))


def _turn_start(state: AgentState, text: str, fallback: int) -> int:
    """The step at which the session took ``text``: before the first step after it.

    From the session's recent messages; failing that (a turn longer than they are),
    ``fallback``.
    """
    messages = state.messages
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "user" and messages[index].content == text:
            later = [m.step for m in messages[index + 1 :] if m.step is not None]
            return later[0] - 1 if later else fallback
    return fallback


def _as_turn(message: Message) -> TurnMessage:
    return TurnMessage(f"step-{message.step}", message.content or "", tuple(message.tool_calls))
