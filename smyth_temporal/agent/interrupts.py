"""Interrupts: stopping the current turn without losing what it completed.

Workflow code. An ``interrupt`` update (or a session message sent with
``while_busy="interrupt"``) records a request here; the loop takes it at the points
where stopping is safe: the model call in flight is cancelled, the tool calls not yet
started are not run, an approval wait ends in a rejection. Tool calls already running
finish, so no effect is abandoned half-way; completed calls stay completed.
"""

from __future__ import annotations

from smyth_temporal._logging import WorkflowLogger
from smyth_temporal.agent.conversation import Conversation
from smyth_temporal.exceptions import AgentInterruptedError, InvalidInterruptError
from smyth_temporal.types.agent import TERMINAL_STATUSES, Interrupt, InterruptOutcome
from smyth_temporal.types.messages import Message

__all__ = ["Interrupts"]

_NOTHING_RUNNING = frozenset({*TERMINAL_STATUSES, "idle", "sleeping"})


class Interrupts:
    """The interrupt requested and not yet taken, if any.

    Args:
        conversation: The agent's conversation (its status says what is running).
        log: The agent's logger.

    Added in 0.3.0.
    """

    def __init__(self, conversation: Conversation, log: WorkflowLogger) -> None:
        self.pending: Interrupt | None = None
        """The interrupt waiting to be taken."""
        self._conversation = conversation
        self._log = log

    def check(self) -> None:
        """Refuse an interrupt when nothing is running.

        Raises:
            InvalidInterruptError: The agent finished, is idle or is sleeping.
        """
        status = self._conversation.status
        if status in _NOTHING_RUNNING:
            raise InvalidInterruptError(f"nothing to interrupt: the agent is {status}")

    def request(self, interrupt: Interrupt) -> InterruptOutcome:
        """Record ``interrupt``; the loop takes it at its next safe point."""
        self.pending = interrupt
        self._log.info("agent.interrupt_requested", by=interrupt.by, reason=interrupt.reason)
        return InterruptOutcome(status=self._conversation.status, step=self._conversation.step)

    def requested(self) -> bool:
        """Whether an interrupt waits to be taken."""
        return self.pending is not None

    def raise_if_requested(self) -> None:
        """Stop here if an interrupt waits.

        Raises:
            AgentInterruptedError: An interrupt waits to be taken.
        """
        if self.pending is not None:
            raise AgentInterruptedError(self.describe(self.pending))

    def take(self) -> Interrupt | None:
        """Take the waiting interrupt and tell the model about it in the conversation."""
        interrupt, self.pending = self.pending, None
        if interrupt is not None:
            self._conversation.add(Message.user(f"[{self.describe(interrupt)}]"))
            self._log.info("agent.interrupted", step=self._conversation.step, by=interrupt.by)
        return interrupt

    def discard(self) -> None:
        """Drop an interrupt that came too late: the turn it meant to stop has ended."""
        if self.pending is not None:
            self._log.info("agent.interrupt_too_late", step=self._conversation.step)
            self.pending = None

    @staticmethod
    def describe(interrupt: Interrupt) -> str:
        """How the interruption reads for the model and in errors."""
        by = f" by {interrupt.by}" if interrupt.by else ""
        why = f": {interrupt.reason}" if interrupt.reason else ""
        return f"The previous turn was interrupted{by}{why}"
