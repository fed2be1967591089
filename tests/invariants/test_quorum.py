"""The quorum state machine (``types.quorum.Quorum``): its invariants under any sequence
of decisions and escalations, searched with Hypothesis, and the cases the issue names."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from smyth_temporal.agent.approval_policy import count_vote
from smyth_temporal.agent.approvals import check_decision
from smyth_temporal.exceptions import InvalidDecisionError
from smyth_temporal.types.approvals import (
    ApprovalDecision,
    ApprovalRequest,
    ApprovalRule,
    EscalationStep,
    arguments_sha256,
)
from smyth_temporal.types.quorum import Quorum

NAMES = ("alice", "bob", "carol", "dave", "erin")
ROLES = ("approver", "finance", "admin", "viewer")

rules = st.builds(
    ApprovalRule,
    roles=st.lists(st.sampled_from(ROLES), min_size=1, max_size=2, unique=True).map(tuple),
    quorum=st.integers(1, 4),
    forbid_requester=st.booleans(),
    reject_on_any=st.booleans(),
    escalation=st.lists(st.lists(st.sampled_from(ROLES), max_size=2, unique=True), max_size=2).map(
        lambda steps: tuple(
            EscalationStep(after=timedelta(minutes=i + 1), roles=tuple(r))
            for i, r in enumerate(steps)
        )
    ),
)
decisions = st.builds(
    ApprovalDecision,
    by=st.sampled_from(NAMES),
    approved=st.booleans(),
    role=st.none() | st.sampled_from(ROLES),
)
actions = st.lists(decisions | st.just("escalate"), max_size=25)


def allowed_roles(rule: ApprovalRule, escalated: int) -> set[str]:
    """The roles that may decide after ``escalated`` steps, computed apart from ``Quorum``."""
    return set(rule.roles).union(*(s.roles for s in rule.escalation[:escalated]))


@given(rule=rules, requester=st.none() | st.sampled_from(NAMES), script=actions)
def test_quorum_invariants_hold_for_any_decisions(
    rule: ApprovalRule, requester: str | None, script: list[ApprovalDecision | str]
) -> None:
    quorum = Quorum(rule=rule, requester=requester)
    counted: list[tuple[ApprovalDecision, set[str]]] = []  # each vote, the roles allowed then
    for action in script:
        if isinstance(action, str):
            quorum = quorum.escalate()
            continue
        settled_before = quorum.outcome != "pending"
        if quorum.refusal(action) is None:
            assert not settled_before, "a settled request took another decision"
            counted.append((action, allowed_roles(rule, quorum.escalated)))
            quorum = quorum.add(action)
        else:
            with pytest.raises(ValueError):
                quorum.add(action)
        voters = [v.by for v in quorum.votes]
        # The same approver counts once.
        assert len(voters) == len(set(voters))
        for vote, allowed in counted:
            # A role not allowed when it decided never counts.
            assert vote.role is None or vote.role in allowed
            # The requester never counts when forbidden.
            assert not (rule.forbid_requester and requester is not None and vote.by == requester)
        approvers = {v.by for v, _ in counted if v.approved}
        if quorum.outcome == "approved":
            assert len(approvers) >= rule.quorum
            assert not (rule.reject_on_any and any(not v.approved for v, _ in counted))
        if rule.reject_on_any and any(not v.approved for v, _ in counted):
            assert quorum.outcome == "rejected"


def rule_of_two(**overrides: object) -> ApprovalRule:
    return ApprovalRule.model_validate({"roles": ("finance",), "quorum": 2, **overrides})


def vote(by: str, *, approved: bool = True, role: str | None = "finance") -> ApprovalDecision:
    return ApprovalDecision(by=by, approved=approved, role=role)


def test_two_of_three_needs_two_distinct_approvers() -> None:
    quorum = Quorum(rule=rule_of_two(), requester="ops").add(vote("alice"))
    assert quorum.outcome == "pending" and quorum.progress == "1 of 2"
    assert quorum.refusal(vote("alice")) == (
        "'alice' already approved it; each approver counts once (1 of 2)"
    )
    quorum = quorum.add(vote("bob"))
    assert quorum.outcome == "approved" and quorum.approvers == ("alice", "bob")
    assert quorum.refusal(vote("carol")) == "it is already approved (2 of 2)"


def test_the_requester_and_other_roles_are_refused() -> None:
    quorum = Quorum(rule=rule_of_two(), requester="ops")
    assert quorum.refusal(vote("ops")) == (
        "'ops' started the run and may not decide its own request"
    )
    assert quorum.refusal(vote("vera", role="viewer")) == (
        "role 'viewer' may not decide it (roles that may: finance)"
    )
    allowed = Quorum(rule=rule_of_two(forbid_requester=False), requester="ops")
    assert allowed.refusal(vote("ops")) is None


def test_escalation_widens_the_roles_step_by_step() -> None:
    step = EscalationStep(after=timedelta(hours=1), roles=("admin",))
    quorum = Quorum(rule=rule_of_two(escalation=(step,)))
    assert quorum.refusal(vote("root", role="admin")) is not None
    assert quorum.escalate().refusal(vote("root", role="admin")) is None
    assert quorum.escalate().escalate().escalated == 1


def test_a_rejection_rejects_unless_configured_otherwise() -> None:
    assert Quorum(rule=rule_of_two()).add(vote("alice", approved=False)).outcome == "rejected"
    patient = Quorum(rule=rule_of_two(reject_on_any=False)).add(vote("alice", approved=False))
    assert patient.outcome == "pending"
    assert patient.add(vote("bob", approved=False)).outcome == "rejected"


def test_edited_arguments_need_a_quorum_of_one() -> None:
    edit = ApprovalDecision(by="alice", approved=True, role="finance", arguments={"x": 1})
    assert Quorum(rule=rule_of_two()).refusal(edit) == "edited arguments need a quorum of 1, not 2"
    assert Quorum(rule=rule_of_two(quorum=1)).refusal(edit) is None


@given(rule=rules, requester=st.none() | st.sampled_from(NAMES), script=st.lists(decisions))
def test_the_run_s_check_never_lets_a_request_settle_below_its_quorum(
    rule: ApprovalRule, requester: str | None, script: list[ApprovalDecision]
) -> None:
    # What the update's validator and the signal handler run (check_decision), then
    # what the handler does with a decision it let through (count_vote).
    now = datetime(2026, 1, 1, tzinfo=UTC)
    request = ApprovalRequest(
        id="apr-1-call_1_0",
        tool="pay",
        call_id="call_1_0",
        step=1,
        arguments={},
        arguments_sha256=arguments_sha256({}),
        requested_at=now,
        deadline=now + timedelta(days=1),
        policy=rule,
        requested_by=requester,
    )
    for decision in script:
        try:
            check_decision(decision, {request.id: request}, lambda tool, arguments: {})
        except InvalidDecisionError:
            continue
        outcome = count_vote(request, decision)
        if outcome != "pending":
            request.status = outcome
    approvers = {v.by for v in request.votes if v.approved}
    assert len(request.votes) == len({v.by for v in request.votes})
    assert all(v.role is None or v.role in rule.roles for v in request.votes)
    assert requester not in {v.by for v in request.votes} or not rule.forbid_requester
    if request.status == "approved":
        assert len(approvers) >= rule.quorum
    if request.status != "pending":
        # Nothing counts once settled.
        assert request.votes[-1].approved == (request.status == "approved")
