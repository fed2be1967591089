"""What a rewind reads from history, as pure functions: which calls it lists, where it resets."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent

from smyth_temporal.clients._rewind import _Call, _equivalent_points, _rewound_call
from smyth_temporal.types.approvals import arguments_sha256
from smyth_temporal.types.rewind import REWIND_SIGNAL

_E = EventType
INVOCATION = {
    "tool": "send_email",
    "call_id": "call_4_0",
    "arguments": {"to": "ceo"},
    "idempotency_key": "wf/run/4/call_4_0",
    "step": 4,
}


def side_effect(tool: str) -> str | None:
    return {"send_email": "side_effect", "get_quote": "read_only"}.get(tool)


def call(closed: int = 0, activity_id: str = "7", **update: object) -> _Call:
    return _Call(activity_id, {**INVOCATION, **update}, closed=closed, result={"content": "sent"})


def test_a_completed_side_effect_call_is_listed_with_its_result_key_and_argument_hash() -> None:
    listed = _rewound_call(call(_E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED), side_effect, set())
    assert listed is not None
    assert (listed.outcome, listed.result, listed.step) == ("completed", "sent", 4)
    assert listed.idempotency_key == "wf/run/4/call_4_0"
    assert listed.arguments_sha256 == arguments_sha256({"to": "ceo"})


def test_a_call_that_may_have_acted_without_a_result_has_an_unknown_outcome() -> None:
    for closed in (
        _E.EVENT_TYPE_ACTIVITY_TASK_FAILED,
        _E.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT,
        _E.EVENT_TYPE_ACTIVITY_TASK_CANCELED,
    ):
        listed = _rewound_call(call(closed), side_effect, set())
        assert listed is not None and (listed.outcome, listed.result) == ("unknown", None)
    running = _rewound_call(call(activity_id="9"), side_effect, {"9"})  # started, still open
    assert running is not None and running.outcome == "unknown"


def test_a_call_never_started_or_safe_to_repeat_is_not_listed_and_an_unknown_tool_is() -> None:
    assert _rewound_call(call(activity_id="9"), side_effect, set()) is None  # never started
    quote = call(_E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, tool="get_quote")
    assert _rewound_call(quote, side_effect, set()) is None
    mcp = call(_E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, tool="crm.update")  # effect not known
    assert _rewound_call(mcp, side_effect, set()) is not None


def event(event_id: int, kind: int, signal: str = "") -> HistoryEvent:
    made = HistoryEvent(event_id=event_id, event_type=kind)
    if signal:
        made.workflow_execution_signaled_event_attributes.signal_name = signal
    return made


def history(*kinds: int | tuple[int, str]) -> list[HistoryEvent]:
    return [event(i, *(k if isinstance(k, tuple) else (k,))) for i, k in enumerate(kinds, start=1)]


def test_after_a_rewind_the_reset_point_falls_back_to_the_tasks_it_only_waited_in() -> None:
    # ... step N's tool result, a reset (its failed task), the task that waited for the
    # notice (a timer), the notice, the task that started step N+1 (event 14).
    events = history(
        _E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,  # 1: the run's first task
        _E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
        _E.EVENT_TYPE_ACTIVITY_TASK_STARTED,
        _E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,  # 4: step N's result
        _E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
        _E.EVENT_TYPE_WORKFLOW_TASK_STARTED,
        _E.EVENT_TYPE_WORKFLOW_TASK_FAILED,  # 7: the earlier reset
        _E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
        _E.EVENT_TYPE_WORKFLOW_TASK_STARTED,
        _E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,  # 10: waited
        _E.EVENT_TYPE_TIMER_STARTED,
        (_E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, REWIND_SIGNAL),
        _E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
        _E.EVENT_TYPE_WORKFLOW_TASK_STARTED,
        _E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,  # 15: started step N+1
    )
    assert _equivalent_points(events, 15, first_task=1) == [10, 7]


_WORK = st.sampled_from(
    [
        _E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
        _E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
        _E.EVENT_TYPE_MARKER_RECORDED,
        _E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED,
        _E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
    ]
)
_ANY = st.one_of(
    _WORK,
    st.sampled_from(
        [
            _E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
            _E.EVENT_TYPE_WORKFLOW_TASK_STARTED,
            _E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
            _E.EVENT_TYPE_WORKFLOW_TASK_FAILED,
            _E.EVENT_TYPE_TIMER_STARTED,
            _E.EVENT_TYPE_TIMER_CANCELED,
        ]
    ),
)


@given(st.lists(_ANY, min_size=1, max_size=30))
def test_an_equivalent_reset_point_never_lies_before_any_work_of_the_run(kinds: list[int]) -> None:
    # Invariant: between a fallback point and the target there is no activity, marker
    # (other than a patch), update or other signal: resetting there redoes no step's work.
    events = history(*kinds, _E.EVENT_TYPE_WORKFLOW_TASK_STARTED)
    target = len(events) + 1
    for point in _equivalent_points(events, target, first_task=None):
        between = [e.event_type for e in events if point < e.event_id < target]
        assert not set(between) & {
            _E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
            _E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
            _E.EVENT_TYPE_MARKER_RECORDED,
            _E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED,
            _E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
        }
