"""Approval deadlines and long waits, on Temporal's time-skipping test server."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from smyth_temporal import AgentClient, AgentFailedError
from smyth_temporal.models import ModelRequest, ModelResponse
from smyth_temporal.testing import (
    ScriptedModel,
    agent_worker,
    new_task_queue,
    reply,
    tool_call,
)
from tests.helpers.agents import read_ledger
from tests.helpers.approval_agents import OfflineStrictTrader as StrictTrader
from tests.helpers.approval_agents import OfflineTrader as Trader


def executed(ledger: Path) -> list[str]:
    return [entry["tool"] for entry in read_ledger(ledger)]


def echo(request: ModelRequest) -> ModelResponse:
    return reply(" | ".join(m.content or "" for m in request.messages if m.role == "tool"))


async def wait_for_request(agents: AgentClient, workflow_id: str) -> None:
    for _ in range(200):
        if (await agents.state(workflow_id)).pending_approvals:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("no approval request appeared")


async def test_deadline_rejects_by_default(skipping: WorkflowEnvironment, ledger: Path) -> None:
    queue = new_task_queue()
    agents = AgentClient(skipping.client, task_queue=queue)
    model = ScriptedModel([tool_call("wire", amount=10_000), echo])
    async with agent_worker(skipping.client, Trader, model=model, task_queue=queue):
        handle = await agents.start(Trader, "Wire money")
        await wait_for_request(agents, handle.id)
        await skipping.sleep(timedelta(hours=24, minutes=1))
        result = await agents.result(handle.id)
        state = await agents.state(handle.id)

    assert executed(ledger) == []
    assert "approval request expired" in result.output
    request = state.approvals[0]
    assert request.status == "expired"
    assert request.decision is not None and request.decision.by == "system:timeout"
    assert request.deadline - request.requested_at == timedelta(hours=24)
    assert request.decided_at is not None
    assert request.deadline <= request.decided_at < request.deadline + timedelta(minutes=1)


async def test_deadline_can_approve_when_set_explicitly(
    skipping: WorkflowEnvironment, ledger: Path
) -> None:
    queue = new_task_queue()
    agents = AgentClient(skipping.client, task_queue=queue)
    model = ScriptedModel([tool_call("rebalance", target="60/40"), echo])
    async with agent_worker(skipping.client, Trader, model=model, task_queue=queue):
        handle = await agents.start(Trader, "Rebalance")
        await wait_for_request(agents, handle.id)
        await skipping.sleep(timedelta(hours=24, minutes=1))
        result = await agents.result(handle.id)
    assert result.output == "rebalanced to 60/40"
    assert executed(ledger) == ["rebalance"]


async def test_deadline_can_fail_the_run(skipping: WorkflowEnvironment, ledger: Path) -> None:
    queue = new_task_queue()
    agents = AgentClient(skipping.client, task_queue=queue)
    model = ScriptedModel([tool_call("close_account", reason="fraud"), echo])
    async with agent_worker(skipping.client, StrictTrader, model=model, task_queue=queue):
        handle = await agents.start(StrictTrader, "Close it")
        await wait_for_request(agents, handle.id)
        await skipping.sleep(timedelta(hours=24, minutes=1))
        with pytest.raises(AgentFailedError, match=r"expired .* without a decision"):
            await agents.result(handle.id)
    assert executed(ledger) == []


async def test_approval_after_three_days_resumes_the_run(
    skipping: WorkflowEnvironment, ledger: Path
) -> None:
    queue = new_task_queue()
    agents = AgentClient(skipping.client, task_queue=queue)
    model = ScriptedModel([tool_call("sell", symbol="ACME", quantity=3), echo])
    async with agent_worker(skipping.client, Trader, model=model, task_queue=queue):
        handle = await agents.start(Trader, "Sell ACME")
        await wait_for_request(agents, handle.id)
        await skipping.sleep(timedelta(days=3))
        state = await agents.state(handle.id)
        assert state.status == "awaiting_approval"  # the 7-day default deadline is ahead
        await agents.approve(handle.id, by="heidi", comment="back from holiday")
        result = await agents.result(handle.id)
        final = await agents.state(handle.id)

    assert result.output == "sold 3 ACME"
    assert executed(ledger) == ["sell"]
    request = final.approvals[0]
    assert request.decided_at is not None
    assert request.decided_at - request.requested_at >= timedelta(days=3)
