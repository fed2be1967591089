"""One session turn as the OpenAI surfaces show it: text, messages, tool calls, the end.

The chat-completions and Responses routes read a turn the same way, streamed or not, so
both forms of each answer carry the same content: ``turn_items`` turns the session's
events of one reply into ``TurnText`` (a message's text as it is written), ``TurnMessage``
(a message done: the answer, or interim text beside tool calls), ``TurnTool`` (a tool
call that ran, with its result), then either the ``SessionReply`` or ``TurnPending``: an
approval the turn waits for, which ends the answer at once (the session keeps waiting;
a decision lets it go on, and the next message is answered after it).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from temporalio.client import WorkflowUpdateRPCTimeoutOrCancelledError

from smyth_temporal.clients import AgentClient, ReplyStream
from smyth_temporal.exceptions import ClientError
from smyth_temporal.types.approvals import ApprovalRequest
from smyth_temporal.types.events import (
    ApprovalRequested,
    MessageCompleted,
    TextAssembler,
    TextDelta,
    TextReset,
    ToolCallFinished,
    ToolCallScheduled,
)
from smyth_temporal.types.messages import ToolCall
from smyth_temporal.types.sessions import SessionReply, WhileBusy

__all__ = [
    "ShownText",
    "TurnItem",
    "TurnMessage",
    "TurnPending",
    "TurnText",
    "TurnTool",
    "pending_notice",
    "reply_or_pending",
    "turn_items",
]


@dataclass(frozen=True)
class TurnText:
    """A message's text as it is written."""

    message_id: str
    text: str
    """The next piece; with ``reset``, the message's whole text so far."""
    reset: bool = False
    """The text sent so far for this message is void (its model call was retried)."""


@dataclass(frozen=True)
class TurnMessage:
    """An assistant message of the turn, done."""

    message_id: str
    content: str
    tool_calls: tuple[ToolCall, ...]

    @property
    def final(self) -> bool:
        """The answer (no tool calls follow); otherwise interim text beside tool calls."""
        return not self.tool_calls


@dataclass(frozen=True)
class TurnTool:
    """A tool call the agent ran, with its result."""

    call: ToolCall
    content: str
    error: bool


@dataclass(frozen=True)
class TurnPending:
    """The turn waits for a decision on ``request``; the answer ends here."""

    request: ApprovalRequest


TurnItem = TurnText | TurnMessage | TurnTool | TurnPending | SessionReply


class ShownText:
    """What a stream that cannot take text back has shown of each message.

    A retried model call writes its message again from the start (``TurnText.reset``).
    While the new attempt writes what was already shown, nothing goes out; once it goes
    beyond, only the rest does; if it writes something else, its text goes out after a
    line break, once (the message's final text, in the done events, is the truth). So a
    retry that writes the same text, the usual case, leaves the deltas equal to it.
    """

    def __init__(self) -> None:
        self._now: dict[str, str] = {}
        self._shown: dict[str, str] = {}

    def piece(self, message_id: str, text: str, reset: bool) -> str:
        """What to send for ``text`` of ``message_id`` (``""``: nothing new yet)."""
        now = text if reset else self._now.get(message_id, "") + text
        self._now[message_id] = now
        shown = self._shown.get(message_id, "")
        if shown.startswith(now):
            return ""
        self._shown[message_id] = now
        return now[len(shown) :] if now.startswith(shown) else "\n" + now

    def text(self, message_id: str) -> str:
        """The message's text as its latest attempt wrote it so far."""
        return self._now.get(message_id, "")


def pending_notice(request: ApprovalRequest) -> str:
    """What an answer that stops at a pending approval says, the same on every surface."""
    return (
        f"Waiting for approval: request {request.id} ({request.tool}) needs a decision "
        "before the agent goes on. Decide it (the console, `smyth approvals`, or POST "
        f"/v1/runs/{{workflow_id}}/approvals/{request.id}), then send the next message: "
        "it is answered after this turn."
    )


async def turn_items(
    stream: ReplyStream,
    *,
    on_taken: Callable[[MessageCompleted], None] | None = None,
) -> AsyncIterator[TurnItem]:
    """The items of one reply, ending with the ``SessionReply`` or a ``TurnPending``.

    ``on_taken`` is called with the event of the message itself, once the session takes it.
    """
    assembler, calls = TextAssembler(), dict[str, ToolCall]()
    events = stream.events()
    try:
        async for event in events:
            if isinstance(event, TextDelta | TextReset) and event.message_id is not None:
                before = assembler.text(event.message_id)
                now = assembler.add(event)
                if now is not None:
                    reset = not now.startswith(before)
                    text = now if reset else now[len(before) :]
                    yield TurnText(event.message_id, text, reset)
            elif isinstance(event, MessageCompleted) and event.message.role == "user":
                if on_taken is not None:
                    on_taken(event)
                    on_taken = None
            elif isinstance(event, MessageCompleted) and event.message.role == "assistant":
                message = event.message
                yield TurnMessage(
                    event.message_id or "", message.content or "", tuple(message.tool_calls)
                )
            elif isinstance(event, ToolCallScheduled):
                calls[event.call.id] = event.call
            elif isinstance(event, ToolCallFinished):
                call = calls.get(event.call_id) or ToolCall(
                    id=event.call_id, name=event.name, arguments="{}"
                )
                yield TurnTool(call, event.content, event.error)
            elif isinstance(event, ApprovalRequested):
                yield TurnPending(event.request)
                return
    finally:
        await events.aclose()  # now: it stops waiting for the reply (the session goes on)
    if stream.reply is not None:
        yield stream.reply


async def reply_or_pending(
    client: AgentClient,
    agent: str,
    session_id: str,
    text: str,
    *,
    workflow_id: str,
    every: float,
    while_busy: WhileBusy | None = None,
) -> SessionReply | TurnPending:
    """Send ``text`` and wait for the reply, or for the session to wait for a decision.

    For whole answers, which need no events: following the session's events would cost
    the session a poll per read and the answer a query before it is sent. Instead, every
    ``every`` seconds without the reply, the session's state is asked for: an approval
    pending there holds every message behind it (this one's turn, or one before it), so
    the answer ends with it. The session still answers the message after the decision.

    Raises:
        InvalidMessageError: The session refused the message.
    """
    delivery = asyncio.ensure_future(client.send(agent, session_id, text, while_busy=while_busy))
    try:
        while True:
            await asyncio.wait({delivery}, timeout=every)
            if delivery.done():
                reply = delivery.result()
                assert reply is not None  # waited for
                return reply
            looked = asyncio.ensure_future(client.state(workflow_id, timeout=every))
            await asyncio.wait({delivery, looked}, return_when=asyncio.FIRST_COMPLETED)
            if not looked.done():
                looked.cancel()
            with contextlib.suppress(asyncio.CancelledError, ClientError):
                pending = (await looked).pending_approvals
                if pending and not delivery.done():
                    return TurnPending(pending[0])
    finally:
        if not delivery.done():
            delivery.cancel()
            with contextlib.suppress(
                asyncio.CancelledError, WorkflowUpdateRPCTimeoutOrCancelledError
            ):
                await delivery
