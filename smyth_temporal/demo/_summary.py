"""The demo's summary: the run's output, then what was measured and what it proves.

Every claim is computed from what the demo observed, the ledgers and the run's
history; none is canned.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from smyth_temporal.demo._checks import ApprovalProof, Proof
from smyth_temporal.demo._example import Execution, RunFiles
from smyth_temporal.demo._observed import Observed
from smyth_temporal.demo._render import (
    Narrator,
    format_usage,
    plural,
    request_label,
    seconds_between,
)
from smyth_temporal.types.agent import AgentResult
from smyth_temporal.types.approvals import APPROVAL_SIGNAL, APPROVAL_UPDATE
from smyth_temporal.types.visibility import PENDING_APPROVALS_ATTRIBUTE

__all__ = ["summarize"]

_PROBLEM_STYLE = "bold red"


def _proved(holds: bool) -> str:
    """The colour of a summary point on a terminal: green when it proves its claim."""
    return "green" if holds else _PROBLEM_STYLE


def summarize(
    narrator: Narrator,
    result: AgentResult,
    proof: Proof,
    approvals: Sequence[ApprovalProof],
    *,
    observed: Observed,
    workers: Mapping[int, str],
    files: RunFiles,
    started: float,
) -> None:
    """Print the output and the summary of a finished demo.

    Args:
        narrator: Where to print.
        result: The run's result.
        proof: What the ledgers prove about the calls around the kill.
        approvals: What the ledgers and history prove about each approval.
        observed: What the demo saw of the run (the kill included).
        workers: The name of each worker process by pid, in the order started.
        files: The run's ledgers and logs.
        started: When the demo started (wall clock).
    """
    assert observed.killed_at is not None
    killed_at = observed.killed_at
    first_pid = next(iter(workers))

    def after_kill(at: float | None) -> str:
        return "not seen" if at is None else f"{at - killed_at:4.1f}s after the kill"

    def attempt(run: Execution) -> str:
        where = workers.get(run.pid, f"pid {run.pid}")
        how = "ran to the end" if run.ended is not None else "never finished"
        return f"attempt {run.attempt} on {where} {how}"

    text, row, bullet = narrator.text, narrator.row, narrator.bullet
    text()
    text(f"Output ({result.status}):", style="bold")
    for line in result.output.splitlines():
        text(f"  {line}")
    text()
    text("Summary:", style="bold")
    one_run = "one workflow run" if len(observed.run_ids) == 1 else "SEVERAL runs"
    row(
        "run",
        f"{observed.workflow_id}: {result.steps} steps, {one_run}, "
        f"{plural(len(workers), 'worker')}",
    )
    row("usage", format_usage(result.usage))
    row(
        "time",
        f"{observed.finished - started:.1f}s from `smyth demo` to the output, "
        f"{observed.finished - observed.started:.1f}s of it for the run",
    )
    cut_off = ", ".join(e.label for e in observed.cut_off)
    row(
        "crash",
        f"SIGKILL to worker 1 (pid {first_pid}) at step {observed.killed_step}, during {cut_off}",
    )
    row("recovery", f"worker 2 polling       {after_kill(observed.replacement_polling)}")
    row("", f"cut-off call re-run    {after_kill(observed.rerun_started)}")
    row("", f"first new result       {after_kill(observed.first_progress)}")
    row("", f"steps went on from {observed.killed_step} to {result.steps}")
    calls = len(proof.completed) + len(proof.interrupted) + len(proof.later)
    row(
        "proof",
        f"{_relative(files.executions)}: "
        f"{plural(proof.executions, 'execution')} of {plural(calls, 'call')}",
    )
    once = [runs[0].label for runs in proof.completed if len(runs) == 1]
    bullet(
        f"- {len(once)} of {plural(len(proof.completed), 'call')} completed before "
        f"the kill ran exactly once: {', '.join(once) or 'none'}",
        style=_proved(len(once) == len(proof.completed)),
    )
    for runs in proof.interrupted:
        keys = {run.key for run in runs}
        key = f"the same idempotency key {runs[0].key}" if len(keys) == 1 else "other keys"
        bullet(
            f"- {runs[0].label} was running at the kill: "
            + "; ".join(attempt(run) for run in runs)
            + f"; {key}",
            style=_proved(len(keys) == 1 and runs[-1].ended is not None),
        )
    later_once = sum(len(runs) == 1 for runs in proof.later)
    bullet(
        f"- {later_once} of {plural(len(proof.later), 'call')} made after the kill ran "
        "exactly once",
        style=_proved(later_once == len(proof.later)),
    )
    twice = sum("alert of call" in problem for problem in proof.problems)
    bullet(
        f"- {plural(proof.alerts, 'alert')} in {_relative(files.alerts)}, "
        f"{twice or 'none'} sent twice",
        style=_proved(not twice),
    )
    for approval in approvals:
        _approval(narrator, approval, proof, observed=observed, files=files)
    row("files", f"{_relative(files.root)}/ (ledgers, worker logs)")
    for problem in proof.problems:
        row("PROBLEM", problem, style=_PROBLEM_STYLE)


def _approval(
    narrator: Narrator,
    approval: ApprovalProof,
    proof: Proof,
    *,
    observed: Observed,
    files: RunFiles,
) -> None:
    """The approval lines of the summary: who decided when, and what ran after."""
    bullet, request = narrator.bullet, approval.request
    seen = observed.approvals.get(request.id)
    decision = request.decision
    by = decision.by if decision else "nobody"
    bullet(
        f"{request_label(request)}, step {request.step}: {request.status} by {by} "
        f"after {seconds_between(request.requested_at, request.decided_at)}",
        label="approval",
    )
    if seen is not None and seen.listed is not None:
        bullet(
            f"- AgentClient.pending_approvals() listed it "
            f"{seen.listed - seen.seen:.1f}s after it was seen "
            f"(search attribute {PENDING_APPROVALS_ATTRIBUTE.name})",
            style=_proved(True),
        )
    else:
        bullet("- AgentClient.pending_approvals() never listed it", style=_proved(False))
    sales = sum("sale of call" in problem for problem in proof.problems)
    trades = (
        f"{plural(proof.trades, 'sale')} in {_relative(files.trades)}, {sales or 'none'} made twice"
    )
    if request.status != "approved":
        bullet(
            f"- {request.tool} did not run: {len(approval.runs)} executions; {trades}",
            style=_proved(not approval.runs),
        )
    elif approval.runs:
        run = approval.runs[0]
        after = ""
        if seen is not None and seen.sent is not None:
            after = f", {run.started - seen.sent:.2f}s after the approval was sent"
        elif seen is not None and seen.not_before:
            after = f", {run.started - seen.not_before:.2f}s after it was last seen pending"
        times = "once" if len(approval.runs) == 1 else f"{len(approval.runs)} times"
        bullet(
            f"- {request.tool} ran {times}{after}; {trades}",
            style=_proved(len(approval.runs) == 1 and not sales),
        )
    else:
        bullet(f"- {request.tool} never ran; {trades}", style=_proved(False))
    if approval.decision is not None:
        kind = (
            f"update {APPROVAL_UPDATE} accepted"
            if approval.decision.kind == "update"
            else f"signal {APPROVAL_SIGNAL}"
        )
        events = ", ".join(str(s.event_id) for s in approval.scheduled)
        scheduled = f"scheduled at event {events}" if events else "never scheduled"
        bullet(
            f"- history: {kind} from {approval.decision.by} at event "
            f"{approval.decision.event_id}; smyth.tool.{request.tool} {scheduled}",
            style=_proved(not approval.problems),
        )
    else:
        bullet("- history: no decision found", style=_proved(False))


def _relative(path: Path) -> str:
    """``path`` from the current directory when it is under it (shorter to read)."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)
