"""A replay failure in words: which step, what history has, what the code does now.

Temporal's core reports a nondeterministic change in its own terms ("Timer machine
does not handle this event: HistoryEvent(id: 5, ActivityTaskScheduled)").
``describe_replay_failure`` reads the event it names back from the history and says it
as an agent developer thinks of it: "step 1: history has activity
smyth.model.complete scheduled, the code now starts a timer".

Added in 0.5.0.
"""

from __future__ import annotations

import re

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowHistory

from smyth_temporal.types.model import MODEL_ACTIVITY

__all__ = ["describe_replay_failure"]

_EVENT = re.compile(r"HistoryEvent\(id: (\d+), (\w+)\)")
_MACHINE = re.compile(r"([A-Z][\w ]*?) machine does not handle this event")
_ACTIVITY_TYPE = re.compile(
    r"Activity type of scheduled event '([^']*)' does not match activity type of activity "
    r"command '([^']*)'"
)
_INNER = re.compile(r'Failure \{ message: "((?:[^"\\]|\\.)*)"')
_PREFIX = re.compile(r"^(\[TMPRL\d+\] )?(Nondeterminism error: )?")

# What the code does now, by the name core gives the command's state machine.
_COMMANDS = {
    "Activity": "schedules an activity",
    "Local activity": "runs a local activity",
    "Timer": "starts a timer",
    "Child workflow": "starts a child workflow",
    "Complete workflow": "completes the run",
    "Fail workflow": "fails the run",
    "Cancel workflow": "cancels the run",
    "Continue as new workflow": "continues as new",
    "Signal external workflow": "signals another workflow",
    "Cancel external workflow": "cancels another workflow",
    "Upsert search attributes": "upserts search attributes",
    "Modify workflow properties": "updates its memo",
    "Patch": "checks a patch",
    "Update": "handles an update",
    "Nexus operation": "starts a Nexus operation",
}


def describe_replay_failure(error: BaseException, history: WorkflowHistory) -> str:
    """Say where and how replaying ``history`` with today's code diverged.

    Args:
        error: The replay failure (a ``NondeterminismError`` or another error).
        history: The history that failed to replay.

    Returns:
        One line, e.g. "step 3: history has activity smyth.tool.get_quote scheduled,
        the code now starts a timer"; core's own words when they cannot be read.

    Added in 0.5.0.
    """
    message = str(error).strip()
    inner = _INNER.search(message)  # core wraps it: ... Failure { message: "...", ... }
    if inner is not None:
        message = inner.group(1).replace(r"\"", '"')
    events = {event.event_id: event for event in history.events}
    mismatch = _ACTIVITY_TYPE.search(message)
    if mismatch is not None:
        recorded, now = mismatch.groups()
        said = f"history has activity {recorded} scheduled, the code now schedules activity {now}"
        # Core names no event here; when history scheduled that activity once, it is it.
        candidates = [e.event_id for e in history.events if _scheduled(e) == recorded]
        return f"{_step(history, candidates[0])}: {said}" if len(candidates) == 1 else said
    found = _EVENT.search(message)
    if found is None:
        return _PREFIX.sub("", message) or type(error).__name__
    event_id = int(found.group(1))
    event = events.get(event_id)
    had = _describe_event(event) if event is not None else found.group(2)
    machine = _MACHINE.search(message)
    if machine is not None:
        command = machine.group(1).strip()
        now = "the code now " + _COMMANDS.get(command, f"gives a {command.lower()} command")
    elif "No command scheduled" in message:
        now = "the code now does nothing there"
    else:
        now = _PREFIX.sub("", message)
    return f"{_step(history, event_id)}: history has {had}, {now}"


def _scheduled(event: HistoryEvent) -> str | None:
    """The activity type an ``ActivityTaskScheduled`` event names (else ``None``)."""
    if event.event_type != EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
        return None
    return event.activity_task_scheduled_event_attributes.activity_type.name


def _step(history: WorkflowHistory, event_id: int) -> str:
    """The agent step an event belongs to: model calls scheduled up to it."""
    steps = sum(
        1
        for event in history.events
        if event.event_id <= event_id and _scheduled(event) == MODEL_ACTIVITY
    )
    return f"step {steps}" if steps else "before the first step"


def _describe_event(event: HistoryEvent) -> str:
    """An event in words: "activity smyth.tool.get_quote scheduled", "a timer started"."""
    kind = event.event_type
    if kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
        name = event.activity_task_scheduled_event_attributes.activity_type.name
        return f"activity {name} scheduled"
    if kind == EventType.EVENT_TYPE_TIMER_STARTED:
        return "a timer started"
    if kind == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
        name = event.start_child_workflow_execution_initiated_event_attributes.workflow_type.name
        return f"child workflow {name} started"
    if kind == EventType.EVENT_TYPE_MARKER_RECORDED:
        return f"a {event.marker_recorded_event_attributes.marker_name} marker"
    if kind == EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
        return "search attributes upserted"
    if kind == EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED:
        return "its memo updated"
    name = EventType.Name(kind).removeprefix("EVENT_TYPE_").lower().replace("_", " ")
    return f"event {event.event_id} ({name})"
