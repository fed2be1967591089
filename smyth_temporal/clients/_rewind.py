"""Rewind an agent run to a step: the same workflow id goes on from right after it.

How: Temporal's reset. The run's history is read (no replay: a reset needs an event id,
not the state) for the workflow task that started the model turn of step N+1, the
task that ended step N; the reset takes the run over there, and the history of the
abandoned run stays readable (``temporal workflow show --run-id``). The new run is
signalled a ``RewindNotice``: in the same request, as a post-reset operation, where the
server supports it (then the notice is in its history before its first new workflow
task); else right after the reset (the dev server of temporalio 1.35 refuses signals
as post-reset operations). Either way the rewound run takes the notice before its next
model turn: it waits for it (``agent.rewind``).

What the notice carries, read from the abandoned part of the history:

- ``side_effects``: each tool call after step N that a reset cannot undo: completed
  (its result is recorded) or with an unknown outcome (failed, timed out, or still
  running past its first attempt: it may have acted). A tool's effect comes from the
  agent's class; a tool the class does not list (an MCP tool, a tool the ``tools``
  hook added, or no class imported) may have acted, so it is listed too; then what
  the notices of earlier rewinds that the run took after step N listed (abandoned with
  the rest, yet their side effects happened; a notice taken before step N the run
  carries itself, ``agent.rewind.carry_unreconciled``);
- ``voided_approvals``: the approval requests decided after step N (the decisions
  are not applied again);
- ``memory_runs``: the runs whose memories written after step N the rewound run
  removes before it recalls anything.

Reapplied: nothing. Signals and updates after the reset point (approval decisions,
session messages, interrupts) belonged to the steps that were abandoned, so the reset
excludes them (``reset_reapply_exclude_types``).

Refused, with nothing reset: a step the run has not taken a step after (its last
step, or beyond), a step taken in an earlier run of a continue-as-new chain (a reset
cannot cross runs: fork there instead), a run handling an update (a message or a
decision) right now, whose caller would lose its answer, and, on a server that cannot
signal in the reset request, the step a run started at (step 0, or where it continued
as new): the run's constructor runs after Temporal reseeds it there, so it cannot see
that reset and would not wait for the notice.

Added in 0.10.0.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog
from pydantic import ValidationError
from temporalio.api.common.v1 import Payload, Payloads, WorkflowExecution
from temporalio.api.enums.v1 import (
    EventType,
    PendingActivityState,
    ResetReapplyExcludeType,
)
from temporalio.api.history.v1 import HistoryEvent
from temporalio.api.workflow.v1 import PostResetOperation
from temporalio.api.workflowservice.v1 import (
    ResetWorkflowExecutionRequest,
    ResetWorkflowExecutionResponse,
)
from temporalio.client import Client, WorkflowHistory
from temporalio.service import RPCError, RPCStatusCode

from smyth_temporal.agent.config import config_of
from smyth_temporal.agent.workflow import AgentWorkflow
from smyth_temporal.clients._fork import _history, _started, agent_class
from smyth_temporal.clients._runs import RunsClient
from smyth_temporal.exceptions import RewindError, UnknownAgentError
from smyth_temporal.types.approvals import APPROVAL_SIGNAL, APPROVAL_UPDATE, arguments_sha256
from smyth_temporal.types.memory import MEMORY_ACTIVITY_REMEMBER, MEMORY_ACTIVITY_SUPERSEDE
from smyth_temporal.types.model import MODEL_ACTIVITY
from smyth_temporal.types.rewind import REWIND_SIGNAL, RewindNotice, RewoundCall
from smyth_temporal.types.tools import ToolEffect

__all__ = ["RewindClient", "RewindPlan", "RewindResult", "effects_of", "plan_rewind", "reset_to"]

log = structlog.get_logger("smyth_temporal.rewind")

_E = EventType
_WRITES = (MEMORY_ACTIVITY_REMEMBER, MEMORY_ACTIVITY_SUPERSEDE)
_WAITING = {
    _E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
    _E.EVENT_TYPE_WORKFLOW_TASK_STARTED,
    _E.EVENT_TYPE_WORKFLOW_TASK_FAILED,
    _E.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT,
    _E.EVENT_TYPE_TIMER_STARTED,
    _E.EVENT_TYPE_TIMER_FIRED,
    _E.EVENT_TYPE_TIMER_CANCELED,
    _E.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
    _E.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED,
}
"""Events of a run that only waits (for a rewind's notice, say): no step's work."""
_TASK_ENDS = {
    _E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
    _E.EVENT_TYPE_WORKFLOW_TASK_FAILED,
    _E.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT,
}
_PATCH_MARKER = "core_patch"
_TURN_SUMMARY = re.compile(r"model turn (\d+)(?: \(fallback .*\))?$")
"""How ``agent.loop`` sums up a model turn's call in history."""
_SUMMARY_CALL = "summary "
_UNKNOWN_CLOSE = (
    _E.EVENT_TYPE_ACTIVITY_TASK_FAILED,
    _E.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT,
    _E.EVENT_TYPE_ACTIVITY_TASK_CANCELED,
)

EffectOf = Callable[[str], ToolEffect | None]
"""A tool's effect by name (``None``: not known here)."""


def effects_of(name: str, agent: type[AgentWorkflow] | None) -> EffectOf:
    """The effects of the tools of agent ``name``'s class (``agent``, else the imported one)."""
    try:
        cls = agent or agent_class(name)
    except UnknownAgentError:
        return lambda tool: None
    effects = {spec.name: spec.effect for spec in config_of(cls).tools}
    return effects.get


@dataclass(frozen=True)
class RewindResult:
    """What a rewind did.

    Added in 0.10.0.
    """

    workflow_id: str
    """The rewound run's workflow id (the same as before)."""
    run_id: str
    """The new run, which goes on from step ``to_step + 1``."""
    abandoned_run_id: str
    """The run whose steps after ``to_step`` were abandoned (its history stays)."""
    to_step: int
    """The step the run went back to."""
    reset_event_id: int
    """The event of the abandoned run the reset took it over at (a workflow task)."""
    side_effects: tuple[RewoundCall, ...]
    """Tool calls after ``to_step`` that the reset could not undo."""
    voided_approvals: tuple[str, ...]
    """Approval requests decided after ``to_step``: void in the new run."""
    memory_runs: tuple[str, ...]
    """Runs whose memories written after ``to_step`` the new run removes."""
    seconds: float
    """How long the rewind took (reading the history and the reset)."""


@dataclass
class RewindPlan:
    """Where a run is reset, and what its notice says; read from the run's history."""

    workflow_id: str
    run_id: str
    to_step: int
    reset_event_id: int
    first_task: bool
    """The reset point is the run's first workflow task (the step it started at)."""
    also: list[int] = field(default_factory=list)
    """Earlier workflow tasks the run only waited in since step N (equivalent points)."""
    side_effects: list[RewoundCall] = field(default_factory=list)
    voided_approvals: list[str] = field(default_factory=list)
    memory_runs: list[str] = field(default_factory=list)


@dataclass
class _Call:
    activity_id: str
    invocation: dict[str, Any]
    closed: int = 0
    result: Any = None


class _Reader:
    """Reads one run's history for a rewind to ``step``."""

    def __init__(self, client: Client, history: WorkflowHistory, step: int) -> None:
        self._client = client
        self._history = history
        self._step = step
        self.reset_event_id: int | None = None
        self.first_task_id: int | None = None
        self.steps_taken = 0
        self.calls: dict[int, _Call] = {}
        self.voided: list[str] = []
        self.memory_runs: list[str] = []
        self.open_updates: dict[str, str] = {}
        self.owed: list[RewoundCall] = []
        """The side effects listed by earlier rewinds' notices after the reset point."""

    async def _value(self, payloads: Sequence[Payload]) -> Any:
        if not payloads:
            return None
        try:
            return (await self._client.data_converter.decode([payloads[0]]))[0]
        except Exception as exc:  # a payload this client cannot read: leave it out
            log.info("rewind.payload_unreadable", error=type(exc).__name__)
            return None

    async def read(self) -> None:
        for event in self._history.events:
            kind = event.event_type
            if kind == _E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED and self.first_task_id is None:
                self.first_task_id = event.event_id
            elif kind == _E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
                await self._scheduled(event)
            elif kind == _E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
                attributes = event.activity_task_completed_event_attributes
                call = self.calls.get(attributes.scheduled_event_id)
                if call is not None:
                    call.closed = kind
                    call.result = await self._value(attributes.result.payloads)
            elif kind in _UNKNOWN_CLOSE:
                attributes = getattr(event, event.WhichOneof("attributes") or "")
                call = self.calls.get(attributes.scheduled_event_id)
                if call is not None:
                    call.closed = kind
            elif kind == _E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
                accepted = event.workflow_execution_update_accepted_event_attributes
                name = accepted.accepted_request.input.name
                self.open_updates[accepted.protocol_instance_id] = name
                if name == APPROVAL_UPDATE and self._after(event):
                    args = accepted.accepted_request.input.args.payloads
                    self._void(await self._value(args))
            elif kind == _E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED:
                completed = event.workflow_execution_update_completed_event_attributes
                self.open_updates.pop(completed.meta.update_id, None)
            elif kind == _E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
                signaled = event.workflow_execution_signaled_event_attributes
                if signaled.signal_name == APPROVAL_SIGNAL and self._after(event):
                    self._void(await self._value(signaled.input.payloads))
                elif signaled.signal_name == REWIND_SIGNAL and self._after(event):
                    await self._owed(signaled.input.payloads)

    async def _owed(self, payloads: Sequence[Payload]) -> None:
        """Keep what an earlier rewind's notice listed: the run being abandoned took it.

        A notice taken before the reset point is carried by the run itself
        (``agent.rewind.carry_unreconciled``); one taken after it is abandoned with
        everything the run did with it, yet its side effects happened all the same.
        """
        value = await self._value(payloads)
        try:
            notice = RewindNotice.model_validate(value)
        except ValidationError:
            log.info("rewind.notice_unreadable")
            return
        self.owed[:0] = notice.side_effects  # the latest notice's first

    async def _turn(self, event: HistoryEvent) -> int | None:
        """The step of a model turn's call (``None``: another model call).

        From the call's summary (``model turn N``), small, when it has one: decoding every
        turn's request (the whole conversation) made a rewind of a 200-step run 8x the
        bare reset.
        """
        summary = event.user_metadata.summary
        text = await self._value([summary]) if summary.data else None
        if isinstance(text, str):
            if text.startswith(_SUMMARY_CALL):
                return None
            found = _TURN_SUMMARY.match(text)
            if found:
                return int(found.group(1))
        scheduled = event.activity_task_scheduled_event_attributes
        request = await self._value(scheduled.input.payloads)
        if not isinstance(request, dict) or request.get("purpose") != "turn":
            return None
        step = request.get("step")
        return step if isinstance(step, int) else None

    def _after(self, event: HistoryEvent) -> bool:
        return self.reset_event_id is not None and event.event_id > self.reset_event_id

    def _void(self, decision: Any) -> None:
        request_id = decision.get("request_id") if isinstance(decision, dict) else None
        if isinstance(request_id, str) and request_id not in self.voided:
            self.voided.append(request_id)

    async def _scheduled(self, event: HistoryEvent) -> None:
        scheduled = event.activity_task_scheduled_event_attributes
        name = scheduled.activity_type.name
        if name == MODEL_ACTIVITY:
            step = await self._turn(event)
            if step is not None:
                self.steps_taken = max(self.steps_taken, step)
                if step == self._step + 1 and self.reset_event_id is None:
                    # The task that started step N+1's turn ended step N.
                    self.reset_event_id = scheduled.workflow_task_completed_event_id
            return
        if not self._after(event):
            return
        if name in _WRITES:
            request = await self._value(scheduled.input.payloads)
            provenance = request.get("provenance") if isinstance(request, dict) else None
            run_id = provenance.get("run_id") if isinstance(provenance, dict) else None
            if run_id and run_id not in self.memory_runs:
                self.memory_runs.append(run_id)
        elif _is_tool(name):
            invocation = await self._value(scheduled.input.payloads)
            if isinstance(invocation, dict):
                self.calls[event.event_id] = _Call(scheduled.activity_id, invocation)


def _is_tool(activity: str) -> bool:
    if activity.startswith("smyth.mcp."):
        return not activity.endswith(".list_tools")
    return activity.startswith("smyth.tool.")


async def plan_rewind(
    client: Client, workflow_id: str, step: int, agent: type[AgentWorkflow] | None = None
) -> RewindPlan:
    """Where ``workflow_id``'s current run is reset to go back to ``step``, from its history.

    ``agent``: the agent's class, whose tools say which calls had side effects (default:
    the imported class of the run's type; without one every tool call may have had).

    Raises:
        AgentNotFoundError: No run has that workflow id.
        RewindError: The run cannot be rewound there (see the module's refusals).
    """
    if step < 0:
        raise RewindError(f"--to-step must be 0 or more, not {step}")
    history = await _history(client, workflow_id, None)
    name, input, _ = await _started(client, history)
    start = input.checkpoint.step if input.checkpoint is not None else 0
    if step < start:
        raise RewindError(
            f"step {step} of {workflow_id!r} was taken in an earlier run of its chain (this "
            f"run continued as new at step {start}); a reset cannot cross runs: rewind to "
            f"step {start} or later, or fork at step {step}"
        )
    reader = _Reader(client, history, step)
    await reader.read()
    if reader.reset_event_id is None:
        raise RewindError(
            f"{workflow_id!r} has taken {reader.steps_taken} steps; it cannot be rewound to "
            f"step {step} (a rewind goes back to before a step the run has started)"
        )
    if reader.open_updates:
        update_id, name = next(iter(reader.open_updates.items()))
        raise RewindError(
            f"{workflow_id!r} is handling update {name!r} ({update_id}) right now; rewind "
            "once it is answered"
        )
    plan = RewindPlan(
        also=_equivalent_points(history.events, reader.reset_event_id, reader.first_task_id),
        workflow_id=workflow_id,
        run_id=history.run_id,
        to_step=step,
        reset_event_id=reader.reset_event_id,
        first_task=reader.reset_event_id == reader.first_task_id,
        voided_approvals=reader.voided,
        memory_runs=reader.memory_runs,
    )
    effect_of = effects_of(name, agent)
    open_calls = [c for c in reader.calls.values() if not c.closed]
    started = await _started_activities(client, history, open_calls) if open_calls else set()
    for call in reader.calls.values():
        rewound = _rewound_call(call, effect_of, started)
        if rewound is not None:
            plan.side_effects.append(rewound)
    # After the run's own calls: a repeated call is matched against the latest effect.
    listed = {call.idempotency_key for call in plan.side_effects}
    for owed in reader.owed:
        if owed.idempotency_key not in listed:
            listed.add(owed.idempotency_key)
            plan.side_effects.append(owed)
    return plan


def _equivalent_points(
    events: Sequence[HistoryEvent], target: int, first_task: int | None
) -> list[int]:
    """The workflow tasks before ``target`` from which the run only waited until it.

    The server resets only to a task whose start ended a batch of events; one that a
    signal started while the task before it ran (a rewind's notice, sent after its
    reset) does not, nor one the server wrote with its completion (the task after a
    failed one, as after a reset). From these earlier tasks (their end: completed,
    failed or timed out) the run does the same: step N done, no turn N+1 started,
    nothing but waiting in between.
    """
    points: list[int] = []
    for event in reversed(events[: target - 1]):
        kind = event.event_type
        if kind in _TASK_ENDS:
            if event.event_id == first_task:
                break  # the constructor would not see the reset (see reset_to)
            points.append(event.event_id)
        elif kind == _E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
            if event.workflow_execution_signaled_event_attributes.signal_name != REWIND_SIGNAL:
                break
        elif kind == _E.EVENT_TYPE_MARKER_RECORDED:
            if event.marker_recorded_event_attributes.marker_name != _PATCH_MARKER:
                break
        elif kind not in _WAITING:
            break
    return points


async def _started_activities(
    client: Client, history: WorkflowHistory, calls: Sequence[_Call]
) -> set[str]:
    """The ids of ``calls`` that may have run: started, or past their first attempt."""
    handle = client.get_workflow_handle(history.workflow_id, run_id=history.run_id)
    description = await handle.describe()
    pending = {a.activity_id: a for a in description.raw_description.pending_activities}
    started: set[str] = set()
    for call in calls:
        activity = pending.get(call.activity_id)
        waiting = PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED
        # Not pending any more: it closed since the history was read, so it ran.
        if activity is None or activity.attempt > 1 or activity.state != waiting:
            started.add(call.activity_id)
    return started


def _rewound_call(call: _Call, effect_of: EffectOf, started: set[str]) -> RewoundCall | None:
    invocation = call.invocation
    tool = str(invocation.get("tool", ""))
    if effect_of(tool) in ("read_only", "idempotent"):
        return None  # repeating it is safe
    if call.closed == _E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
        outcome = "completed"
        result = call.result.get("content") if isinstance(call.result, dict) else call.result
    elif call.closed or call.activity_id in started:
        outcome, result = "unknown", None
    else:
        return None  # scheduled, never started: it cannot have acted
    arguments = invocation.get("arguments")
    return RewoundCall(
        step=max(1, int(invocation.get("step", 1))),
        call_id=str(invocation.get("call_id", "")),
        tool=tool,
        arguments_sha256=arguments_sha256(arguments if isinstance(arguments, dict) else {}),
        idempotency_key=str(invocation.get("idempotency_key", "")),
        outcome=outcome,
        result=result,
    )


async def reset_to(
    client: Client, plan: RewindPlan, notice: RewindNotice, *, identity: str, started: float
) -> RewindResult:
    """Reset the run to ``plan``'s event and signal the new run ``notice``.

    In one request where the server supports signals as post-reset operations; else the
    reset, then the signal (the run waits for it before its next model turn).
    ``started``: ``time.perf_counter()`` when the rewind began (for ``seconds``).
    """
    [payload] = await client.data_converter.encode([notice])
    signal = PostResetOperation.SignalWorkflow(
        signal_name=REWIND_SIGNAL, input=Payloads(payloads=[payload])
    )
    operation = PostResetOperation(signal_workflow=signal)
    try:
        response, point = await _reset(client, plan, notice, identity, operation)
        signalled = "with the reset"
    except RPCError as exc:
        if not _unsupported(exc):
            raise
        if plan.first_task:
            # The run's constructor runs after Temporal reseeds it there: it cannot see
            # that reset, so it would not wait for a notice sent after it.
            raise RewindError(
                f"step {plan.to_step} is where run {plan.run_id} of {plan.workflow_id!r} "
                "started, and this server cannot signal a reset run in the reset request: "
                f"rewind to a later step, or fork at step {plan.to_step}"
            ) from None
        # The server cannot signal as part of a reset: reset, then signal the new run.
        # The run waits for the notice before its next model turn (agent.rewind).
        response, point = await _reset(client, plan, notice, identity, None)
        handle = client.get_workflow_handle(plan.workflow_id, run_id=response.run_id)
        await handle.signal(REWIND_SIGNAL, notice)
        signalled = "after the reset"
    result = RewindResult(
        workflow_id=plan.workflow_id,
        run_id=response.run_id,
        abandoned_run_id=plan.run_id,
        to_step=plan.to_step,
        reset_event_id=point,
        side_effects=tuple(plan.side_effects),
        voided_approvals=tuple(plan.voided_approvals),
        memory_runs=tuple(plan.memory_runs),
        seconds=time.perf_counter() - started,
    )
    log.info(
        "rewind.reset",
        workflow_id=plan.workflow_id,
        abandoned_run_id=plan.run_id,
        run_id=response.run_id,
        to_step=plan.to_step,
        reset_event_id=point,
        side_effects=len(plan.side_effects),
        voided_approvals=len(plan.voided_approvals),
        seconds=round(result.seconds, 3),
        signalled=signalled,
    )
    return result


async def _reset(
    client: Client,
    plan: RewindPlan,
    notice: RewindNotice,
    identity: str,
    operation: PostResetOperation | None,
) -> tuple[ResetWorkflowExecutionResponse, int]:
    """Reset at ``plan``'s point, or an equivalent earlier one the server accepts."""
    points = [plan.reset_event_id, *plan.also]
    for point in points:
        request = _reset_request(client, plan, notice, identity, point)
        if operation is not None:
            request.post_reset_operations.append(operation)
        try:
            return await client.workflow_service.reset_workflow_execution(request), point
        except RPCError as exc:
            if not _off_boundary(exc):
                raise
            log.info("rewind.point_refused", workflow_id=plan.workflow_id, event_id=point)
    raise RewindError(
        f"the server cannot reset {plan.workflow_id!r} to the workflow task that ended step "
        f"{plan.to_step} (events {', '.join(map(str, points))}); rewind to another step"
    )


def _off_boundary(exc: RPCError) -> bool:
    """Whether the server refused the reset point: its task did not start a batch's end."""
    return "must be at the boundary" in exc.message


def _reset_request(
    client: Client, plan: RewindPlan, notice: RewindNotice, identity: str, point: int
) -> ResetWorkflowExecutionRequest:
    by = f" by {notice.by}" if notice.by else ""
    return ResetWorkflowExecutionRequest(
        namespace=client.namespace,
        workflow_execution=WorkflowExecution(workflow_id=plan.workflow_id, run_id=plan.run_id),
        reason=f"smyth rewind to step {plan.to_step}{by}",
        workflow_task_finish_event_id=point,
        request_id=str(uuid.uuid4()),
        # What was signalled or updated after the step belonged to the abandoned steps.
        reset_reapply_exclude_types=[
            ResetReapplyExcludeType.RESET_REAPPLY_EXCLUDE_TYPE_SIGNAL,
            ResetReapplyExcludeType.RESET_REAPPLY_EXCLUDE_TYPE_UPDATE,
        ],
        identity=identity,
    )


def _unsupported(exc: RPCError) -> bool:
    """Whether the server refused the reset for its post-reset signal (and reset nothing)."""
    return (
        exc.status == RPCStatusCode.INVALID_ARGUMENT
        and "unsupported post reset operation" in exc.message
    )


class RewindClient(RunsClient):
    """``AgentClient.rewind``: the same run, back to a step."""

    async def rewind(
        self,
        workflow_id: str,
        *,
        to_step: int,
        prompt: str | None = None,
        agent: type[AgentWorkflow] | None = None,
    ) -> RewindResult:
        """Take run ``workflow_id`` back to right after step ``to_step``; it goes on from there.

        Through Temporal's reset: the same workflow id, a new run whose history holds
        steps up to ``to_step`` and then the reset (the abandoned run's history stays
        readable). In the same request the new run is told a ``RewindNotice``: the
        prompt, the side-effect calls after the step that a reset cannot undo (a tool's
        ``reconcile`` hook is asked about them when the run calls them again), the
        approvals decided after the step (void: decisions are not applied again). The
        long-term memories the run wrote after the step are removed before it recalls.

        Args:
            workflow_id: The run (its current run holds the step).
            to_step: The step to go back to (0: before the first model turn).
            prompt: Added as a user message before step ``to_step + 1``.
            agent: The agent's class, whose tools say which calls had side effects
                (default: the imported class of the run's type; without one, every
                tool call after the step is listed as one that may have acted).

        Raises:
            AgentNotFoundError: No run (of the caller's tenant) has that id.
            AccessDeniedError: The caller's role may not operate runs (a viewer).
            RewindError: The run cannot be rewound there (a step it has not gone past,
                a step in an earlier run of its chain, an update being handled); nothing
                was reset.

        Added in 0.10.0.
        """
        started = time.perf_counter()
        await self.identity.owns(workflow_id, "operate")
        if prompt is not None and not prompt.strip():
            raise RewindError("--prompt must not be empty")
        plan = await plan_rewind(self.client, workflow_id, to_step, agent)
        principal = self.identity.principal
        notice = RewindNotice(
            to_step=to_step,
            abandoned_run_id=plan.run_id,
            prompt=prompt,
            side_effects=tuple(plan.side_effects),
            voided_approvals=tuple(plan.voided_approvals),
            by=principal.name if principal is not None else None,
            memory_runs=tuple(plan.memory_runs),
        )
        who = f"smyth:{principal.name}" if principal is not None else "smyth"
        return await reset_to(self.client, plan, notice, identity=who, started=started)
