"""Persistent sessions: ``AgentClient``'s ``send`` (awaited or streamed) and ``close_session``."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Coroutine
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal, overload

from temporalio.client import (
    WithStartWorkflowOperation,
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.common import TypedSearchAttributes, WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.service import RPCError

from smyth_temporal.clients._base import AgentRef, agent_name
from smyth_temporal.clients._live import LiveClient
from smyth_temporal.clients._runs import refusal
from smyth_temporal.clients._visibility import start_tagged
from smyth_temporal.exceptions import AgentNotFoundError, InvalidMessageError
from smyth_temporal.types.agent import AgentInput
from smyth_temporal.types.events import (
    AgentEvent,
    MessageCompleted,
    TextAssembler,
    TextDelta,
    TextReset,
)
from smyth_temporal.types.sessions import (
    CLOSE_SESSION_SIGNAL,
    SESSION_EVENT_SIGNAL,
    SESSION_MESSAGE_UPDATE,
    SessionMessage,
    SessionReply,
    WhileBusy,
    session_workflow_id,
)

__all__ = ["ReplyChunk", "ReplyStream", "SessionsClient"]


STREAM_OFFSET_QUERY = "__temporal_workflow_stream_offset"
"""The workflow stream's query for its next offset (``temporalio.contrib.workflow_streams``)."""


class SessionsClient(LiveClient):
    """Talk to agents' persistent sessions."""

    @overload
    def send(
        self,
        agent: AgentRef,
        session_id: str,
        text: str,
        *,
        tenant: str = ...,
        sender: str | None = ...,
        wait: bool = ...,
        while_busy: WhileBusy | None = ...,
        stream: Literal[False] = ...,
        existing: bool = ...,
    ) -> Coroutine[Any, Any, SessionReply | None]: ...

    @overload
    def send(
        self,
        agent: AgentRef,
        session_id: str,
        text: str,
        *,
        tenant: str = ...,
        sender: str | None = ...,
        wait: bool = ...,
        while_busy: WhileBusy | None = ...,
        stream: Literal[True],
        existing: bool = ...,
    ) -> ReplyStream: ...

    def send(
        self,
        agent: AgentRef,
        session_id: str,
        text: str,
        *,
        tenant: str = "default",
        sender: str | None = None,
        wait: bool = True,
        while_busy: WhileBusy | None = None,
        stream: bool = False,
        existing: bool = False,
    ) -> Coroutine[Any, Any, SessionReply | None] | ReplyStream:
        """Send a message to a persistent session, starting the session if need be.

        One call (update-with-start): a stateless script or web handler can talk to a
        durable session. Callers racing to start the same session create it once;
        messages are answered one at a time, in the order they arrive.

        Args:
            agent: The agent class or its workflow type name (any registered agent
                whose run method calls ``run_agent``).
            session_id: Names the session (per agent and tenant).
            text: The message.
            tenant: Whose session it is.
            sender: Who sends it (kept in the session's history).
            wait: Wait for the reply (an update, default); ``False`` posts the message
                as an event (a signal) and returns at once.
            while_busy: What the session does if it is answering another message:
                ``enqueue``, ``reject``, ``interrupt`` or ``steer`` (default: the agent's
                ``AgentConfig.while_busy``).
            stream: Return a ``ReplyStream`` that yields the reply as it is written
                (``async for chunk in agents.send(..., stream=True)``).
            existing: Only continue a session (of the caller's): with none,
                ``AgentNotFoundError`` and nothing is sent. Streamed, the check runs
                beside the read of where the stream ends.

        Returns:
            The agent's reply (``None`` when ``wait`` is false), to await; or, with
            ``stream``, the stream of its pieces.

        Raises:
            InvalidMessageError: The session refused the message; the message says why.
            AgentNotFoundError: ``existing``, and no such session (of the caller's).

        Added in 0.2.0. Changed in 0.3.0: ``while_busy``, ``stream``. Changed in 0.9.0:
        ``existing``.
        """
        self.identity.permit("operate")
        tenant = self.identity.tenant(tenant)
        sender = self.identity.by(sender)
        message = SessionMessage(text=text, tenant=tenant, sender=sender, while_busy=while_busy)
        workflow_id = session_workflow_id(agent_name(agent), tenant, session_id)
        if stream:
            delivery = self._deliver(agent, session_id, message)
            return ReplyStream(self, workflow_id, delivery, text=text, existing=existing)
        return self._deliver(agent, session_id, message, wait=wait, existing=existing)

    async def _deliver(
        self,
        agent: AgentRef,
        session_id: str,
        message: SessionMessage,
        *,
        wait: bool = True,
        existing: bool = False,
    ) -> SessionReply | None:
        name, tenant = agent_name(agent), message.tenant
        workflow_id = session_workflow_id(name, tenant, session_id)
        if existing:
            await _exists(self, workflow_id)
        start = AgentInput(
            tenant=tenant, session_id=session_id, mode="session", started_by=message.sender
        )
        options: dict[str, Any] = {
            "id": workflow_id,
            "task_queue": self.task_queue,
            "id_conflict_policy": WorkflowIDConflictPolicy.USE_EXISTING,
            "id_reuse_policy": WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        }
        if not wait:
            await start_tagged(
                self.client,
                tenant,
                lambda tags: self.client.start_workflow(
                    name,
                    start,
                    start_signal=SESSION_EVENT_SIGNAL,
                    start_signal_args=[message],
                    search_attributes=tags,
                    **options,
                ),
            )
            return None

        async def deliver() -> SessionReply:
            return await start_tagged(self.client, tenant, deliver_tagged)

        async def deliver_tagged(tags: TypedSearchAttributes) -> SessionReply:
            operation: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
                name, start, search_attributes=tags, **options
            )
            try:
                reply: SessionReply = await self.client.execute_update_with_start_workflow(
                    SESSION_MESSAGE_UPDATE,
                    message,
                    start_workflow_operation=operation,
                    result_type=SessionReply,
                )
            except BaseException:
                # temporalio also sets the failure on the operation's handle future,
                # which nobody awaits; read it, or asyncio reports it at exit.
                future = operation._workflow_handle
                if future.done() and not future.cancelled():
                    future.exception()
                raise
            return reply

        try:
            return await self._across_runs(workflow_id, deliver)
        except WorkflowUpdateFailedError as exc:
            raise InvalidMessageError(f"session {workflow_id}: {refusal(exc)}") from exc

    async def close_session(
        self, agent: AgentRef, session_id: str, *, tenant: str = "default"
    ) -> None:
        """End a session once the messages already sent to it are answered.

        Added in 0.2.0.
        """
        self.identity.permit("operate")
        tenant = self.identity.tenant(tenant)
        workflow_id = session_workflow_id(agent_name(agent), tenant, session_id)
        await self.signal(workflow_id, CLOSE_SESSION_SIGNAL)


@dataclass(frozen=True)
class ReplyChunk:
    """A piece of a streamed reply.

    Added in 0.3.0.
    """

    text: str
    """The next piece of the message's text."""
    message_id: str | None = None
    """The assistant message it belongs to (a reply may span several turns)."""
    reset: bool = False
    """The text shown so far for ``message_id`` is void (its model call was retried):
    start that message again with ``text``."""


_SETTLE_TIMEOUT = 2.0
"""Seconds to wait for the reply's last events once the reply itself has arrived."""


class ReplyStream:
    """The reply to one session message, as the agent writes it.

    Iterate it for ``ReplyChunk``s; once iteration ends, ``reply`` holds the agent's
    ``SessionReply`` (whose text is the truth: chunks are a view of it). ``answered`` is
    set once the session has answered the message (or refused it), which is usually a
    little before the reply's last events reach the reader: a caller can start what
    follows the reply meanwhile.

    Added in 0.3.0. Changed in 0.9.0: ``answered``.
    """

    def __init__(
        self,
        client: LiveClient,
        workflow_id: str,
        delivery: Coroutine[Any, Any, SessionReply | None],
        *,
        text: str,
        existing: bool = False,
    ) -> None:
        self.workflow_id = workflow_id
        self.reply: SessionReply | None = None
        self.answered = asyncio.Event()
        self._client = client
        self._delivery = delivery
        self._text = text
        self._existing = existing

    async def __aiter__(self) -> AsyncIterator[ReplyChunk]:
        events = self.events()
        try:
            async for chunk in _chunks(events):
                yield chunk
        finally:
            await events.aclose()  # now, not when collected: it stops waiting for the reply

    async def events(self) -> AsyncGenerator[AgentEvent, None]:
        """The session's events of this reply, from the message's own on, as they happen.

        For callers that show more than the text (tool calls, approvals, usage): the
        message is sent when iteration begins, as with ``async for``; once iteration
        ends, ``reply`` holds the reply. Leaving early stops waiting for the reply (the
        session still answers it).

        Added in 0.9.0.
        """
        if self._existing:
            # The session's check and where its stream ends, asked at once.
            try:
                after, _ = await asyncio.gather(
                    self._end_offset(), _exists(self._client, self.workflow_id)
                )
            except BaseException:
                self._delivery.close()  # refused: the message is never sent
                raise
        else:
            after = await self._end_offset()
        delivery = asyncio.create_task(self._delivery)
        delivery.add_done_callback(lambda _: self.answered.set())
        try:
            # Where the stream ended when the message was sent is only a hint (no worker
            # may answer the query): the reply starts once the session takes this message.
            taken = False
            events = self._until_answered(await self._subscribe(after, delivery), delivery)
            async for event in events:
                if isinstance(event, MessageCompleted) and event.message.role == "user":
                    taken = taken or event.message.content == self._text
                if taken:
                    yield event
            self.reply = await delivery
        finally:
            if not delivery.done():
                delivery.cancel()
                # temporalio answers a cancelled update wait with its own error.
                with contextlib.suppress(
                    asyncio.CancelledError, WorkflowUpdateRPCTimeoutOrCancelledError
                ):
                    await delivery

    async def _until_answered(
        self, events: AsyncIterator[AgentEvent], delivery: asyncio.Task[SessionReply | None]
    ) -> AsyncIterator[AgentEvent]:
        """The session's events until the reply's final message (or the reply failed)."""
        iterator = aiter(events)
        pending: asyncio.Future[AgentEvent] | None = None
        while True:
            pending = pending or asyncio.ensure_future(anext(iterator))
            settling = delivery.done()  # the reply is in: its last events are on the way
            waiting: set[asyncio.Future[Any]] = {pending} if settling else {pending, delivery}
            timeout = _SETTLE_TIMEOUT if settling else None
            await asyncio.wait(waiting, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            refused = delivery.done() and (delivery.cancelled() or delivery.exception())
            if refused or (settling and not pending.done()):
                pending.cancel()
                with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                    await pending
                return
            if not pending.done():
                continue  # the reply arrived first: wait for its events, a while
            try:
                event = pending.result()
            except StopAsyncIteration:
                return
            pending = None
            yield event
            if delivery.done() and isinstance(event, MessageCompleted) and _final(event, delivery):
                return

    async def _subscribe(
        self, after: int, delivery: asyncio.Task[SessionReply | None]
    ) -> AsyncIterator[AgentEvent]:
        # A new session exists once the update-with-start reaches the server. ``status``
        # is the caller's ownership check too (another tenant's run is ``None``): the
        # feed is read without a second one (a describe, ~3 ms of every streamed reply).
        # Asked even when ``_exists`` just said so: reading the feed at once, while the
        # message's workflow task runs, made the reply slower (118.8 against 109.6 ms
        # p50 in process, 80 replies each) than this describe's few milliseconds.
        while await self._client.status(self.workflow_id) is None:
            if delivery.done():
                return _nothing()
            await asyncio.sleep(_SESSION_POLL)
        return self._client.checked_events(self.workflow_id, after=after)

    async def _end_offset(self) -> int:
        """The offset of the session's last event so far (-1: none, or no session yet)."""
        handle = self._client.client.get_workflow_handle(self.workflow_id)
        try:
            end: int = await handle.query(
                STREAM_OFFSET_QUERY, result_type=int, rpc_timeout=_OFFSET_QUERY_TIMEOUT
            )
        except (RPCError, WorkflowQueryFailedError):
            return -1
        return end - 1


async def _exists(client: LiveClient, workflow_id: str) -> None:
    """Refuse a session that does not exist, or is not the caller's (as not found)."""
    if await client.status(workflow_id) is None:
        raise AgentNotFoundError(f"no session with workflow id {workflow_id!r}")


_SESSION_POLL = 0.05

_OFFSET_QUERY_TIMEOUT = timedelta(seconds=2)
"""How long to ask where the stream ends before reading it from the start (a query
waits for a worker; with none, the reply cannot start before one comes anyway)."""


def _final(event: MessageCompleted, delivery: asyncio.Task[SessionReply | None]) -> bool:
    """Whether ``event`` is the reply's last message (the answer, at the reply's step)."""
    reply = delivery.result()
    message = event.message
    return reply is None or (
        message.role == "assistant" and not message.tool_calls and event.step >= reply.step
    )


async def _chunks(events: AsyncIterator[AgentEvent]) -> AsyncIterator[ReplyChunk]:
    """The text of a reply's events, as ``ReplyChunk``s."""
    assembler, streamed = TextAssembler(), set[str]()
    async for event in events:
        if isinstance(event, TextDelta | TextReset) and event.message_id is not None:
            before = assembler.text(event.message_id)
            now = assembler.add(event)
            if now is not None:
                streamed.add(event.message_id)
                reset = not now.startswith(before)
                text = now if reset else now[len(before) :]
                yield ReplyChunk(text=text, message_id=event.message_id, reset=reset)
        elif isinstance(event, MessageCompleted) and event.message.role == "assistant":
            content = event.message.content
            if content and event.message_id not in streamed:
                yield ReplyChunk(text=content, message_id=event.message_id)


async def _nothing() -> AsyncIterator[AgentEvent]:
    return
    yield  # an async generator that yields nothing
