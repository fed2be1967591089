"""The conversation: the messages, the step count, usage and status of one agent.

Workflow code (pure state, no commands). Every other component reads and writes the
agent's progress through this one object, so a subclass finds the whole state of the
dialogue in ``self.conversation``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from smyth_temporal.types.agent import AgentStatus
from smyth_temporal.types.events import AgentEvent, MessageCompleted, StatusChanged
from smyth_temporal.types.messages import Message, ToolCall, Usage
from smyth_temporal.types.versions import StepVersions

__all__ = ["Conversation", "assign_call_ids", "call_id", "unique_call_ids"]


class Conversation:
    """The messages so far and where the agent is.

    Added in 0.3.0 (before, loose attributes of ``AgentWorkflow``).
    """

    def __init__(self) -> None:
        self.messages: list[Message] = []
        """The conversation so far; the next prompt is built from it."""
        self.step = 0
        """Model turns taken (counted across continue-as-new)."""
        self.usage = Usage()
        """Tokens, requests and tool calls so far."""
        self._status: AgentStatus = "running"
        self.output: str | None = None
        """The final answer, once the run finished."""
        self.pending: dict[str, ToolCall] = {}
        """Tool calls running now, by call id."""
        self.versions: list[StepVersions] = []
        """What the model steps ran with, one entry per change (``AgentState.versions``)."""
        self.publish: Callable[[AgentEvent], None] = lambda event: None
        """Where the conversation's events go (the run's event stream, once wired)."""

    @property
    def status(self) -> AgentStatus:
        """Where the agent is; every change is published as a ``status`` event."""
        return self._status

    @status.setter
    def status(self, status: AgentStatus) -> None:
        if status != self._status:
            self._status = status
            self.publish(StatusChanged(status=status))

    def add(self, *messages: Message, message_id: str | None = None) -> None:
        """Append ``messages`` to the conversation and publish each one."""
        for message in messages:
            self.messages.append(message)
            self.publish(MessageCompleted(message=message, message_id=message_id))

    def count(self, usage: Usage) -> None:
        """Add ``usage`` to the run's total."""
        self.usage = self.usage + usage

    def count_tool_call(self) -> None:
        """Count one tool call (of any kind) in the run's usage."""
        self.count(Usage(tool_calls=1))

    def last_text(self) -> str:
        """The text of the last assistant message that had any."""
        for message in reversed(self.messages):
            if message.role == "assistant" and message.content:
                return message.content
        return ""

    def last_assistant(self) -> Message:
        """The last assistant message (an empty one if the model never answered)."""
        last = (m for m in reversed(self.messages) if m.role == "assistant")
        return next(last, Message(role="assistant", content=""))

    def reason_for(self, call: ToolCall) -> str | None:
        """What the model said in the turn it made ``call``."""
        for message in reversed(self.messages):
            if message.role == "assistant" and any(c.id == call.id for c in message.tool_calls):
                return message.content
        return None


def call_id(step: int, index: int) -> str:
    """The id the workflow gives the ``index``-th call (from 0) of model turn ``step``.

    Added in 0.8.0.
    """
    return f"call_{step}_{index}"


def assign_call_ids(calls: Sequence[ToolCall], step: int) -> list[ToolCall]:
    """Name every call of model turn ``step`` by its position; keep the model's id on the wire.

    Approval request ids, idempotency keys and the running-call slots are keyed by the
    call id, so it must be unique in the run whatever the model sent: an id derived
    from the model's (repeated, empty, or crafted to match a suffix such as ``a~2``)
    let two calls share one approval. The model's id stays in ``ToolCall.original_id``
    (when it differs) for the messages sent back to it.

    Added in 0.8.0 (runs started before keep ``unique_call_ids``).
    """
    assigned: list[ToolCall] = []
    for index, call in enumerate(calls):
        own = call_id(step, index)
        model_id = call.wire_id
        original = model_id if model_id and model_id != own else None
        assigned.append(call.model_copy(update={"id": own, "original_id": original}))
    return assigned


def unique_call_ids(calls: Sequence[ToolCall]) -> list[ToolCall]:
    """The ids of runs started before 0.8.0: the model's, with a suffix when repeated.

    Kept so those runs replay as recorded. It is not injective (``a, a, a~2`` becomes
    ``a, a~2, a~2``); new runs use ``assign_call_ids``.
    """
    seen: dict[str, int] = {}
    unique: list[ToolCall] = []
    for call in calls:
        count = seen[call.id] = seen.get(call.id, 0) + 1
        if count == 1:
            unique.append(call)
        else:
            unique.append(
                call.model_copy(update={"id": f"{call.id}~{count}", "original_id": call.id})
            )
    return unique
