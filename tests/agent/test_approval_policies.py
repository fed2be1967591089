"""Approval policies in a run: ``when``, quorum, roles, the requester, escalation and
timeouts (dev server and time-skipping server), continue-as-new, and old histories."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from smyth_temporal import (
    AgentClient,
    AgentInput,
    AgentNotFoundError,
    ApprovalDecision,
    ApprovalRequest,
    InvalidDecisionError,
)
from smyth_temporal.models import ModelRequest, ModelResponse
from smyth_temporal.testing import ScriptedModel, agent_worker, new_task_queue, reply, tool_call
from smyth_temporal.types import ApprovalEscalated
from tests.helpers.agents import read_ledger
from tests.helpers.policy_agents import (
    HOPS,
    CarefulTrader,
    OfflineTreasurer,
    QuorumRelay,
    Treasurer,
)


def echo(request: ModelRequest) -> ModelResponse:
    return reply(" | ".join(m.content or "" for m in request.messages if m.role == "tool"))


def executed(ledger: Path) -> list[tuple[str, Any]]:
    return [(e["tool"], e.get("amount", e.get("service"))) for e in read_ledger(ledger)]


async def pending_request(agents: AgentClient, workflow_id: str) -> ApprovalRequest:
    for _ in range(400):
        with contextlib.suppress(AgentNotFoundError):
            state = await agents.state(workflow_id)
            if state.pending_approvals:
                return state.pending_approvals[0]
        await asyncio.sleep(0.025)
    raise AssertionError("no approval request appeared")


async def listed(client: Client, query: str) -> list[str]:
    return [w.id async for w in client.list_workflows(query)]


async def test_a_payment_below_the_threshold_runs_unasked_above_it_waits_for_two(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = ScriptedModel(
        [tool_call("pay", amount=50, to="bob"), tool_call("pay", amount=20_000, to="acme"), echo]
    )
    async with agent_worker(client, Treasurer, model=model, task_queue=task_queue):
        handle = await agents.start(Treasurer, "Pay the bills")
        request = await pending_request(agents, handle.id)
        assert executed(ledger) == [("pay", 50)]
        assert request.policy is not None and request.policy.quorum == 2
        pinned = request.arguments_sha256
        first = await agents.approve(handle.id, request.id, by="alice", arguments_sha256=pinned)
        assert first is not None and first.request.status == "pending"
        assert [v.by for v in first.request.votes] == ["alice"]
        # The official CLI's query finds the run waiting for its second approver.
        query = f"WorkflowId = '{handle.id}' AND SmythApprovalProgress = '1/2'"
        for _ in range(200):
            if await listed(client, query):
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the run is not listed as waiting for a second approver")
        with pytest.raises(InvalidDecisionError, match="'alice' already approved it"):
            await agents.approve(handle.id, request.id, by="alice", arguments_sha256=pinned)
        assert executed(ledger) == [("pay", 50)]
        second = await agents.approve(handle.id, request.id, by="bob", arguments_sha256=pinned)
        assert second is not None and second.request.status == "approved"
        result = await agents.result(handle.id)
        kinds = [e.kind async for e in agents.events(handle.id)]
        state = await agents.state(handle.id)

    assert executed(ledger) == [("pay", 50), ("pay", 20_000)]
    assert result.output == "paid 50 to bob | paid 20000 to acme"
    assert kinds.count("approval_voted") == 1 and kinds.count("approval_decided") == 1
    [decided] = [r for r in state.approvals if r.id == request.id]
    assert [v.by for v in decided.votes] == ["alice", "bob"]
    assert decided.decision is not None and decided.decision.by == "bob"
    for _ in range(200):  # visibility catches up a moment later
        if not await listed(client, query):
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError("the run is still listed as waiting for a second approver")


async def test_one_rejection_rejects_a_quorum_request(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = ScriptedModel([tool_call("pay", amount=50_000, to="eve"), echo])
    async with agent_worker(client, Treasurer, model=model, task_queue=task_queue):
        handle = await agents.start(Treasurer, "Pay eve")
        request = await pending_request(agents, handle.id)
        await agents.approve(handle.id, request.id, by="alice")
        outcome = await agents.reject(handle.id, request.id, by="bob", comment="not eve")
        result = await agents.result(handle.id)
    assert outcome is not None and outcome.request.status == "rejected"
    assert executed(ledger) == []
    assert "rejected by bob: not eve" in result.output


async def test_a_decision_from_a_role_the_policy_does_not_allow_is_refused(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    # Roles come from keys; without keys a decision may still name one (trusted local use).
    model = ScriptedModel([tool_call("deploy", service="api"), echo])
    async with agent_worker(client, Treasurer, model=model, task_queue=task_queue):
        handle = await agents.start(Treasurer, "Deploy")
        request = await pending_request(agents, handle.id)
        viewer = ApprovalDecision(request_id=request.id, approved=True, by="vera", role="viewer")
        with pytest.raises(InvalidDecisionError, match="role 'viewer' may not decide it"):
            await agents.decide(handle.id, viewer)
        admin = ApprovalDecision(request_id=request.id, approved=True, by="root", role="admin")
        with pytest.raises(InvalidDecisionError, match="role 'admin' may not decide it"):
            await agents.decide(handle.id, admin)
        state = await agents.state(handle.id)
        await agents.approve(handle.id, request.id, by="alice")
        await agents.result(handle.id)
    # Refused decisions left no trace.
    assert state.pending_approvals[0].votes == []


async def test_the_run_s_starter_may_not_approve_its_own_request(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    model = ScriptedModel([tool_call("pay", amount=90_000, to="mallory"), echo])
    async with agent_worker(client, Treasurer, model=model, task_queue=task_queue):
        handle = await agents.start(Treasurer, AgentInput(prompt="Pay", started_by="mallory"))
        request = await pending_request(agents, handle.id)
        assert request.requested_by == "mallory"
        with pytest.raises(InvalidDecisionError, match="'mallory' started the run"):
            await agents.approve(handle.id, request.id, by="mallory")
        await agents.reject(handle.id, request.id, by="alice")
        await agents.result(handle.id)


async def test_escalation_widens_the_roles_then_the_deadline_rejects_on_a_dev_server(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    # hotfix: an admin may decide after 2 s, nobody has after 4 s: rejected.
    model = ScriptedModel([tool_call("hotfix", service="db"), echo])
    async with agent_worker(client, Treasurer, model=model, task_queue=task_queue):
        handle = await agents.start(Treasurer, "Patch the db")
        request = await pending_request(agents, handle.id)
        admin = ApprovalDecision(request_id=request.id, approved=True, by="root", role="admin")
        with pytest.raises(InvalidDecisionError, match="role 'admin' may not decide it"):
            await agents.decide(handle.id, admin)
        result = await agents.result(handle.id)
        events = [e async for e in agents.events(handle.id)]
        state = await agents.state(handle.id)
    [expired] = state.approvals
    assert expired.status == "expired" and expired.decision is not None
    assert expired.decision.by == "system:timeout" and not expired.decision.approved
    assert len(expired.escalated_at) == 1
    assert expired.escalated_at[0] - expired.requested_at >= timedelta(seconds=2)
    escalated = [e for e in events if isinstance(e, ApprovalEscalated)]
    assert len(escalated) == 1 and escalated[0].roles == ["approver", "admin"]
    # The escalation step is its own field: ``step`` stays the agent's step.
    assert (escalated[0].escalation, escalated[0].step) == (1, expired.step)
    assert "approval request expired" in result.output
    assert executed(ledger) == []


async def test_escalation_and_timeout_on_the_time_skipping_server(
    skipping: WorkflowEnvironment, ledger: Path
) -> None:
    queue = new_task_queue()
    agents = AgentClient(skipping.client, task_queue=queue)
    model = ScriptedModel(
        [tool_call("deploy", service="api"), tool_call("deploy", service="web"), echo]
    )
    async with agent_worker(skipping.client, OfflineTreasurer, model=model, task_queue=queue):
        handle = await agents.start(OfflineTreasurer, "Deploy api, then web")
        first = await pending_request(agents, handle.id)
        admin = ApprovalDecision(request_id=first.id, approved=True, by="root", role="admin")
        with pytest.raises(InvalidDecisionError, match="role 'admin' may not decide it"):
            await agents.decide(handle.id, admin)
        await skipping.sleep(timedelta(minutes=11))
        escalated = await pending_request(agents, handle.id)
        assert len(escalated.escalated_at) == 1
        await agents.decide(handle.id, admin)  # an admin may decide now
        second = await pending_request(agents, handle.id)
        assert second.id != first.id
        await skipping.sleep(timedelta(hours=1, minutes=1))
        result = await agents.result(handle.id)
        state = await agents.state(handle.id)

    assert executed(ledger) == [("deploy", "api")]
    statuses = {r.id: r.status for r in state.approvals}
    assert statuses == {first.id: "approved", second.id: "expired"}
    [web] = [r for r in state.approvals if r.id == second.id]
    assert web.decision is not None and web.decision.by == "system:timeout"
    assert len(web.escalated_at) == 1
    assert "deployed api" in result.output and "approval request expired" in result.output


async def test_a_half_decided_quorum_survives_continue_as_new(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = ScriptedModel([tool_call("pay", amount=75_000, to="acme"), reply("paid")])
    async with agent_worker(client, QuorumRelay, model=model, task_queue=task_queue):
        handle = await agents.start(QuorumRelay, "Pay acme")
        request = await pending_request(agents, handle.id)
        await agents.approve(handle.id, request.id, by="alice")
        while (await agents.state(handle.id)).generation < HOPS:
            await asyncio.sleep(0.05)
        carried = (await agents.state(handle.id)).pending_approvals
        with pytest.raises(InvalidDecisionError, match="'alice' already approved it"):
            await agents.approve(handle.id, request.id, by="alice")
        await agents.approve(handle.id, request.id, by="bob")
        await agents.signal(handle.id, "release")
        await agents.result(handle.id)
        state = await agents.state(handle.id)

    [waiting] = carried
    assert waiting.id == request.id and [v.by for v in waiting.votes] == ["alice"]
    [decided] = state.approvals
    assert decided.status == "approved" and [v.by for v in decided.votes] == ["alice", "bob"]
    assert executed(ledger) == [("pay", 75_000)]


async def test_an_agent_wide_policy_governs_tools_that_say_only_true(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    model = ScriptedModel([tool_call("sell", symbol="ACME", quantity=3), echo])
    async with agent_worker(client, CarefulTrader, model=model, task_queue=task_queue):
        handle = await agents.start(CarefulTrader, "Sell ACME")
        request = await pending_request(agents, handle.id)
        first = await agents.approve(handle.id, request.id, by="alice")
        second = await agents.approve(handle.id, request.id, by="bob")
        result = await agents.result(handle.id)
    assert request.policy is not None and request.policy.quorum == 2
    assert first is not None and first.request.status == "pending"
    assert second is not None and second.request.status == "approved"
    assert result.output == "sold 3 ACME"


# -- automatic reviewers -----------------------------------------------------------------


async def test_a_reviewer_rejects_at_once_with_its_reason(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = ScriptedModel([tool_call("refund", amount=5_000, to="acme"), echo])
    async with agent_worker(client, Treasurer, model=model, task_queue=task_queue):
        handle = await agents.start(Treasurer, "Refund acme")
        result = await agents.result(handle.id)
        state = await agents.state(handle.id)
    [request] = state.approvals
    assert request.status == "rejected" and request.decision is not None
    assert request.decision.by == "reviewer:guard"
    assert request.review is not None and request.review.applied
    assert "rejected by reviewer:guard: refunds over 1,000 need a ticket" in result.output
    assert executed(ledger) == []


async def test_a_reviewer_escalates_at_once_and_an_admin_may_then_decide(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = ScriptedModel([tool_call("refund", amount=20, to="unknown"), echo])
    async with agent_worker(client, Treasurer, model=model, task_queue=task_queue):
        handle = await agents.start(Treasurer, "Refund someone")
        for _ in range(400):
            request = await pending_request(agents, handle.id)
            if request.review is not None:
                break
            await asyncio.sleep(0.025)
        assert len(request.escalated_at) == 1  # an hour early: the reviewer said so
        assert request.review is not None and request.review.verdict == "escalate"
        admin = ApprovalDecision(request_id=request.id, approved=True, by="root", role="admin")
        await agents.decide(handle.id, admin)
        await agents.result(handle.id)
    assert executed(ledger) == [("refund", 20)]


async def test_a_reviewer_approves_only_where_the_policy_allows_it(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = ScriptedModel(
        [tool_call("refund", amount=20, to="acme"), tool_call("tip", amount=5), echo]
    )
    async with agent_worker(client, Treasurer, model=model, task_queue=task_queue):
        handle = await agents.start(Treasurer, "Refund acme, then tip")
        for _ in range(400):
            refund = await pending_request(agents, handle.id)
            if refund.review is not None:
                break
            await asyncio.sleep(0.025)
        # The reviewer said approve; refund's policy does not let it: still pending.
        assert refund.review is not None and refund.review.verdict == "approve"
        assert not refund.review.applied and refund.votes == []
        await agents.approve(handle.id, refund.id, by="alice")
        result = await agents.result(handle.id)  # tip: approved by its reviewer alone
        state = await agents.state(handle.id)
    tip = state.approvals[-1]
    assert tip.tool == "tip" and tip.status == "approved"
    assert tip.decision is not None and tip.decision.by == "reviewer:generous"
    assert executed(ledger) == [("refund", 20), ("tip", 5)]
    assert result.output == "refunded 20 to acme | tipped 5"


def auditor(request: ModelRequest) -> str:
    assert request.output is not None and request.output.name == "review"
    assert "Reject transfers abroad." in (request.messages[0].content or "")
    return '{"verdict": "reject", "reason": "abroad"}'


async def test_a_model_reviewer_rejects_with_its_reason(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = ScriptedModel([tool_call("transfer", amount=10, country="FR"), echo], judge=auditor)
    async with agent_worker(client, Treasurer, model=model, task_queue=task_queue):
        handle = await agents.start(Treasurer, "Transfer")
        result = await agents.result(handle.id)
    assert "rejected by reviewer:auditor: abroad" in result.output
    assert executed(ledger) == []
