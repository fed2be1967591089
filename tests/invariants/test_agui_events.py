"""Invariant: whatever the agent's events, the AG-UI stream the gateway writes is well formed.

The translator of ``gateway/_agui.py`` is pure (agent events in, AG-UI events out), so
Hypothesis drives it directly with replies of any shape: text streamed in pieces or
not at all, model calls retried mid-message (``TextReset``), tool calls with and without
results, messages cut off before they completed, and an end with or without a pending
approval. Every event must parse as ``ag-ui-protocol``'s own type and the stream must
keep AG-UI 1.0's rules: it opens with ``RUN_STARTED`` and closes with ``RUN_FINISHED``;
a message's content comes between its start and its end, never empty; a tool call opens
once, its arguments and end follow its start, its result its end; everything opened is
closed before ``RUN_FINISHED``. Without retries, a message's content is its final text;
with them, a completed message's content ends with its final text, and no content grows
past twice what the attempts wrote.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from ag_ui.core import Event, EventType
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from smyth_temporal.gateway._agui import _End, _Events
from smyth_temporal.types.agent import AgentState
from smyth_temporal.types.approvals import ApprovalRequest
from smyth_temporal.types.events import (
    AgentEvent,
    MessageCompleted,
    TextDelta,
    TextReset,
    ToolCallFinished,
)
from smyth_temporal.types.messages import Message, ToolCall

EVENTS: TypeAdapter[Any] = TypeAdapter(Event)
WHEN = datetime(2026, 11, 26, tzinfo=UTC)

pieces = st.lists(st.text(min_size=0, max_size=6), max_size=5)


@st.composite
def message(draw: st.DrawFn, number: int) -> tuple[list[AgentEvent], list[str], bool]:
    """A message's events, the text of each attempt, and whether it completed."""
    message_id = f"m{number}"
    events: list[AgentEvent] = []
    written: list[str] = []
    for attempt in range(1, draw(st.integers(1, 3)) + 1):
        if attempt > 1:
            events.append(TextReset(message_id=message_id, attempt=attempt))
        parts = draw(pieces) if draw(st.booleans()) else []
        events += [TextDelta(message_id=message_id, text=p, attempt=attempt) for p in parts]
        written.append("".join(parts))
    completed = draw(st.booleans())  # the model's final message; else cut off (an interrupt)
    if completed:
        calls = [
            ToolCall(id=f"call_{number}_{i}", name="sell", arguments=json.dumps({"n": i}))
            for i in range(draw(st.integers(0, 2)))
        ]
        final = Message(role="assistant", content=written[-1], tool_calls=calls)
        events.append(MessageCompleted(message_id=message_id, message=final))
        for call in calls:
            if draw(st.booleans()):
                events.append(ToolCallFinished(call_id=call.id, name=call.name, content="ok"))
    return events, written, completed


def state(pending: bool) -> AgentState:
    approvals = []
    if pending:
        approvals.append(
            ApprovalRequest(
                id="apr-1-call_0_0",
                tool="sell",
                call_id="call_0_0",
                step=1,
                arguments={"n": 0},
                arguments_sha256="0" * 64,
                requested_at=WHEN,
                deadline=WHEN,
            )
        )
    return AgentState(
        agent="Operator",
        workflow_id="Operator-session-acme-t",
        run_id="r",
        status="awaiting_approval" if pending else "idle",
        step=1,
        max_steps=10,
        tenant="acme",
        approvals=approvals,
    )


@settings(max_examples=settings.default.max_examples * 5)
@given(st.data(), st.integers(0, 3), st.booleans())
def test_the_agui_stream_is_well_formed_for_any_reply(
    data: st.DataObject, messages: int, pending: bool
) -> None:
    drawn = [data.draw(message(n)) for n in range(messages)]
    translator = _Events("thread", "run")
    stream = b"".join(translator.render(e) for events, _, _ in drawn for e in events)
    stream += translator.render(_End(state(pending), after=7))
    frames = stream.decode().split("\n\n")
    assert frames[-1] == ""
    events = [EVENTS.validate_json(frame.removeprefix("data: ")) for frame in frames[:-1]]

    assert events[0].type == EventType.RUN_STARTED
    assert events[-1].type == EventType.RUN_FINISHED
    assert [e.type for e in events].count(EventType.RUN_FINISHED) == 1
    outcome = events[-1].outcome
    assert outcome.type == ("interrupt" if pending else "success")
    opened: set[str] = set()
    closed: set[str] = set()
    text: dict[str, str] = {}
    calls: dict[str, str] = {}  # call id: "open" / "ended" / "answered"
    for event in events[1:-1]:
        kind = event.type
        if kind == EventType.TEXT_MESSAGE_START:
            assert event.message_id not in opened | closed
            opened.add(event.message_id)
            text[event.message_id] = ""
        elif kind == EventType.TEXT_MESSAGE_CONTENT:
            assert event.message_id in opened and event.delta
            text[event.message_id] += event.delta
        elif kind == EventType.TEXT_MESSAGE_END:
            assert event.message_id in opened
            opened.remove(event.message_id)
            closed.add(event.message_id)
        elif kind == EventType.TOOL_CALL_START:
            assert event.tool_call_id not in calls
            calls[event.tool_call_id] = "open"
        elif kind == EventType.TOOL_CALL_ARGS:
            assert calls.get(event.tool_call_id) == "open"
        elif kind == EventType.TOOL_CALL_END:
            assert calls.get(event.tool_call_id) == "open"
            calls[event.tool_call_id] = "ended"
        elif kind == EventType.TOOL_CALL_RESULT:
            assert calls.get(event.tool_call_id) == "ended"
            calls[event.tool_call_id] = "answered"
    assert not opened, f"messages left open at RUN_FINISHED: {opened}"
    assert "open" not in calls.values()
    for number, (_, attempts, completed) in enumerate(drawn):
        shown = text.get(f"m{number}", "")
        if len(attempts) == 1:
            assert shown == attempts[0]
        # AG-UI cannot take text back: a retry that wrote something else goes on after a
        # line break; the text shown ends with the message's final text once it is done,
        # and never grows past twice what the attempts wrote.
        assert len(shown) <= 2 * sum(len(a) + 1 for a in attempts)
        if completed and attempts[-1]:
            assert shown.endswith(attempts[-1])


def test_a_retry_that_wrote_less_than_was_shown_ends_with_the_final_text() -> None:
    # Found by the search above (ci profile): "01" shown, then a retry wrote only "0".
    translator = _Events("thread", "run")
    events: list[AgentEvent] = [
        TextDelta(message_id="m0", text="0"),
        TextDelta(message_id="m0", text="1"),
        TextReset(message_id="m0", attempt=2),
        TextDelta(message_id="m0", text="0", attempt=2),
        MessageCompleted(message_id="m0", message=Message(role="assistant", content="0")),
    ]
    stream = b"".join(translator.render(e) for e in events).decode()
    parsed = [EVENTS.validate_json(f.removeprefix("data: ")) for f in stream.split("\n\n")[:-1]]
    shown = "".join(e.delta for e in parsed if e.type == EventType.TEXT_MESSAGE_CONTENT)
    assert shown == "01\n0"
