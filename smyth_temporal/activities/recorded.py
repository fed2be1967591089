"""Recorded model turns: what a run asked its model and what the model answered.

A fork started with ``replay_model_turns`` names its parent's run in the
``ModelRequest.replay_from`` of every turn and compaction summary. The model activity
looks the request up by ``turn_key`` among the calls that run (and the runs it
continued as new into) recorded, and answers with the recorded response when it finds
one: the model is called only from the first turn whose conversation differs from the
parent's. A call the parent's first model failed as overloaded, answered by a fallback
model (``AgentConfig.fallback_models``), is found by the first model's request too.

Nothing is copied to make that possible: the turns are read from the parent's own
history, through the worker's client and data converter, so encrypted payloads and
payloads kept in the payload store decode as they do for the run itself (a worker
without the parent's key reads nothing and pays for the call). The replayed response
is the fork's activity result, encoded like any other. A run of another tenant than
the request's is never read from.

Added in 0.10.0.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Collection
from dataclasses import dataclass, field

import structlog
from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client, WorkflowHistory

from smyth_temporal.types.agent import AgentInput
from smyth_temporal.types.messages import Usage
from smyth_temporal.types.model import (
    MODEL_ACTIVITY,
    ModelRequest,
    ModelResponse,
    RecordedRun,
    turn_key,
)

__all__ = ["RecordedTurns", "next_run", "replayed", "turns_of"]

log = structlog.get_logger("smyth_temporal.model")

_SCHEDULED = EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
_COMPLETED = EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
_FAILED = EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED
_CONTINUED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW
_CLOSED = {
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
    _CONTINUED,
}

_YIELD_EVERY = 8
"""Requests decoded between two yields to the event loop."""

REPLAYED = ("turn", "summary")
"""The model calls a fork replays: its turns, and the summaries of its compactions (a
summary written anew would differ, and every later turn with it)."""

RUNS_KEPT = 16
"""Recorded runs a worker keeps decoded (the least recently used one goes first)."""


async def turns_of(
    client: Client,
    history: WorkflowHistory,
    *,
    after_step: int | None = None,
    purposes: Collection[str] = ("turn",),
) -> list[tuple[ModelRequest, ModelResponse]]:
    """The completed model calls of one run, in order, decoded by ``client``.

    Only the calls of ``purposes`` (default: the agent's turns). With ``after_step``,
    only those after it: requests are decoded newest first and the reading stops at the
    first turn at or before it (a run schedules its turns in step order), so a fork near
    the end of a long run decodes a few requests, not all.
    """
    calls = await _answered_calls(client, history, after_step=after_step, purposes=purposes)
    return [(asked[-1], response) for asked, response in calls]


async def _answered_calls(
    client: Client,
    history: WorkflowHistory,
    *,
    after_step: int | None,
    purposes: Collection[str],
) -> list[tuple[list[ModelRequest], ModelResponse]]:
    """``turns_of``, each answer with every request of its fallback chain, first model first.

    A call the first model failed as overloaded moved to a fallback model, whose request
    differs only in its model: a fork asks the first model again, so the answer must be
    found by the first model's request too. Only a failed call whose request said it may
    move on (``overloaded_after``), scheduled just before the next model's request of the
    same question, is taken as part of the chain.
    """
    scheduled: list[HistoryEvent] = []
    results: dict[int, list[Payload]] = {}
    failed: set[int] = set()
    for event in history.events:
        if event.event_type == _SCHEDULED:
            if event.activity_task_scheduled_event_attributes.activity_type.name == MODEL_ACTIVITY:
                scheduled.append(event)
        elif event.event_type == _COMPLETED:
            completed = event.activity_task_completed_event_attributes
            results[completed.scheduled_event_id] = list(completed.result.payloads)
        elif event.event_type == _FAILED:
            failed.add(event.activity_task_failed_event_attributes.scheduled_event_id)
    converter = client.data_converter
    calls: list[tuple[list[ModelRequest], ModelResponse]] = []
    later: list[ModelRequest] | None = None  # the chain of the call scheduled just after
    for count, event in enumerate(reversed(scheduled)):
        if count % _YIELD_EVERY == _YIELD_EVERY - 1:
            # Decoding may not suspend at all: let the activity's heartbeats through.
            await asyncio.sleep(0)
        payloads = list(event.activity_task_scheduled_event_attributes.input.payloads)
        [request] = await converter.decode(payloads, [ModelRequest])
        if after_step is not None and request.step <= after_step:
            if request.purpose == "turn":
                break
            later = None
            continue  # a summary or review of a step the fork already holds
        if request.purpose not in purposes:
            later = None
            continue
        result = results.get(event.event_id)
        if result is not None:
            [response] = await converter.decode(result, [ModelResponse])
            later = [request]
            calls.append((later, response))
        elif event.event_id in failed and later is not None and _moved_on(request, later[0]):
            later.insert(0, request)
        else:
            later = None
    calls.reverse()
    return calls


def _moved_on(earlier: ModelRequest, later: ModelRequest) -> bool:
    """Whether ``later`` is ``earlier`` moved to the next fallback model: the same question."""
    if earlier.overloaded_after is None or earlier.model == later.model:
        return False
    return turn_key(earlier.model_copy(update={"model": later.model})) == turn_key(later)


def next_run(history: WorkflowHistory) -> str | None:
    """The run ``history``'s run continued as new into, if it did."""
    last = history.events[-1] if history.events else None
    if last is None or last.event_type != _CONTINUED:
        return None
    return last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id


def replayed(recorded: ModelResponse) -> ModelResponse:
    """``recorded`` as the answer to a fork's turn: marked replayed, nothing paid."""
    return recorded.model_copy(update={"usage": Usage(), "replayed": True})


@dataclass
class _Recording:
    """One parent's turns by ``turn_key``, from its run on to the end of its chain."""

    tenant: str
    responses: dict[str, ModelResponse] = field(default_factory=dict)
    closed: bool = True
    """Whether the chain had ended when read (a running parent may record more turns)."""
    last_step: int = 0
    """The last step the parent had taken when read (its fork step if none since)."""


class RecordedTurns:
    """A worker's reader of parents' recorded turns, with the last few kept decoded.

    Args:
        runs: How many recorded runs to keep decoded (default ``RUNS_KEPT``).

    Added in 0.10.0.
    """

    def __init__(self, runs: int = RUNS_KEPT) -> None:
        self._runs = runs
        self._kept: OrderedDict[tuple[str, str, int], _Recording] = OrderedDict()

    async def answer(
        self, client: Client, request: ModelRequest, *, asker: str = ""
    ) -> ModelResponse | None:
        """The response the parent recorded for a request equal to ``request``, if any.

        ``asker`` is the fork's workflow id: a compaction summary's transcript labels
        each message with the run's workflow id, so the fork's summary request is
        compared as the parent would have made it, with the parent's id in the labels.

        A parent still running when it was read is read again for a request of a step
        it had not taken then (it may have since); a miss at a step it had taken is a
        divergence, which no later reading changes. ``None`` when the parent's run
        is gone, of another tenant, or recorded no such request.
        """
        source = request.replay_from
        if source is None:
            return None
        key = turn_key(_as_parents(request, asker, source.workflow_id))
        kept = (source.workflow_id, source.run_id, source.after_step)
        recording = self._kept.get(kept)
        if recording is None or (
            not recording.closed
            and key not in recording.responses
            and request.step > recording.last_step
        ):
            recording = await self._read(client, source)
        self._kept[kept] = recording
        self._kept.move_to_end(kept)
        while len(self._kept) > self._runs:
            self._kept.popitem(last=False)
        if recording.tenant != request.tenant:
            # The input named another tenant's run: its answers are not this run's to read.
            log.warning(
                "model.replay_refused",
                parent=source.workflow_id,
                tenant=request.tenant,
                reason="another tenant's run",
            )
            return None
        return recording.responses.get(key)

    async def _read(self, client: Client, source: RecordedRun) -> _Recording:
        """The turns of ``source``'s run and of every run it continued as new into."""
        run_id: str | None = source.run_id
        recording: _Recording | None = None
        while run_id is not None:
            handle = client.get_workflow_handle(source.workflow_id, run_id=run_id)
            history = await handle.fetch_history()
            if recording is None:
                tenant = await _tenant(client, history)
                recording = _Recording(tenant=tenant, last_step=source.after_step)
            replayable = await _answered_calls(
                client, history, after_step=source.after_step, purposes=REPLAYED
            )
            for asked, response in replayable:
                # A fallback's answer is found by the first model's request too: the
                # fork asks that model first, as its parent did.
                for request in asked:
                    recording.responses.setdefault(turn_key(request), response)
                recording.last_step = max(recording.last_step, asked[-1].step)
            last = history.events[-1].event_type if history.events else None
            recording.closed = last in _CLOSED
            run_id = next_run(history)
        assert recording is not None
        log.info(
            "model.replay_read",
            parent=source.workflow_id,
            run_id=source.run_id,
            turns=len(recording.responses),
            closed=recording.closed,
        )
        return recording


def _as_parents(request: ModelRequest, asker: str, parent: str) -> ModelRequest:
    """``request`` as the parent would have made it: a summary's labels name the parent."""
    if request.purpose != "summary" or not asker or asker == parent:
        return request
    messages = [
        m.model_copy(update={"content": m.content.replace(asker, parent)}) if m.content else m
        for m in request.messages
    ]
    return request.model_copy(update={"messages": messages})


async def _tenant(client: Client, history: WorkflowHistory) -> str:
    """The tenant of the agent run ``history`` is of ("" when it is no agent's)."""
    started = history.events[0].workflow_execution_started_event_attributes
    payloads = list(started.input.payloads)
    if not payloads:
        return ""
    [value] = await client.data_converter.decode(payloads[:1], [AgentInput])
    return value.tenant if isinstance(value, AgentInput) else ""
