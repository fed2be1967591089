"""Tools gated by ``ApprovalPolicy`` for the policy tests (no workflow here: runs share it)."""

from __future__ import annotations

from datetime import timedelta

from smyth_temporal import ApprovalPolicy, EscalationStep, Reviewer, tool
from smyth_temporal.types import ApprovalReview, ReviewRequest
from tests.helpers.trading import record

LARGE = 10_000
"""Payments above this need two approvers."""


def _large(amount: int, **_: object) -> bool:
    return amount > LARGE


@tool(
    effect="side_effect",
    requires_approval=ApprovalPolicy(when=_large, roles=("approver", "admin"), quorum=2),
)
async def pay(amount: int, to: str) -> str:
    """Pay an amount to someone (two approvers above 10,000).

    Args:
        amount: How much.
        to: Who gets it.
    """
    record("pay", amount=amount, to=to)
    return f"paid {amount} to {to}"


@tool(
    effect="side_effect",
    requires_approval=ApprovalPolicy(
        roles=("approver",),
        deadline=timedelta(hours=1),
        escalation=[EscalationStep(after=timedelta(minutes=10), roles=("admin",))],
        on_timeout="reject",
    ),
)
async def deploy(service: str) -> str:
    """Deploy a service (an approver; after 10 minutes an admin too; rejected after an hour).

    Args:
        service: The service.
    """
    record("deploy", service=service)
    return f"deployed {service}"


@tool(
    effect="side_effect",
    requires_approval=ApprovalPolicy(
        deadline=timedelta(seconds=4),
        escalation=[EscalationStep(after=timedelta(seconds=2), roles=("admin",))],
        on_timeout="reject",
    ),
)
async def hotfix(service: str) -> str:
    """Patch a service now (escalates after 2 s, rejected after 4 s).

    Args:
        service: The service.
    """
    record("hotfix", service=service)
    return f"patched {service}"


POLICY_TOOLS = [pay, deploy, hotfix]


def guard(review: ReviewRequest) -> ApprovalReview:
    """A Python reviewer: refunds over 1,000 are rejected, to strangers escalated."""
    arguments = review.request.arguments
    if arguments["amount"] > 1_000:
        return ApprovalReview(verdict="reject", reason="refunds over 1,000 need a ticket")
    if arguments["to"] == "unknown":
        return ApprovalReview(verdict="escalate", reason="who is that?")
    return ApprovalReview(verdict="approve", reason="small refund to a customer")


@tool(
    effect="side_effect",
    requires_approval=ApprovalPolicy(
        reviewer=Reviewer("guard", fn=guard),
        escalation=[EscalationStep(after=timedelta(hours=1), roles=("admin",))],
    ),
)
async def refund(amount: int, to: str) -> str:
    """Refund a customer (an automatic reviewer looks first).

    Args:
        amount: How much.
        to: Who gets it.
    """
    record("refund", amount=amount, to=to)
    return f"refunded {amount} to {to}"


async def generous(review: ReviewRequest) -> ApprovalReview:
    """A Python reviewer (``async def``) that approves every tip."""
    return ApprovalReview(
        verdict="approve", reason=f"a tip of {review.request.arguments['amount']}"
    )


@tool(
    effect="side_effect",
    requires_approval=ApprovalPolicy(reviewer=Reviewer("generous", fn=generous), auto_approve=True),
)
async def tip(amount: int) -> str:
    """Tip the waiter (approved by a reviewer where allowed).

    Args:
        amount: How much.
    """
    record("tip", amount=amount)
    return f"tipped {amount}"


@tool(
    effect="side_effect",
    requires_approval=ApprovalPolicy(
        reviewer=Reviewer("auditor", model="test-model", prompt="Reject transfers abroad.")
    ),
)
async def transfer(amount: int, country: str) -> str:
    """Transfer money (a model reviews it first).

    Args:
        amount: How much.
        country: Where to.
    """
    record("transfer", amount=amount, country=country)
    return f"transferred {amount} to {country}"


REVIEWED_TOOLS = [refund, tip, transfer]
