"""The events of an agent run, as its event stream carries them.

Every run hosts one ``temporalio.contrib.workflow_streams`` stream; the workflow and
its model activity publish these events to it, and ``AgentClient.events`` reads them
back. The stream is a view: the run's history stays the truth, and the final message of
a turn (``MessageCompleted``) is what the model said, whatever the deltas before it
showed.

Streamed text arrives as ``TextDelta`` events. A model call that is retried publishes
``TextReset`` first: the deltas of its earlier attempts are void, so a reader starts
the message again (``TextAssembler`` does this for you).

Added in 0.3.0.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from smyth_temporal.types.agent import AgentStatus
from smyth_temporal.types.approvals import ApprovalRequest
from smyth_temporal.types.compaction import Compaction
from smyth_temporal.types.live import LiveTarget
from smyth_temporal.types.messages import Message, ToolCall, Usage
from smyth_temporal.types.versions import StepVersions

__all__ = [
    "EVENTS_TOPIC",
    "AgentEvent",
    "ApprovalDecided",
    "ApprovalEscalated",
    "ApprovalExpired",
    "ApprovalRequested",
    "ApprovalVoted",
    "CompactionDone",
    "ContinuedAsNew",
    "EventKind",
    "EventsMissed",
    "MessageCompleted",
    "NotificationFailed",
    "RunFinished",
    "RunStarted",
    "StatusChanged",
    "TextAssembler",
    "TextDelta",
    "TextReset",
    "ToolCallFinished",
    "ToolCallScheduled",
    "TurnFinished",
    "TurnStarted",
    "UsageReported",
    "parse_event",
]

EVENTS_TOPIC = "smyth.events"
"""The stream topic agent events are published on."""

EventKind = Literal[
    "run_started",
    "run_finished",
    "turn_started",
    "turn_finished",
    "text_delta",
    "text_reset",
    "message",
    "tool_call",
    "tool_result",
    "approval_requested",
    "approval_decided",
    "approval_expired",
    "approval_voted",
    "approval_escalated",
    "notification_failed",
    "compaction",
    "continued_as_new",
    "status",
    "usage",
    "gap",
]


class _Event(BaseModel):
    """What every event has: where it is in the stream and in the run."""

    model_config = ConfigDict(frozen=True)

    offset: int = -1
    """Position in the run's stream (across continue-as-new); set when the event is read."""
    run_id: str = ""
    """The Temporal run that published it (a workflow id spans runs after continue-as-new)."""
    step: int = 0
    """The agent's step when it was published."""
    message_id: str | None = None
    """The assistant message the event belongs to (text deltas, the message, its calls)."""


class RunStarted(_Event):
    """A run began (a new task, a session, or the next run after continue-as-new)."""

    kind: Literal["run_started"] = "run_started"
    agent: str
    mode: Literal["task", "session"] = "task"
    generation: int = 1


class RunFinished(_Event):
    """The run ended with this status (the stream ends after it)."""

    kind: Literal["run_finished"] = "run_finished"
    status: AgentStatus
    output: str | None = None


class TurnStarted(_Event):
    """The agent asks the model (one think step)."""

    kind: Literal["turn_started"] = "turn_started"
    versions: StepVersions | None = None
    """What the step runs with (instructions, model, tool schemas, worker build).
    Added in 0.5.0."""
    live: LiveTarget | None = None
    """The turn's live text channel when the turn streams: readers start it and read
    its ``text_delta`` events from there (``types.live``). Added in 0.6.0."""


class TurnFinished(_Event):
    """A turn ended: its tool calls ran, or it answered, or it was interrupted."""

    kind: Literal["turn_finished"] = "turn_finished"
    interrupted: bool = False


class TextDelta(_Event):
    """A piece of the text the model is writing, in order, from one attempt.

    Text deltas come from the turn's live channel, not the run's stream (since 0.6.0):
    their ``offset`` is that of the run's event they follow, so a reader resuming
    after it reads the message's text again from the start, after a ``text_reset``.
    """

    kind: Literal["text_delta"] = "text_delta"
    text: str
    attempt: int = 1
    """The model activity's attempt: only the latest attempt's deltas count."""


class TextReset(_Event):
    """A retried model call starts this message again: drop its earlier deltas."""

    kind: Literal["text_reset"] = "text_reset"
    attempt: int
    """The attempt that supersedes every earlier one."""


class MessageCompleted(_Event):
    """A message joined the conversation (the model's, a tool result, a user message)."""

    kind: Literal["message"] = "message"
    message: Message


class ToolCallScheduled(_Event):
    """A tool call was validated and handed to its executor."""

    kind: Literal["tool_call"] = "tool_call"
    call: ToolCall
    idempotency_key: str


class ToolCallFinished(_Event):
    """A tool call's result (or error, or refusal) was recorded."""

    kind: Literal["tool_result"] = "tool_result"
    call_id: str
    name: str
    content: str
    error: bool = False


class ApprovalRequested(_Event):
    """A tool call waits for a person's decision."""

    kind: Literal["approval_requested"] = "approval_requested"
    request: ApprovalRequest


class ApprovalDecided(_Event):
    """Someone approved or rejected a request."""

    kind: Literal["approval_decided"] = "approval_decided"
    request: ApprovalRequest


class ApprovalExpired(_Event):
    """A request's deadline passed without a decision."""

    kind: Literal["approval_expired"] = "approval_expired"
    request: ApprovalRequest


class ApprovalVoted(_Event):
    """A decision counted towards a request's quorum, which still waits for more.

    ``request.votes`` says who decided so far. Added in 0.9.0.
    """

    kind: Literal["approval_voted"] = "approval_voted"
    request: ApprovalRequest
    progress: str
    """Approvals counted of those needed (``"1 of 2"``)."""


class ApprovalEscalated(_Event):
    """Nobody decided in time: a step of the request's escalation applied.

    Added in 0.9.0.
    """

    kind: Literal["approval_escalated"] = "approval_escalated"
    request: ApprovalRequest
    escalation: int
    """Which escalation step (1 for the first); ``step`` stays the agent's step."""
    roles: list[str]
    """Every role that may decide from now on."""


class NotificationFailed(_Event):
    """A notification about a request could not be delivered (the request still waits).

    Added in 0.9.0.
    """

    kind: Literal["notification_failed"] = "notification_failed"
    request_id: str
    channel: str
    """The channel's name (what it stands for stays on the worker)."""
    notice: Literal["requested", "escalated"] = "requested"
    escalation: int = 0
    """The escalation step it was about (0: the request itself)."""
    error: str
    """Why: the receiver's answer, or the deadline that ended the retries."""


class CompactionDone(_Event):
    """Older messages were folded into a summary."""

    kind: Literal["compaction"] = "compaction"
    compaction: Compaction


class ContinuedAsNew(_Event):
    """The run hands over to a fresh run; the stream goes on there."""

    kind: Literal["continued_as_new"] = "continued_as_new"
    generation: int


class StatusChanged(_Event):
    """The agent's status changed (thinking, acting, awaiting_approval, idle, ...)."""

    kind: Literal["status"] = "status"
    status: AgentStatus


class UsageReported(_Event):
    """Tokens and calls so far, after a model turn."""

    kind: Literal["usage"] = "usage"
    usage: Usage


class EventsMissed(_Event):
    """Events the reader asked for are gone: read on from ``first_available``.

    A run carries only its latest events into the next run at continue-as-new
    (``CARRIED_EVENTS``), so a reader that far behind, or resuming from an offset that
    old, cannot have the events before the oldest one carried. It gets this event in
    their place, never a silent jump. Its ``offset`` is the last one missed: resuming
    after it reads on from the first event still available.

    Added in 0.8.0.
    """

    kind: Literal["gap"] = "gap"
    first_missing: int
    """The first offset the reader wanted and cannot have."""
    first_available: int
    """The first offset the stream still has (the reader's next event)."""


AgentEvent = Annotated[
    RunStarted
    | RunFinished
    | TurnStarted
    | TurnFinished
    | TextDelta
    | TextReset
    | MessageCompleted
    | ToolCallScheduled
    | ToolCallFinished
    | ApprovalRequested
    | ApprovalDecided
    | ApprovalExpired
    | ApprovalVoted
    | ApprovalEscalated
    | NotificationFailed
    | CompactionDone
    | ContinuedAsNew
    | StatusChanged
    | UsageReported
    | EventsMissed,
    Field(discriminator="kind"),
]
"""Any event of an agent run; ``event.kind`` tells which."""

_ADAPTER: TypeAdapter[AgentEvent] = TypeAdapter(AgentEvent)


def parse_event(data: Any, *, offset: int | None = None) -> AgentEvent:
    """An event from its JSON form, with its stream ``offset`` set when given."""
    event = _ADAPTER.validate_python(data)
    return event.model_copy(update={"offset": offset}) if offset is not None else event


class TextAssembler:
    """Rebuild each message's text from its deltas, as the final message will read.

    Deltas of an attempt that a ``TextReset`` superseded are dropped, so a retried
    model call never shows its text twice.
    """

    def __init__(self) -> None:
        self._text: dict[str, str] = {}
        self._attempt: dict[str, int] = {}

    def add(self, event: AgentEvent) -> str | None:
        """Take one event; returns the message's text so far when the event changed it."""
        if not isinstance(event, TextDelta | TextReset) or event.message_id is None:
            return None
        key = event.message_id
        if event.attempt < self._attempt.get(key, 0):
            return None  # a late delta of a superseded attempt
        if isinstance(event, TextReset) or event.attempt > self._attempt.get(key, 0):
            self._text[key] = ""
            self._attempt[key] = event.attempt
        if isinstance(event, TextDelta):
            self._text[key] += event.text
        return self._text[key]

    def text(self, message_id: str) -> str:
        """The text of ``message_id`` so far."""
        return self._text.get(message_id, "")
