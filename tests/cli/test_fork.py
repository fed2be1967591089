"""``smyth state`` and ``smyth audit`` of a forked run, and of a run with forks and rewinds."""

from __future__ import annotations

from datetime import datetime

from rich.console import Console

from smyth_temporal.cli._output import format_state
from smyth_temporal.cli.audit import _table
from smyth_temporal.types.agent import AgentState, ForkOrigin
from smyth_temporal.types.audit import AuditEntry, AuditTrail
from smyth_temporal.types.lineage import ForkRef, RewindRecord
from smyth_temporal.types.rewind import RewoundCall


def test_smyth_state_names_the_run_a_fork_was_forked_from() -> None:
    state = AgentState(
        agent="Analyst",
        workflow_id="fork-1",
        run_id="r",
        status="completed",
        step=5,
        max_steps=8,
        tenant="default",
        fork_of=ForkOrigin(workflow_id="Analyst-1", run_id="r0", step=2),
    )
    assert "forked   from Analyst-1 after step 2" in format_state(state).splitlines()
    grandparent = ForkOrigin(workflow_id="Analyst-0", run_id="g0", step=4)
    state.fork_of = ForkOrigin(workflow_id="Analyst-1", run_id="r0", step=2, parent=grandparent)
    assert (
        "forked   from Analyst-1 after step 2, itself from Analyst-0 after step 4"
        in format_state(state).splitlines()
    )


def test_smyth_state_lists_a_runs_forks_and_the_side_effects_its_rewinds_could_not_undo() -> None:
    call = RewoundCall(
        step=3,
        call_id="c3",
        tool="send_email",
        arguments_sha256="0" * 64,
        idempotency_key="k3",
        outcome="completed",
    )
    state = AgentState(
        agent="Analyst",
        workflow_id="Analyst-1",
        run_id="r2",
        status="completed",
        step=4,
        max_steps=8,
        tenant="default",
        forks=[
            ForkRef(workflow_id="f-a", run_id="fa", step=1, status="completed"),
            ForkRef(workflow_id="f-b", run_id="fb", step=None, status="running"),
        ],
        rewinds=[
            RewindRecord(
                time=datetime(2026, 11, 26, 8, 0),
                to_step=2,
                abandoned_run_id="r1",
                run_id="r2",
                by="alice",
                side_effects=[call],
            )
        ],
    )
    lines = format_state(state).splitlines()
    assert "forks    f-a (after step 1, completed); f-b (after step ?, running)" in lines
    assert (
        "rewound  to step 2 by alice, 2026-11-26 08:00:00 UTC (abandoned run r1): "
        "1 side-effect call(s) not undone (send_email at step 3)"
    ) in lines


def test_smyth_audit_names_a_runs_lineage_and_what_a_rewind_could_not_undo() -> None:
    rewound = AuditEntry(
        time=datetime(2026, 11, 26, 8, 0),
        run_id="r2",
        event_id=30,
        kind="rewound",
        fields={
            "to_step": 2,
            "by": "alice",
            "after_reset": True,
            "side_effects": [
                {"tool": "send_email", "step": 3, "outcome": "completed", "idempotency_key": "k3"}
            ],
        },
    )
    trail = AuditTrail(
        workflow_id="Analyst-1",
        runs=["r2"],
        entries=[rewound],
        fork_of=ForkOrigin(workflow_id="Analyst-0", run_id="r0", step=4),
        forks=[ForkRef(workflow_id="f-a", run_id="fa", step=1, status="completed")],
    )
    console = Console(width=400, record=True)
    console.print(_table(trail))
    text = console.export_text()
    assert "forked from Analyst-0 after step 4; forks: f-a (after step 1, completed)" in text
    assert "to step 2 by alice, 1 side effect(s) not undone" in text
    assert "side_effects=send_email@3 (completed, k3)" in text
