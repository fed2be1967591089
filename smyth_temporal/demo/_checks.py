"""What proves the demo's claims: pure checks over the ledgers and the run's history.

Nothing here talks to a server or reads a file: each check takes what the scenario
collected (the execution ledger, the alert and trade ledgers, the history events, what
the agent's state showed) and returns what it proves, with a list of problems that is
empty when every claim holds. So each can be tested on made-up data.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent

from smyth_temporal.demo._example import Execution
from smyth_temporal.settings import Settings
from smyth_temporal.types.approvals import APPROVAL_SIGNAL, APPROVAL_UPDATE, ApprovalRequest

__all__ = [
    "ApprovalProof",
    "Decision",
    "HistoryFacts",
    "Proof",
    "ToolScheduled",
    "approve_command",
    "check_approval",
    "check_ledger",
    "history_facts",
]

_TOOL_ACTIVITY_PREFIX = "smyth.tool."
"""Activity types of tool calls start with this (the tool's name follows)."""


@dataclass
class Proof:
    """What the ledgers show about the calls around the kill."""

    completed: list[list[Execution]] = field(default_factory=list)
    """The executions of each call that had completed before the kill (one each)."""
    interrupted: list[list[Execution]] = field(default_factory=list)
    """The executions of each call running on the killed worker (cut off, then re-run)."""
    later: list[list[Execution]] = field(default_factory=list)
    """The executions of each call made after the kill."""
    alerts: int = 0
    """Alerts in the alert ledger."""
    trades: int = 0
    """Sales in the trade ledger."""
    problems: list[str] = field(default_factory=list)
    """Everything that contradicts "completed calls ran once"; empty when proven."""

    @property
    def executions(self) -> int:
        """Tool executions in all, re-runs included."""
        return sum(len(runs) for runs in self.completed + self.interrupted + self.later)


def check_ledger(
    executions: Sequence[Execution],
    alerts: Sequence[Mapping[str, Any]],
    *,
    completed_before_kill: Iterable[tuple[int, str]],
    killed_pid: int,
    trades: Sequence[Mapping[str, Any]] = (),
) -> Proof:
    """Check the ledgers against what Temporal had recorded when the worker was killed.

    Args:
        executions: The execution ledger (see ``read_executions``).
        alerts: The alert ledger's entries (each with the ``key`` of its call).
        trades: The trade ledger's entries (each with the ``key`` of its call).
        completed_before_kill: ``(step, call_id)`` of every tool result the agent's
            state showed before the kill: calls Temporal knew were done.
        killed_pid: The process id of the killed worker.

    Returns:
        The calls sorted into completed, interrupted and later, and any problems:
        a completed call that ran more or less than once, an interrupted call that
        did not re-run exactly once to the end, a later call that ran twice, an
        alert sent or a sale made twice, or no call cut off by the kill at all.
    """
    by_call: dict[tuple[int, str], list[Execution]] = {}
    for execution in executions:
        by_call.setdefault((execution.step, execution.call_id), []).append(execution)
    done = set(completed_before_kill)
    proof = Proof()
    cut_off = 0
    for call, runs in by_call.items():
        label = runs[0].label
        if call in done:
            proof.completed.append(runs)
            if len(runs) != 1 or runs[0].ended is None:
                proof.problems.append(
                    f"{label} had completed before the kill but ran {len(runs)} times"
                )
        elif any(run.pid == killed_pid for run in runs):
            proof.interrupted.append(runs)
            before = [run for run in runs if run.pid == killed_pid]
            after = [run for run in runs if run.pid != killed_pid]
            if any(run.ended is None for run in before):
                cut_off += 1
                if len(after) != 1 or after[0].ended is None:
                    proof.problems.append(
                        f"{label} was cut off by the kill and then ran {len(after)} times "
                        f"({sum(run.ended is not None for run in after)} to the end)"
                    )
                elif after[0].key != before[0].key:
                    proof.problems.append(f"{label} re-ran with another idempotency key")
            elif len(after) > 1:
                proof.problems.append(f"{label} ran {len(runs)} times")
        else:
            proof.later.append(runs)
            if len(runs) != 1:
                proof.problems.append(f"{label} ran {len(runs)} times")
    missing = done - set(by_call)
    if missing:
        proof.problems.append(
            f"{len(missing)} completed call(s) are missing from the execution ledger"
        )
    if cut_off == 0:
        proof.problems.append("the kill cut off no tool call")
    keys = [str(alert.get("key")) for alert in alerts]
    proof.alerts = len(keys)
    for key in sorted({k for k in keys if keys.count(k) > 1}):
        proof.problems.append(f"the alert of call {key} was sent {keys.count(key)} times")
    sales = [str(trade.get("key")) for trade in trades]
    proof.trades = len(sales)
    for key in sorted({k for k in sales if sales.count(k) > 1}):
        proof.problems.append(f"the sale of call {key} was made {sales.count(key)} times")
    return proof


@dataclass(frozen=True)
class Decision:
    """An approval decision as the run's history recorded it."""

    event_id: int
    """The history event: an accepted ``decide_approval`` update, or an
    ``approval_decision`` signal (``smyth approve --no-wait``)."""
    kind: Literal["update", "signal"]
    """How the decision came (``smyth approve`` sends an update, ``--no-wait`` a signal)."""
    request_id: str | None
    """The request decided (``None``: "the only pending one")."""
    by: str
    """Who decided."""


@dataclass(frozen=True)
class ToolScheduled:
    """A tool call's activity as the run's history recorded its scheduling."""

    event_id: int
    """The ``ActivityTaskScheduled`` event."""
    tool: str
    """The tool's name."""
    step: int
    """The agent step that made the call."""
    call_id: str
    """The model's id for the call."""


@dataclass
class HistoryFacts:
    """What the demo needs from a run's history (see ``history_facts``)."""

    decisions: list[Decision] = field(default_factory=list)
    """Every approval decision, in history order."""
    scheduled: list[ToolScheduled] = field(default_factory=list)
    """Every tool call's activity scheduled, in history order (retries are not
    scheduled again, so a call appears once per scheduling)."""


def history_facts(events: Iterable[HistoryEvent]) -> HistoryFacts:
    """Pick the approval decisions and the scheduled tool calls out of a run's history.

    The inputs are read from the events' payloads: JSON, as ``SmythPlugin``'s pydantic
    converter writes them.
    """
    facts = HistoryFacts()
    for event in events:
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
            update = event.workflow_execution_update_accepted_event_attributes.accepted_request
            if update.input.name == APPROVAL_UPDATE:
                facts.decisions.append(_decision(event, "update", update.input.args.payloads))
        elif event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
            signal_ = event.workflow_execution_signaled_event_attributes
            if signal_.signal_name == APPROVAL_SIGNAL:
                facts.decisions.append(_decision(event, "signal", signal_.input.payloads))
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            activity = event.activity_task_scheduled_event_attributes
            if activity.activity_type.name.startswith(_TOOL_ACTIVITY_PREFIX):
                invocation = _payload(activity.input.payloads)
                facts.scheduled.append(
                    ToolScheduled(
                        event.event_id,
                        str(invocation.get("tool")),
                        int(invocation.get("step", 0)),
                        str(invocation.get("call_id")),
                    )
                )
    return facts


@dataclass
class ApprovalProof:
    """What the ledger and the history show about one approval request."""

    request: ApprovalRequest
    """The request, as the run's final state has it (decision included)."""
    runs: list[Execution] = field(default_factory=list)
    """The executions of the gated call (from the execution ledger)."""
    decision: Decision | None = None
    """The decision in history that applies to the request."""
    scheduled: list[ToolScheduled] = field(default_factory=list)
    """The gated call's activity, as many times as history scheduled it."""
    problems: list[str] = field(default_factory=list)
    """Everything that contradicts "it ran once, after the approval, or not at all"."""


def check_approval(
    request: ApprovalRequest,
    executions: Sequence[Execution],
    history: HistoryFacts,
    *,
    not_before: float,
) -> ApprovalProof:
    """Check that a gated call ran once after its approval, or never when refused.

    Args:
        request: The request as the run's final state has it.
        executions: The execution ledger (see ``read_executions``).
        history: What the run's history recorded (see ``history_facts``).
        not_before: A wall-clock time known to precede the decision (the moment the
            demo sent it, or sent its last query that still found the request pending):
            no execution of the call may start earlier.

    Returns:
        The executions and events of the call, and any problems: an approved call
        that did not run exactly once, ran before ``not_before`` or was scheduled
        before the decision in history (or with no decision in history), and a
        refused call that ran at all.
    """
    proof = ApprovalProof(request=request)
    call = (request.step, request.call_id)
    proof.runs = [e for e in executions if (e.step, e.call_id) == call]
    proof.scheduled = [s for s in history.scheduled if (s.step, s.call_id) == call]
    # A decision naming no request applies to the only pending one (check_decision).
    proof.decision = next(
        (d for d in history.decisions if d.request_id in (request.id, None)), None
    )
    label = f"{request.tool} of request {request.id}"
    if request.status == "pending":
        proof.problems.append(f"{label} was never decided")
        return proof
    if request.status != "approved":
        if proof.runs or proof.scheduled:
            times = "once" if len(proof.runs) == 1 else f"{len(proof.runs)} times"
            proof.problems.append(f"{label} was {request.status} but ran {times}")
        return proof
    if len(proof.runs) != 1 or proof.runs[0].ended is None:
        finished = sum(run.ended is not None for run in proof.runs)
        proof.problems.append(
            f"{label} was approved and then ran {len(proof.runs)} times ({finished} to the end)"
        )
    early = [run for run in proof.runs if run.started < not_before]
    if early:
        proof.problems.append(f"{label} started before it was approved")
    if proof.decision is None:
        proof.problems.append(f"the history of the run has no decision for {label}")
    if len(proof.scheduled) != 1:
        proof.problems.append(f"history scheduled {label} {len(proof.scheduled)} times")
    elif proof.decision is not None and proof.scheduled[0].event_id < proof.decision.event_id:
        proof.problems.append(f"history scheduled {label} before its decision")
    return proof


def approve_command(
    workflow_id: str,
    request: ApprovalRequest,
    *,
    by: str,
    settings: Settings,
    defaults: Settings | None,
) -> str:
    """The ``smyth approve`` command line that approves ``request`` from another terminal.

    ``--address`` and ``--namespace`` are included when the command would not reach
    the demo's server without them (``defaults``: what a bare ``smyth`` command would
    use, ``None`` when that is unknown).
    """
    words = ["smyth", "approve", workflow_id, "--by", by, "--sha256", request.arguments_sha256]
    if defaults is None or defaults.address != settings.address:
        words += ["--address", settings.address]
    if defaults is None or defaults.namespace != settings.namespace:
        words += ["--namespace", settings.namespace]
    return shlex.join(words)


def _decision(
    event: HistoryEvent, kind: Literal["update", "signal"], payloads: Sequence[Any]
) -> Decision:
    """The decision an update or a signal carries (its first argument)."""
    decision = _payload(payloads)
    return Decision(event.event_id, kind, decision.get("request_id"), str(decision.get("by")))


def _payload(payloads: Sequence[Any]) -> dict[str, Any]:
    """The first payload as a JSON object (empty when absent or not JSON)."""
    if not payloads:
        return {}
    try:
        value = json.loads(payloads[0].data)
    except (ValueError, UnicodeDecodeError):
        return {}
    return value if isinstance(value, dict) else {}
