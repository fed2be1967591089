"""``ApprovalPolicy``: refused definitions say what is wrong; what a policy records and
which timeout applies (``approve`` only when the policy itself says so)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from smyth_temporal import ApprovalPolicy, EscalationStep, Reviewer, ToolDefinitionError, tool
from smyth_temporal.agent.approval_policy import PolicyTerms
from smyth_temporal.types import ApprovalReview, ReviewRequest


def abstain(request: ReviewRequest) -> ApprovalReview:
    return ApprovalReview(verdict="abstain")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"quorum": 0}, "quorum must be at least 1, not 0"),
        ({"quorum": True}, "quorum must be at least 1"),
        ({"roles": ()}, "roles must name at least one role"),
        ({"roles": "finance"}, "roles takes a list of role names"),
        ({"roles": ("fin ance",)}, "are not names"),
        ({"notify": "webhook"}, "notify takes a list of channel names"),
        ({"on_timeout": "ignore"}, "on_timeout must be one of"),
        ({"deadline": timedelta(0)}, "deadline must be positive"),
        ({"auto_approve": True}, "auto_approve needs a reviewer"),
        (
            {
                "escalation": [
                    EscalationStep(after=timedelta(hours=2)),
                    EscalationStep(after=timedelta(hours=1)),
                ]
            },
            "must come in time order",
        ),
        (
            {
                "deadline": timedelta(hours=1),
                "escalation": [EscalationStep(after=timedelta(hours=1))],
            },
            "would come at or after the deadline",
        ),
    ],
)
def test_a_policy_that_cannot_work_is_refused_with_its_reason(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ToolDefinitionError, match=message):
        ApprovalPolicy(**options)


def test_a_reviewer_takes_a_function_or_a_model() -> None:
    with pytest.raises(ToolDefinitionError, match="either a function"):
        Reviewer("both", fn=abstain, model="m")
    with pytest.raises(ToolDefinitionError, match="either a function"):
        Reviewer("neither")
    with pytest.raises(ToolDefinitionError, match="must be 1-64 letters"):
        Reviewer("no:colons", fn=abstain)
    assert Reviewer("guard", fn=abstain).activity_name == "smyth.reviewer.guard"


def test_the_agent_s_approve_at_the_deadline_never_applies_under_a_policy() -> None:
    day = timedelta(days=1)
    terms = PolicyTerms.of(ApprovalPolicy(), deadline=day, on_timeout="approve", requested_by="ops")
    assert terms.on_timeout == "reject" and terms.requested_by == "ops"
    assert terms.rule is not None and terms.rule.roles == ("approver",)
    explicit = ApprovalPolicy(on_timeout="approve", deadline=timedelta(hours=1))
    terms = PolicyTerms.of(explicit, deadline=day, on_timeout="reject", requested_by=None)
    assert (terms.on_timeout, terms.deadline) == ("approve", timedelta(hours=1))
    legacy = PolicyTerms.of(None, deadline=day, on_timeout="approve", requested_by="ops")
    assert (legacy.on_timeout, legacy.rule, legacy.requested_by) == ("approve", None, None)


def test_when_gates_by_the_validated_arguments() -> None:
    @tool(requires_approval=ApprovalPolicy(when=lambda amount, **_: amount > 100))
    async def pay(amount: int, to: str) -> str:
        """Pay.

        Args:
            amount: How much.
            to: Who.
        """
        return "paid"

    assert not pay.needs_approval({"amount": 100, "to": "x"})
    assert pay.needs_approval({"amount": 101, "to": "x"})
    assert pay.approval_policy is not None and pay.approval_policy.quorum == 1
