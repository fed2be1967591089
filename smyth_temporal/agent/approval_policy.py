"""Approval policies in a run: what a request records, how decisions count, escalation.

Workflow code, used by ``Approvals``. A request made under an ``ApprovalPolicy``
records the policy's ``ApprovalRule`` and who started the run; each decision that the
rule lets count is added to ``request.votes`` until the quorum settles it. Escalation
steps and the deadline are durable timers (``workflow.wait_condition`` with a timeout),
computed from the request's own times, so they survive worker crashes and
continue-as-new, and no worker polls for them.

All of it sits behind ``POLICY_PATCH``: a run that made its requests before a tool got
a policy replays them as the one-approver requests they were.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

from smyth_temporal.tools import ApprovalPolicy, Reviewer
from smyth_temporal.types.approvals import (
    ApprovalDecision,
    ApprovalRequest,
    ApprovalReview,
    ApprovalRule,
    ReviewRequest,
)
from smyth_temporal.types.quorum import Quorum, QuorumOutcome
from smyth_temporal.types.tools import OnTimeout

__all__ = [
    "POLICY_PATCH",
    "REVIEW_RETRY",
    "PolicyTerms",
    "await_escalations",
    "count_vote",
    "progress_tags",
    "start_review",
]

REVIEW_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1), backoff_coefficient=2.0, maximum_attempts=3
)
"""A reviewer that keeps failing gives up after three attempts: the people decide."""

POLICY_PATCH = "smyth-approval-policy"
"""Requests under an ``ApprovalPolicy`` record its rule, count votes and escalate (0.9.0).

Asked when a gated call's tool has a policy: a run that made the request before
(replaying with the policy added since) keeps the one-approver request it made.
"""


@dataclass(frozen=True)
class PolicyTerms:
    """What a policy sets on one request: its timing, its rule and who may not decide."""

    deadline: timedelta
    """How long the request waits."""
    on_timeout: OnTimeout
    """What applies at the deadline."""
    rule: ApprovalRule | None = None
    """The rule recorded on the request (``None``: one decision, as before policies)."""
    requested_by: str | None = None
    """Who started the run (recorded with a rule only)."""
    reviewer: Reviewer | None = None
    """The policy's automatic reviewer, if any."""

    @classmethod
    def of(
        cls,
        policy: ApprovalPolicy | None,
        *,
        deadline: timedelta,
        on_timeout: OnTimeout,
        requested_by: str | None,
    ) -> PolicyTerms:
        """The terms of ``policy``, given the tool's (or agent's) deadline and timeout."""
        if policy is None:
            return cls(deadline=deadline, on_timeout=on_timeout)
        return cls(
            deadline=policy.deadline or deadline,
            on_timeout=policy.timeout_policy(on_timeout),
            rule=policy.rule(),
            requested_by=requested_by,
            reviewer=policy.reviewer,
        )


def count_vote(request: ApprovalRequest, decision: ApprovalDecision) -> QuorumOutcome:
    """Count ``decision`` (already checked) on a request made under a policy.

    Returns:
        Where the request stands now; ``pending`` until the quorum settles it.
    """
    quorum = Quorum.of(request)
    assert quorum is not None, "only requests made under a policy count votes"
    counted = quorum.add(decision)
    request.votes.append(decision.model_copy(update={"request_id": request.id}))
    return counted.outcome


async def await_escalations(
    request: ApprovalRequest,
    settled: Callable[[], bool],
    clock: Callable[[], datetime],
    escalate: Callable[[int], None],
) -> bool:
    """Wait through the request's escalation steps still ahead, applying each in turn.

    Each step is a durable timer to ``requested_at + step.after`` (a step whose time
    has passed, after a continue-as-new or a long outage, applies at once).

    Args:
        request: The pending request.
        settled: Whether the wait is over (a decision, an interrupt).
        clock: The workflow's clock.
        escalate: Applies the step at this index.

    Returns:
        Whether ``settled`` ended the wait (otherwise every step has applied).
    """
    steps = request.policy.escalation if request.policy is not None else ()
    for index in range(len(request.escalated_at), len(steps)):
        remaining = request.requested_at + steps[index].after - clock()
        if remaining > timedelta(0):
            with contextlib.suppress(TimeoutError):  # the step is due
                await workflow.wait_condition(settled, timeout=remaining)
        if settled():
            return True
        escalate(index)
    return False


def progress_tags(requests: list[ApprovalRequest]) -> list[str] | None:
    """``SmythApprovalProgress`` values: ``approved/needed`` per pending policy request.

    ``None`` when no request of the run has a policy (the attribute is then never
    written, so runs without policies make the commands they always made).
    """
    if not any(r.policy is not None for r in requests):
        return None
    tags: list[str] = []
    for request in requests:
        quorum = Quorum.of(request)
        if quorum is not None and request.status == "pending":
            tags.append(f"{len(quorum.approvers)}/{quorum.rule.quorum}")
    return sorted(set(tags))


def start_review(
    request: ApprovalRequest, reviewer: Reviewer
) -> workflow.ActivityHandle[ApprovalReview]:
    """Start ``reviewer``'s activity on ``request`` (not awaited: it races the people).

    It may take until the request's deadline (a minute at least), each attempt
    ``reviewer.timeout``.
    """
    info = workflow.info()
    window = max(request.deadline - workflow.now(), timedelta(minutes=1))
    return workflow.start_activity(
        reviewer.activity_name,
        ReviewRequest(
            reviewer=reviewer.name,
            workflow_id=info.workflow_id,
            agent=info.workflow_type,
            request=request.model_copy(),
        ),
        result_type=ApprovalReview,
        start_to_close_timeout=reviewer.timeout,
        schedule_to_close_timeout=window,
        retry_policy=REVIEW_RETRY,
        summary=f"review {request.tool} ({reviewer.name})",
    )
