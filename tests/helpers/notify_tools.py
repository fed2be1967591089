"""A tool whose approval policy notifies, for the notification tests (no workflow here,
so a worker shares this module between runs)."""

from __future__ import annotations

from datetime import timedelta

from smyth_temporal import ApprovalPolicy, EscalationStep, tool

PAY_POLICY = ApprovalPolicy(
    roles=("finance",),
    notify=("hook",),
    escalation=[EscalationStep(after=timedelta(seconds=2), roles=("lead",), notify=("lead",))],
    deadline=timedelta(minutes=10),
)


@tool(effect="side_effect", requires_approval=PAY_POLICY)
async def pay(amount: int, to: str) -> str:
    """Pay someone (finance decides; the lead too after a while).

    Args:
        amount: How much.
        to: Whom.
    """
    return f"paid {amount} to {to}"
