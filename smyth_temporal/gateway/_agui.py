"""AG-UI 1.0 over durable sessions: ``POST /ag-ui/{agent}``.

An AG-UI front end (CopilotKit, ``@ag-ui/client``'s ``HttpAgent``) talks to an agent as
it talks to any AG-UI agent: the body is AG-UI's ``RunAgentInput``, the answer a
``text/event-stream`` of AG-UI events. The thread is a durable session (``threadId``
names it, per agent and the key's tenant, as ``/v1/.../sessions/{id}`` does) and a run
is one reply: the thread's newest user message is sent (the session keeps the rest of
the conversation itself, so the ``messages`` before it are not sent again).

The events come from the agent's event stream: ``RUN_STARTED``, the text of each
assistant message (``TEXT_MESSAGE_START`` / ``CONTENT`` / ``END``), each tool call it makes
(``TOOL_CALL_START`` / ``ARGS`` / ``END``, then ``TOOL_CALL_RESULT`` once it ran), a
``STATE_SNAPSHOT`` of the agent's ``AgentState``, then ``RUN_FINISHED``. A gated tool
call ends the run with the interrupt outcome: one ``Interrupt`` per pending approval
request (its ``responseSchema`` is the decision: ``approved``, ``arguments_sha256`` to
approve, ``comment``, edited ``arguments``). The run that answers it carries ``resume``
entries; each decision is sent through the client acting for the key (recorded as the
key's name and role: the key needs the ``approve`` permission), and the same durable
turn goes on, streamed from where it stopped. A ``cancelled`` entry rejects the call.

Input that cannot start a run is refused before any event, with an HTTP status and
problem details, as every other route refuses (AG-UI's HTTP binding: "input rejected
before the run starts is an HTTP error status with no event stream"): an unknown agent
(404), a body that is not a ``RunAgentInput`` (400/422), no user message to send (422),
a thread that does not exist or an interrupt that is not its own (404), a decision the
agent refuses or a new message to a busy thread (409), a body over the gateway's limit
(413). A failure after the stream began ends it with ``RUN_ERROR`` (``code``: the
error's class). ``tools`` (front-end tools), ``context``, ``state`` and
``forwardedProps`` are accepted and not used: the agent's tools, instructions and state
are its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path
from fastapi.responses import StreamingResponse
from pydantic import ValidationError
from temporalio.contrib.workflow_streams import WorkflowStreamClient

try:
    from ag_ui.core import (
        PROTOCOL_VERSION,
        BaseEvent,
        Interrupt,
        ResumeEntry,
        RunAgentInput,
        RunErrorEvent,
        RunFinishedEvent,
        RunFinishedInterruptOutcome,
        RunFinishedSuccessOutcome,
        RunStartedEvent,
        StateSnapshotEvent,
        TextMessageContentEvent,
        TextMessageEndEvent,
        TextMessageStartEvent,
        TokenUsage,
        ToolCallArgsEvent,
        ToolCallEndEvent,
        ToolCallResultEvent,
        ToolCallStartEvent,
        UserMessage,
    )
    from ag_ui.encoder import EventEncoder
except ImportError as exc:  # pragma: no cover - the server extra brings it
    raise ImportError(
        "the gateway's AG-UI endpoint needs ag-ui-protocol: pip install 'smyth-temporal[server]'"
    ) from exc

from smyth_temporal.clients import AgentClient, ReplyStream
from smyth_temporal.exceptions import ClientError, InvalidDecisionError
from smyth_temporal.gateway._auth import Reader
from smyth_temporal.gateway._gateway import Gateway, GatewayDep
from smyth_temporal.gateway._models import Decision
from smyth_temporal.gateway._problems import ERROR_TYPE_PREFIX, problem_of
from smyth_temporal.gateway._sessions import open_reply
from smyth_temporal.gateway._sse import SSE_RESPONSES, Lookahead, event_stream
from smyth_temporal.security import Principal
from smyth_temporal.types.agent import AgentState
from smyth_temporal.types.approvals import ApprovalDecision, ApprovalRequest
from smyth_temporal.types.events import (
    AgentEvent,
    ApprovalRequested,
    MessageCompleted,
    RunFinished,
    StatusChanged,
    TextAssembler,
    TextDelta,
    TextReset,
    ToolCallFinished,
)
from smyth_temporal.types.messages import Usage
from smyth_temporal.types.sessions import SessionReply, session_workflow_id

__all__ = ["router"]

router = APIRouter(prefix="/ag-ui", tags=["ag-ui"])

MAX_ID = 200
"""Longest ``threadId`` (a session id, as the sessions route takes it) and ``runId``."""

INTERRUPT_REASON = "approval"
"""The ``reason`` of an interrupt for a pending approval request."""

_ABANDONED = "abandoned in the AG-UI front end (resume entry status: cancelled)"

_encoder = EventEncoder()


@dataclass(frozen=True)
class _End:
    """The reply ended: answered (``reply`` on a new message), or at pending approvals."""

    state: AgentState
    reply: SessionReply | None = None
    after: int = -1
    """Where a resumed run reads the thread's events from (the first request's event)."""


_Item = AgentEvent | _End


@router.post(
    "/{agent}",
    summary="Run an agent's thread (AG-UI 1.0)",
    responses={**SSE_RESPONSES, 413: {"description": "the body is over the gateway's limit"}},
)
async def run(
    agent: Annotated[str, Path(description="the agent's name")],
    body: RunAgentInput,
    caller: Reader,
    gateway: GatewayDep,
) -> StreamingResponse:
    """Run the thread ``threadId``: send its newest user message, or resume its interrupts.

    Answers AG-UI events (``text/event-stream``, one JSON event per ``data:`` line).
    See the module's docstring (and the protocols guide) for the mapping.
    """
    # A new message needs a key that may operate; a resume, one that may decide (what
    # the sessions and approvals routes need), refused before anything is asked.
    caller.permit("approve" if body.resume else "operate")
    name = gateway.agent(agent)
    for field_name, value in (("threadId", body.thread_id), ("runId", body.run_id)):
        if not 1 <= len(value) <= MAX_ID:
            raise HTTPException(
                HTTPStatus.UNPROCESSABLE_ENTITY,
                f"{field_name} must be 1 to {MAX_ID} characters (it has {len(value)})",
            )
    client = gateway.acting_for(caller)
    workflow_id = session_workflow_id(name, caller.tenant, body.thread_id)
    if body.resume:
        source = await _resume(gateway, caller, workflow_id, body.resume)
    else:
        text = _newest_user_text(body)
        # One run at a time per thread, as AG-UI runs go: a thread still answering, or
        # waiting for its interrupts' answers, refuses a new message before the stream
        # (409) instead of leaving the run silent until the decision.
        read = _reader(gateway, client, workflow_id)
        source = await open_reply(gateway, name, body.thread_id, text, caller, read, "reject")
    events = _Events(body.thread_id, body.run_id)
    return event_stream(
        source, events.render, idle=gateway.options.ping_interval, on_error=events.error
    )


def _newest_user_text(body: RunAgentInput) -> str:
    """The text of the thread's last message, which must be the user's."""
    last = body.messages[-1] if body.messages else None
    if not isinstance(last, UserMessage):
        raise HTTPException(
            HTTPStatus.UNPROCESSABLE_ENTITY,
            "no user message to send: a run sends the thread's last message, which must be "
            "the user's (the session keeps the conversation; to answer an interrupt, send "
            "`resume` entries)",
        )
    content = last.content
    text = (
        content
        if isinstance(content, str)
        else "".join(getattr(part, "text", "") for part in content)
    )
    if not text.strip():
        raise HTTPException(
            HTTPStatus.UNPROCESSABLE_ENTITY, "the last user message has no text to send"
        )
    return text


def _reader(
    gateway: Gateway, client: AgentClient, workflow_id: str
) -> Callable[[ReplyStream], AsyncIterator[_Item]]:
    """Reads one reply's events, then its end (with the state, for the snapshot)."""

    async def state_once_answered(stream: ReplyStream) -> AgentState:
        await stream.answered.wait()
        # The ownership check (a describe) and the query go at once: the check done by
        # ``client.state`` came first and added its round trip to every run. A key
        # that runs a thread may operate it, so the state shows it ``data`` as
        # ``client.state`` would; a check that refuses fails the run with it.
        check = asyncio.ensure_future(client.identity.owns(workflow_id))
        query = asyncio.ensure_future(_state(gateway, gateway.agents, workflow_id))
        try:
            await asyncio.wait((check, query))
        finally:
            for asked in (check, query):
                asked.cancel()  # the run left early: nobody needs the answer
        check.result()  # a refusal first, in its own words
        return query.result()

    async def read(stream: ReplyStream) -> AsyncIterator[_Item]:
        # The state for the snapshot is asked as soon as the session has answered: the
        # reply's last events reach us later (the feed's batches), so the query is done
        # by then instead of adding its round trip to the run.
        final = asyncio.ensure_future(state_once_answered(stream))
        try:
            async with contextlib.aclosing(stream.events()) as events:
                async for event in events:
                    yield event
                    if isinstance(event, ApprovalRequested):
                        state = await _state(gateway, client, workflow_id)
                        yield _End(state, after=event.offset)
                        return
            yield _End(await final, reply=stream.reply)
        finally:
            if not final.done():
                final.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await final
            elif not final.cancelled():
                final.exception()  # retrieved: a failed query nobody needed is no error

    return read


async def _state(gateway: Gateway, client: AgentClient, workflow_id: str) -> AgentState:
    return await client.state(workflow_id, timeout=gateway.options.worker_timeout)


async def _resume(
    gateway: Gateway, caller: Principal, workflow_id: str, entries: list[ResumeEntry]
) -> Lookahead[_Item]:
    """Decide the interrupts ``entries`` answer; the thread's events from where it stopped.

    Every entry is checked before the first decision is sent, so a refused resume
    decides nothing: a decision the agent would refuse for its arguments' hash is
    refused here, in the agent's words.

    Raises:
        AgentNotFoundError: No such thread (or another tenant's).
        HTTPException: An entry names no interrupt this thread raised (404), the same
            interrupt twice, or a payload that is not a decision (422).
        InvalidDecisionError: The agent refused a decision (409).
    """
    client = gateway.acting_for(caller)
    answers = [(_interrupt_id(entry.interrupt_id), entry) for entry in entries]
    named = [request_id for (request_id, _), _ in answers]
    if len(set(named)) < len(named):
        raise HTTPException(HTTPStatus.UNPROCESSABLE_ENTITY, "a resume answers each interrupt once")
    state = await _state(gateway, client, workflow_id)  # the thread's, or not found
    requests = {request.id: request for request in state.approvals}
    decisions: list[tuple[ApprovalRequest, Decision]] = []
    for (request_id, _), entry in answers:
        request = requests.get(request_id)
        if request is None:
            raise HTTPException(
                HTTPStatus.NOT_FOUND,
                f"no interrupt {request_id!r} in thread {state.session_id!r}: a resume answers "
                "the interrupts of the thread's last run",
            )
        decision = _decision(entry)
        pinned = decision.arguments_sha256
        if request.status == "pending" and decision.approved and pinned != request.arguments_sha256:
            raise InvalidDecisionError(
                f"request {request.id}: arguments_sha256 {pinned!r} is not the hash of its "
                f"arguments ({request.arguments_sha256}): approve only what was shown"
            )
        decisions.append((request, decision))
    await _refuse_offsets_past_the_stream(gateway, client, workflow_id, answers)
    release = gateway.streams.take(caller)  # 429 past the key's cap, before any decision
    try:
        for request, decision in decisions:
            # Decided meanwhile (the console, a quorum): the turn goes on without this one.
            if request.status == "pending":
                await client.decide(
                    workflow_id,
                    ApprovalDecision(
                        request_id=request.id,
                        approved=decision.approved,
                        by="ag-ui",  # the key's name, set by the client acting for it
                        comment=decision.comment,
                        arguments_sha256=decision.arguments_sha256,
                        arguments=decision.arguments,
                    ),
                    timeout=gateway.options.worker_timeout,
                )
    except BaseException:
        release()
        raise
    after = min(offset for (_, offset), _ in answers)
    answered = {request.id for request, _ in decisions}
    source: Lookahead[_Item] = Lookahead(
        _follow(gateway, client, workflow_id, after, answered), on_close=release
    )
    await source.settle(gateway.options.stream_grace)
    return source


def _interrupt_id(value: str) -> tuple[str, int]:
    """``(request id, stream offset)`` of an interrupt id this gateway gave (``id@offset``)."""
    request_id, at, offset = value.rpartition("@")
    if not at or not request_id or not offset.isdigit() or len(offset) > 18:
        raise HTTPException(
            HTTPStatus.NOT_FOUND,
            f"no interrupt {value!r}: resume entries answer the interrupts a run of this "
            "thread ended with, by their id",
        )
    return request_id, int(offset)


async def _refuse_offsets_past_the_stream(
    gateway: Gateway,
    client: AgentClient,
    workflow_id: str,
    answers: list[tuple[tuple[str, int], ResumeEntry]],
) -> None:
    """Refuse an interrupt id whose offset no event of the thread has reached (404).

    The offset is where the resumed run's events are read from: a forged one past the
    stream's end (a real request id, ``@<huge>``) would follow a stream that never gets
    there, and the resume would wait forever with its decision sent. Checked before
    any decision, with one query of the stream's end.
    """
    (_, offset), entry = max(answers, key=lambda answer: answer[0][1])
    stream = WorkflowStreamClient.create(client.client, workflow_id)
    try:
        async with asyncio.timeout(gateway.options.worker_timeout):
            end = await stream.get_offset()
    except TimeoutError:
        raise ClientError(
            f"no worker answered the event stream query of {workflow_id!r} within "
            f"{gateway.options.worker_timeout:g}s; is a worker running?"
        ) from None
    # Every interrupt id names an event already published (``@0`` for a run that ended
    # before publishing any): its offset is below the end.
    if offset >= max(end, 1):
        raise HTTPException(
            HTTPStatus.NOT_FOUND,
            f"no interrupt {entry.interrupt_id!r}: the thread's events end at offset {end}; "
            "resume entries answer the interrupts a run of this thread ended with, by their id",
        )


def _decision(entry: ResumeEntry) -> Decision:
    """The decision a resume entry carries (``cancelled``: a rejection)."""
    if entry.status == "cancelled":
        return Decision(approved=False, comment=_ABANDONED)
    try:
        return Decision.model_validate(entry.payload)
    except ValidationError as exc:
        problems = "; ".join(str(e.get("msg", "")) for e in exc.errors())
        raise HTTPException(
            HTTPStatus.UNPROCESSABLE_ENTITY,
            f"resume entry {entry.interrupt_id!r}: the payload is not a decision ({problems}); "
            'send {"approved": true, "arguments_sha256": "<the interrupt\'s>"} or '
            '{"approved": false, "comment": "why"}',
        ) from None


async def _follow(
    gateway: Gateway, client: AgentClient, workflow_id: str, after: int, answered: set[str]
) -> AsyncIterator[_Item]:
    """The resumed turn's events after ``after``, to its answer or its next approval."""
    now = await _state(gateway, client, workflow_id)
    if any(request.id in answered for request in now.pending_approvals):
        yield _End(now, after=after)  # a quorum wants more votes: the same interrupt again
        return
    events = await client.open_events(workflow_id, after=after)
    try:
        async for event in events:
            if isinstance(event, ApprovalRequested) and event.request.id in answered:
                continue  # the requests this run answered, raised before it
            yield event
            if isinstance(event, ApprovalRequested):
                yield _End(await _state(gateway, client, workflow_id), after=event.offset)
                return
            if _answered(event):
                break
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()
    yield _End(await _state(gateway, client, workflow_id))


def _answered(event: AgentEvent) -> bool:
    """Whether ``event`` ends a reply: its answer, the session idle again, or its end."""
    if isinstance(event, MessageCompleted):
        message = event.message
        return message.role == "assistant" and not message.tool_calls
    if isinstance(event, StatusChanged):
        return event.status == "idle"
    return isinstance(event, RunFinished)


@dataclass
class _Events:
    """One run's AG-UI events, from the agent's events (and the run's end)."""

    thread_id: str
    run_id: str
    _started: bool = False
    _text: TextAssembler = field(default_factory=TextAssembler)
    _sent: dict[str, str] = field(default_factory=dict)
    """The text of each message started, as its events so far have shown it."""
    _ended: set[str] = field(default_factory=set)
    """The messages ended (``TEXT_MESSAGE_END`` sent)."""
    _calls: set[str] = field(default_factory=set)

    def render(self, item: _Item) -> bytes:
        """The SSE bytes of ``item``'s events (``RUN_STARTED`` before the first)."""
        events: list[BaseEvent] = []
        if not self._started:
            self._started = True
            events.append(
                RunStartedEvent(
                    thread_id=self.thread_id,
                    run_id=self.run_id,
                    protocol_version=PROTOCOL_VERSION,
                    timestamp=_now(),
                )
            )
        events.extend(self._translate(item))
        return "".join(_encoder.encode(event) for event in events).encode()

    def error(self, exc: Exception) -> bytes:
        """``RUN_ERROR`` for a failure after the stream began."""
        problem = problem_of(exc)
        code = problem.type.removeprefix(ERROR_TYPE_PREFIX)
        event = RunErrorEvent(
            message=problem.detail,
            code=code if code != "about:blank" else str(problem.status),
            timestamp=_now(),
        )
        return _encoder.encode(event).encode()

    def _translate(self, item: _Item) -> list[BaseEvent]:
        if isinstance(item, _End):
            return self._end(item)
        if isinstance(item, TextDelta | TextReset) and item.message_id is not None:
            return self._delta(item.message_id, item)
        if isinstance(item, MessageCompleted) and item.message.role == "assistant":
            return self._message(item)
        if isinstance(item, ToolCallFinished):
            return [
                ToolCallResultEvent(
                    message_id=f"{item.call_id}:result",
                    tool_call_id=item.call_id,
                    content=item.content,
                    role="tool",
                )
            ]
        return []

    def _delta(self, message_id: str, event: TextDelta | TextReset) -> list[BaseEvent]:
        if message_id in self._ended:
            return []  # AG-UI admits no content after a message's end
        before = self._text.text(message_id)
        now = self._text.add(event)
        if now is None or now == before:
            return []
        events = self._open(message_id)
        shown = self._sent[message_id]
        if shown.startswith(now):
            return events  # a retry writing again what is shown: nothing new yet
        # AG-UI cannot take text back: a retried model call that wrote something else
        # goes on after a line break, once (the message's final text is the truth).
        piece = now[len(shown) :] if now.startswith(shown) else "\n" + now
        self._sent[message_id] = now
        events.append(TextMessageContentEvent(message_id=message_id, delta=piece))
        return events

    def _open(self, message_id: str) -> list[BaseEvent]:
        if message_id in self._sent:
            return []
        self._sent[message_id] = ""
        return [TextMessageStartEvent(message_id=message_id, role="assistant")]

    def _message(self, event: MessageCompleted) -> list[BaseEvent]:
        message, message_id = event.message, event.message_id or f"message-{event.offset}"
        events: list[BaseEvent] = []
        if message_id in self._sent:
            events += self._settle(message_id, message.content or "")
            events += self._close(message_id)
        elif message.content:  # not streamed: the whole text at once
            events += [
                TextMessageStartEvent(message_id=message_id, role="assistant"),
                TextMessageContentEvent(message_id=message_id, delta=message.content),
                TextMessageEndEvent(message_id=message_id),
            ]
            self._sent[message_id] = message.content
            self._ended.add(message_id)
        for call in message.tool_calls:
            if call.id in self._calls:
                continue
            self._calls.add(call.id)
            events.append(
                ToolCallStartEvent(
                    tool_call_id=call.id, tool_call_name=call.name, parent_message_id=message_id
                )
            )
            if call.arguments:
                events.append(ToolCallArgsEvent(tool_call_id=call.id, delta=call.arguments))
            events.append(ToolCallEndEvent(tool_call_id=call.id))
        return events

    def _settle(self, message_id: str, content: str) -> list[BaseEvent]:
        """What the final text adds to what the pieces showed, so a message ends with it.

        A retry that wrote less than was shown, say: its text follows a line break.
        """
        shown = self._sent[message_id]
        if not content or shown.endswith(content) or message_id in self._ended:
            return []
        piece = content[len(shown) :] if content.startswith(shown) else "\n" + content
        self._sent[message_id] = content
        return [TextMessageContentEvent(message_id=message_id, delta=piece)]

    def _close(self, message_id: str) -> list[BaseEvent]:
        if message_id in self._ended:
            return []
        self._ended.add(message_id)
        return [TextMessageEndEvent(message_id=message_id)]

    def _end(self, end: _End) -> list[BaseEvent]:
        # A message cut off before it completed (an interrupted model call) still ends:
        # AG-UI closes a run only once everything it opened is closed.
        events: list[BaseEvent] = [e for m in list(self._sent) for e in self._close(m)]
        events.append(
            StateSnapshotEvent(snapshot=end.state.model_dump(mode="json"), timestamp=_now())
        )
        pending = end.state.pending_approvals
        if pending:
            outcome: Any = RunFinishedInterruptOutcome(
                interrupts=[_interrupt(request, end.after) for request in pending]
            )
            events.append(
                RunFinishedEvent(
                    thread_id=self.thread_id, run_id=self.run_id, outcome=outcome, timestamp=_now()
                )
            )
            return events
        reply = end.reply
        events.append(
            RunFinishedEvent(
                thread_id=self.thread_id,
                run_id=self.run_id,
                outcome=RunFinishedSuccessOutcome(),
                result=reply.text if reply is not None else end.state.output,
                usage=_usage(reply.turn_usage if reply is not None else None),
                timestamp=_now(),
            )
        )
        return events


def _interrupt(request: ApprovalRequest, after: int) -> Interrupt:
    """A pending approval request as an AG-UI interrupt; its answer is a ``Decision``."""
    return Interrupt(
        id=f"{request.id}@{max(after, 0)}",
        reason=INTERRUPT_REASON,
        message=(
            f"Approve {request.tool} with these arguments? "
            f"(request {request.id}; answer with a decision)"
        ),
        tool_call_id=request.call_id,
        response_schema=Decision.model_json_schema(),
        expires_at=request.deadline.isoformat(),
        metadata={
            "smyth": {
                "request_id": request.id,
                "tool": request.tool,
                "arguments": request.arguments,
                "arguments_sha256": request.arguments_sha256,
                "reason": request.reason,
            }
        },
    )


def _usage(usage: Usage | None) -> list[TokenUsage] | None:
    if usage is None:
        return None
    return [
        TokenUsage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            total_tokens=usage.total_tokens,
            cached_input_tokens=usage.cached_tokens,
        )
    ]


def _now() -> int:
    return int(time.time() * 1000)
