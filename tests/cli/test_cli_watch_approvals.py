"""``smyth watch`` shows a quorum's progress and each escalation step as lines."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

from rich.console import Console

from smyth_temporal.cli._live import LiveText
from smyth_temporal.cli.watch import _Watch
from smyth_temporal.types import (
    ApprovalDecision,
    ApprovalEscalated,
    ApprovalRequest,
    ApprovalRule,
    ApprovalVoted,
)


def test_watch_shows_a_counted_approval_and_an_escalation() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    request = ApprovalRequest(
        id="apr-1-call_1_0",
        tool="pay",
        call_id="call_1_0",
        step=1,
        arguments={"amount": 20_000},
        arguments_sha256="0" * 64,
        requested_at=now,
        deadline=now + timedelta(days=1),
        policy=ApprovalRule(quorum=2),
        votes=[ApprovalDecision(approved=True, by="alice")],
    )
    out = io.StringIO()
    with LiveText(Console(file=out, width=200, force_terminal=False)) as view:
        watch = _Watch("T-1", view, "")
        watch.add(ApprovalVoted(request=request, progress="1 of 2"))
        watch.add(ApprovalEscalated(request=request, escalation=1, roles=["approver", "admin"]))
    assert out.getvalue().splitlines() == [
        "counted approval of apr-1-call_1_0 (pay) on T-1 by alice: 1 of 2 approvals, still pending",
        "apr-1-call_1_0 (pay) escalated (step 1): approver, admin may decide",
    ]
