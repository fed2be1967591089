"""``read_audit``: an agent's audit trail, from the histories of all its runs.

A reset (a rewind's, or Temporal's own) fails the workflow task it took the run over
at with cause ``RESET_WORKFLOW``: that is a ``reset`` entry, not a lost worker. The
rewind's ``RewindNotice`` signal that follows is a ``rewound`` entry, with the
side-effect calls the reset could not undo.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from smyth_temporal.clients._lineage import reset_runs, rewind_notice
from smyth_temporal.exceptions import AgentNotFoundError
from smyth_temporal.types.agent import INTERRUPT_UPDATE, ForkOrigin
from smyth_temporal.types.approvals import APPROVAL_SIGNAL, APPROVAL_UPDATE
from smyth_temporal.types.audit import AuditEntry, AuditKind, AuditTrail
from smyth_temporal.types.memory import (
    MEMORY_ACTIVITY_FORGET,
    MEMORY_ACTIVITY_RECALL,
    MEMORY_ACTIVITY_REMEMBER,
    MEMORY_ACTIVITY_SUPERSEDE,
    MEMORY_ACTIVITY_UNDO_RUN,
)
from smyth_temporal.types.model import MODEL_ACTIVITY
from smyth_temporal.types.sessions import SESSION_MESSAGE_UPDATE

__all__ = ["read_audit"]

_E = EventType
_ACTIVITY_CLOSED = {
    _E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED: "completed",
    _E.EVENT_TYPE_ACTIVITY_TASK_FAILED: "failed",
    _E.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT: "timed_out",
    _E.EVENT_TYPE_ACTIVITY_TASK_CANCELED: "cancelled",
}
_MEMORY_KINDS: dict[str, AuditKind] = {
    MEMORY_ACTIVITY_REMEMBER: "memory_write",
    MEMORY_ACTIVITY_SUPERSEDE: "memory_write",
    MEMORY_ACTIVITY_FORGET: "memory_forget",
    MEMORY_ACTIVITY_UNDO_RUN: "memory_forget",
    MEMORY_ACTIVITY_RECALL: "memory_read",
}
_RUN_CLOSED = {
    _E.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED: "completed",
    _E.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED: "failed",
    _E.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT: "timed_out",
    _E.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED: "terminated",
    _E.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED: "cancelled",
}


def _sha256(value: Any) -> str:
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


class _Run:
    """Reads one run's history into entries."""

    def __init__(self, client: Client, run_id: str) -> None:
        self._client = client
        self.run_id = run_id
        self.entries: list[AuditEntry] = []
        self._scheduled: dict[int, tuple[str, Any]] = {}
        self.fork_of: ForkOrigin | None = None
        self._reset_from: set[str] = set()  # the abandoned runs of the resets read
        self._started: dict[int, HistoryEvent] = {}

    async def _value(self, payloads: Sequence[Payload]) -> Any:
        if not payloads:
            return None
        try:
            return (await self._client.data_converter.decode([payloads[0]]))[0]
        except Exception as exc:  # a payload this reader cannot decrypt: say so, go on
            return {"undecodable": type(exc).__name__}

    def _add(self, event: HistoryEvent, kind: AuditKind, **fields: Any) -> None:
        self.entries.append(
            AuditEntry(
                time=event.event_time.ToDatetime().replace(tzinfo=None),
                run_id=self.run_id,
                event_id=event.event_id,
                kind=kind,
                fields={k: v for k, v in fields.items() if v is not None},
            )
        )

    async def read(self, events: Sequence[HistoryEvent]) -> None:
        for event in events:
            kind = event.event_type
            if kind == _E.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
                started = event.workflow_execution_started_event_attributes
                value = await self._value(started.input.payloads)
                value = value if isinstance(value, dict) else {}
                self.fork_of = _origin(value.get("fork_of"))
                self._add(
                    event,
                    "run_started",
                    agent=started.workflow_type.name,
                    tenant=value.get("tenant"),
                    continued_from=started.continued_execution_run_id or None,
                    attempt=started.attempt,
                    forked_from=self.fork_of.workflow_id if self.fork_of else None,
                    forked_at_step=self.fork_of.step if self.fork_of else None,
                )
            elif kind == _E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
                scheduled = event.activity_task_scheduled_event_attributes
                self._scheduled[event.event_id] = (
                    scheduled.activity_type.name,
                    await self._value(scheduled.input.payloads),
                )
            elif kind == _E.EVENT_TYPE_ACTIVITY_TASK_STARTED:
                task = event.activity_task_started_event_attributes
                self._started[task.scheduled_event_id] = event
            elif kind in _ACTIVITY_CLOSED:
                await self._activity_closed(event, _ACTIVITY_CLOSED[kind])
            elif kind == _E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
                await self._update(event)
            elif kind == _E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
                signaled = event.workflow_execution_signaled_event_attributes
                if signaled.signal_name == APPROVAL_SIGNAL:
                    decision = await self._value(signaled.input.payloads)
                    self._decision(event, decision, None, via="signal")
                else:
                    await self._rewound(event)
            elif (reset := reset_runs(event)) is not None:
                self._reset_from.add(reset[0])
                failed = event.workflow_task_failed_event_attributes
                self._add(
                    event,
                    "reset",
                    abandoned_run_id=reset[0],
                    new_run_id=reset[1],
                    reason=failed.failure.message or None,
                )
            elif kind in (
                _E.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT,
                _E.EVENT_TYPE_WORKFLOW_TASK_FAILED,
            ):
                self._add(event, "worker_lost", task="workflow", how=_E.Name(kind).lower())
            elif kind == _E.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
                continued = event.workflow_execution_continued_as_new_event_attributes
                self._add(event, "continued_as_new", new_run_id=continued.new_execution_run_id)
            elif kind in _RUN_CLOSED:
                self._add(event, "run_finished", outcome=_RUN_CLOSED[kind])

    async def _activity_closed(self, event: HistoryEvent, outcome: str) -> None:
        attributes = getattr(event, event.WhichOneof("attributes") or "")
        scheduled_id = attributes.scheduled_event_id
        activity_type, invocation = self._scheduled.get(scheduled_id, ("?", None))
        started = self._started.get(scheduled_id)
        attempt = started.activity_task_started_event_attributes.attempt if started else None
        last_failure = (
            started.activity_task_started_event_attributes.last_failure.message or None
            if started
            else None
        )
        failure = getattr(attributes, "failure", None)
        common: dict[str, Any] = {
            "outcome": outcome,
            "attempts": attempt,
            "retried_after": last_failure,
            "error": failure.message if failure is not None and failure.message else None,
        }
        request: dict[str, Any] = invocation if isinstance(invocation, dict) else {}
        if activity_type == MODEL_ACTIVITY:
            result = (
                await self._value(attributes.result.payloads) if outcome == "completed" else None
            )
            result = result if isinstance(result, dict) else {}
            usage = result.get("usage") or {}
            self._add(
                event,
                "model_call",
                model=request.get("model"),
                purpose=request.get("purpose"),
                step=request.get("step"),
                input_tokens=usage.get("input_tokens"),
                output_tokens=usage.get("output_tokens"),
                cached_tokens=usage.get("cached_tokens"),
                # A fork's turn answered from its parent's record: its zero tokens were
                # not a cheap call but no call, and a reader must tell paid turns apart.
                replayed=True if result.get("replayed") else None,
                **common,
            )
        elif activity_type.startswith("smyth.tool.") or activity_type.startswith("smyth.mcp."):
            if activity_type.endswith(".list_tools"):
                return
            self._add(
                event,
                "mcp_call" if activity_type.startswith("smyth.mcp.") else "tool_call",
                tool=request.get("tool") or activity_type.removeprefix("smyth.tool."),
                step=request.get("step"),
                arguments_sha256=_sha256(request.get("arguments", {})),
                idempotency_key=request.get("idempotency_key"),
                **common,
            )
        elif activity_type in _MEMORY_KINDS:
            scope = request.get("scope")
            scope = scope if isinstance(scope, dict) else {}
            self._add(
                event,
                _MEMORY_KINDS[activity_type],
                operation=activity_type.removeprefix("smyth.memory."),
                namespace=scope.get("namespace"),
                tenant=scope.get("tenant"),
                memory_kind=request.get("kind"),
                provenance=request.get("provenance"),
                records=len(request.get("texts") or []) or None,
                ids=request.get("ids"),
                **common,
            )

    async def _rewound(self, event: HistoryEvent) -> None:
        notice = await rewind_notice(self._client, event)
        if notice is None:
            return
        self._add(
            event,
            "rewound",
            to_step=notice.to_step,
            abandoned_run_id=notice.abandoned_run_id,
            # A notice that follows no reset of the run it names was not sent by a rewind.
            after_reset=notice.abandoned_run_id in self._reset_from,
            by=notice.by,
            prompt_sha256=_sha256(notice.prompt) if notice.prompt is not None else None,
            side_effects=[
                call.model_dump(mode="json", exclude={"result"}) for call in notice.side_effects
            ],
            voided_approvals=list(notice.voided_approvals),
        )

    async def _update(self, event: HistoryEvent) -> None:
        accepted = event.workflow_execution_update_accepted_event_attributes
        name = accepted.accepted_request.input.name
        value = await self._value(accepted.accepted_request.input.args.payloads)
        if name == APPROVAL_UPDATE:
            self._decision(event, value, accepted.protocol_instance_id, via="update")
        elif name == INTERRUPT_UPDATE:
            reason = value.get("reason") if isinstance(value, dict) else None
            by = value.get("by") if isinstance(value, dict) else None
            self._add(event, "interrupt", reason=reason, by=by)
        elif name == SESSION_MESSAGE_UPDATE:
            text = value.get("text") if isinstance(value, dict) else None
            self._add(
                event,
                "message",
                sender=value.get("sender") if isinstance(value, dict) else None,
                text_sha256=_sha256(text) if text is not None else None,
            )

    def _decision(
        self, event: HistoryEvent, decision: Any, update_id: str | None, via: str
    ) -> None:
        if not isinstance(decision, dict):
            return
        edited = decision.get("arguments")
        self._add(
            event,
            "approval_decided",
            request_id=decision.get("request_id"),
            approved=decision.get("approved"),
            by=decision.get("by"),
            comment=decision.get("comment"),
            pinned_sha256=decision.get("arguments_sha256"),
            edited_arguments_sha256=_sha256(edited) if edited is not None else None,
            via=via,
            update_id=update_id,
        )


async def read_audit(client: Client, workflow_id: str) -> AuditTrail:
    """The audit trail of every run of ``workflow_id``, oldest first.

    Raises:
        AgentNotFoundError: The server has no run with that id.

    Added in 0.4.0. Changed in 0.10.0: ``fork_of``; ``reset`` and ``rewound`` entries
    (a reset was a ``worker_lost`` entry before).
    """
    try:
        run_id = (await client.get_workflow_handle(workflow_id).describe()).run_id
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            raise AgentNotFoundError(f"no agent run with workflow id {workflow_id!r}") from None
        raise
    runs: list[_Run] = []
    while run_id:  # from the latest run back along the continue-as-new chain
        history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
        run = _Run(client, run_id)
        await run.read(history.events)
        runs.insert(0, run)
        first = history.events[0].workflow_execution_started_event_attributes
        run_id = first.continued_execution_run_id
    entries = [entry for run in runs for entry in run.entries]
    return AuditTrail(
        workflow_id=workflow_id,
        runs=[run.run_id for run in runs],
        entries=entries,
        fork_of=runs[0].fork_of,
    )


def _origin(value: Any) -> ForkOrigin | None:
    """The ``ForkOrigin`` of a run's decoded input, if it is a fork."""
    if not isinstance(value, dict):
        return None
    try:
        return ForkOrigin.model_validate(value)
    except ValueError:
        return None
