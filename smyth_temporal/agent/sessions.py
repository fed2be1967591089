"""Persistent sessions: the inbox of messages and the replies waiting for their senders.

Workflow code. Messages arrive through an update (answered) or a signal (not), are
numbered in arrival order and answered one at a time. ``check`` is the one rule for
refusing a message; the update's validator uses it, so a refused message leaves no
trace in history.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from temporalio import workflow

from smyth_temporal.agent.conversation import Conversation
from smyth_temporal.agent.run import Run
from smyth_temporal.exceptions import InvalidMessageError
from smyth_temporal.types.agent import TERMINAL_STATUSES, AgentInput, AgentStatus, Interrupt
from smyth_temporal.types.messages import Message, Usage
from smyth_temporal.types.sessions import SessionMessage, SessionReply, WhileBusy

__all__ = ["MAX_SESSION_MESSAGE_CHARS", "Inbox", "Queued"]

MAX_SESSION_MESSAGE_CHARS = 100_000
"""The longest session message accepted; a longer one is refused, not truncated."""


@dataclass(frozen=True)
class Queued:
    """A message waiting to be answered."""

    number: int
    """Its number in the session (the first is 1, counted across continue-as-new)."""
    message: SessionMessage
    """The message."""
    reply: bool
    """Whether a sender waits for the reply (an update) or not (a signal)."""


class Inbox:
    """The session's queue of messages, and the replies not yet collected.

    Args:
        run: The agent's run (logger; config: ``while_busy``; interrupts: a message
            sent with ``while_busy="interrupt"`` requests one).

    Added in 0.3.0. Changed in 0.9.0: takes the ``Run``.
    """

    def __init__(self, run: Run) -> None:
        self.received = 0
        """Messages received so far (counted across continue-as-new)."""
        self.closing = False
        """Whether ``close_session`` was signalled."""
        self.current: Queued | None = None
        """The message being answered now (the session is busy while there is one)."""
        self._queue: deque[Queued] = deque()
        self._steering: deque[Queued] = deque()
        self._joined: list[Queued] = []
        self._replies: dict[int, SessionReply] = {}
        self._run = run
        self._log = run.log
        self._while_busy = run.config.while_busy
        self._interrupts = run.interrupts

    def policy(self, message: SessionMessage) -> WhileBusy:
        """What to do with ``message`` while the session is busy."""
        return message.while_busy or self._while_busy

    def __bool__(self) -> bool:
        return bool(self._queue)

    def check(self, message: SessionMessage, input: AgentInput | None, status: AgentStatus) -> None:
        """Refuse a message this session cannot take.

        Raises:
            InvalidMessageError: Not a session, another tenant's session, a closed
                session, an empty or an oversized message, or a busy session and the
                message's policy is ``reject``.
        """
        problem: str | None = None
        if input is None or input.mode != "session":
            problem = "this agent run is not a session (start it with AgentClient.send)"
        elif message.tenant != input.tenant:
            problem = f"the session belongs to another tenant than {message.tenant!r}"
        elif self.closing or status in TERMINAL_STATUSES:
            problem = "the session is closed"
        elif not message.text.strip():
            problem = "the message is empty"
        elif len(message.text) > MAX_SESSION_MESSAGE_CHARS:
            problem = (
                f"the message has {len(message.text)} characters; "
                f"the limit is {MAX_SESSION_MESSAGE_CHARS}"
            )
        elif self.current is not None and self.policy(message) == "reject":
            problem = (
                f"the session is busy answering message {self.current.number}; send it "
                "again later, or with while_busy enqueue, interrupt or steer"
            )
        if problem:
            raise InvalidMessageError(problem)

    def enqueue(self, message: SessionMessage, *, reply: bool) -> int:
        """Queue a message (or, to steer the busy session, hold it for the turn); its number."""
        self.received += 1
        queued = Queued(self.received, message, reply)
        policy = self.policy(message) if self.current is not None else "enqueue"
        if policy == "steer":
            self._steering.append(queued)
        else:
            self._queue.append(queued)
        if policy == "interrupt":
            self._interrupts.request(Interrupt(reason="a newer message arrived", by=message.sender))
        self._log.info(
            "session.message", number=self.received, sender=message.sender, policy=policy
        )
        return self.received

    def post(self, message: SessionMessage, input: AgentInput | None, status: AgentStatus) -> None:
        """Queue a message nobody waits for; one ``check`` refuses is logged and dropped.

        (A signal cannot be refused: its sender has gone.) Added in 0.9.0.
        """
        try:
            self.check(message, input, status)
        except InvalidMessageError as exc:
            self._log.warning("session.invalid_event", error=str(exc))
            return
        self.enqueue(message, reply=False)

    def steer_into(self, conversation: Conversation) -> None:
        """Add the messages that steer the current turn to the conversation.

        The loop calls it before every model turn: after the tool calls of the turn, so
        a steering message never lands between a call and its result.
        """
        while self._steering:
            queued = self._steering.popleft()
            conversation.add(Message.user(queued.message.text))
            self._joined.append(queued)
            into = self.current.number if self.current else None
            self._log.info("session.steered", number=queued.number, into=into)

    def next(self) -> Queued:
        """Take the oldest queued message."""
        return self._queue.popleft()

    async def serve(self) -> None:
        """Answer messages one by one until the session is closed.

        Each through the agent's ``respond`` (``run.hooks``). An idle session waits on
        a condition only (no timer, no worker memory once evicted). When the agent's
        ``should_continue_as_new`` says so it switches runs between messages, once no
        handler is running (the event stream's subscribers are let go first); a
        message that arrives first is answered first.

        Changed in 0.9.0: takes what it calls from the ``Run``.
        """
        conversation, hooks = self._run.conversation, self._run.hooks
        while True:
            conversation.status = "idle"
            await workflow.wait_condition(
                lambda: bool(self) or self.closing or hooks.should_continue_as_new()
            )
            if self:
                await self.answer_next(conversation, hooks.respond)
                continue
            if self.closing:
                break
            # Waiting subscribers' polls would hold the switch off forever.
            self._run.events.release_subscribers()
            await workflow.wait_condition(
                lambda: workflow.all_handlers_finished() or bool(self) or self.closing
            )
            if not self and not self.closing:
                hooks.continue_as_new()
        self._log.info("session.closed", messages=self.received)

    async def answer_next(
        self, conversation: Conversation, respond: Callable[[str], Awaitable[Message]]
    ) -> None:
        """Answer the oldest message with ``respond`` (the agent's think/act until answer).

        The messages that steered its turn get the same reply; those that arrived too
        late to steer it are answered next, on their own.
        """
        queued = self.current = self.next()
        conversation.status = "running"
        before = conversation.usage
        answer = await respond(queued.message.text)
        text = answer.content if not answer.tool_calls else conversation.last_text()
        for each in (queued, *self._joined):
            reply = SessionReply(
                text=text or "",
                number=each.number,
                step=conversation.step,
                usage=conversation.usage,
                turn_usage=_spent(before, conversation.usage),
            )
            self.answer(each, reply)
        self._queue.extendleft(reversed(self._steering))
        self._steering.clear()
        self._joined = []
        self.current = None
        self._log.info("session.answered", number=queued.number, step=conversation.step)

    def answer(self, queued: Queued, reply: SessionReply) -> None:
        """Hand ``reply`` to whoever waits for ``queued`` (nobody, for an event)."""
        if queued.reply:
            self._replies[queued.number] = reply

    async def reply_to(self, number: int) -> SessionReply:
        """Wait until message ``number`` is answered, and take the reply."""
        await workflow.wait_condition(lambda: number in self._replies)
        return self._replies.pop(number)


def _spent(before: Usage, after: Usage) -> Usage:
    """What a turn added to the usage (the reply's own, beside the session's total)."""
    return Usage(
        requests=after.requests - before.requests,
        input_tokens=after.input_tokens - before.input_tokens,
        output_tokens=after.output_tokens - before.output_tokens,
        tool_calls=after.tool_calls - before.tool_calls,
        cached_tokens=after.cached_tokens - before.cached_tokens,
        cost=after.cost - before.cost,
    )
