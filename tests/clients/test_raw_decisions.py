"""A key may not send a decision (or an interrupt) as a raw signal or update: those say
who decided, and under an approval policy the role they carry decides whether they count.
``decide``/``interrupt`` record the key itself."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from temporalio.client import Client

from smyth_temporal import AccessDeniedError, AgentClient, ApprovalDecision, ApprovalOutcome
from smyth_temporal.security import Principal
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from smyth_temporal.types import (
    APPROVAL_SIGNAL,
    APPROVAL_UPDATE,
    INTERRUPT_UPDATE,
    Interrupt,
    InterruptOutcome,
)
from tests.helpers.policy_agents import Treasurer


async def test_an_operator_key_cannot_vote_as_someone_else_through_a_raw_update(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = ScriptedModel([tool_call("pay", amount=30_000, to="acme"), reply("paid")])
    operator = agents.acting_for(Principal(name="ops", tenant="default", role="operator"))
    async with agent_worker(client, Treasurer, model=model, task_queue=task_queue):
        handle = await agents.start(Treasurer, "Pay acme")
        while not (state := await agents.state(handle.id)).pending_approvals:
            await asyncio.sleep(0.025)
        request = state.pending_approvals[0]
        forged = ApprovalDecision(request_id=request.id, approved=True, by="alice", role="approver")
        with pytest.raises(AccessDeniedError, match="send it with decide"):
            await operator.update(handle.id, APPROVAL_UPDATE, forged, result_type=ApprovalOutcome)
        with pytest.raises(AccessDeniedError, match="send it with decide"):
            await operator.signal(handle.id, APPROVAL_SIGNAL, forged)
        with pytest.raises(AccessDeniedError, match="send it with decide"):
            await operator.update(
                handle.id, INTERRUPT_UPDATE, Interrupt(by="alice"), result_type=InterruptOutcome
            )
        # Its own methods still work, as the key: an operator may not decide at all.
        with pytest.raises(AccessDeniedError, match="may not decide approvals"):
            await operator.approve(handle.id, request.id, by="alice")
        assert (await agents.state(handle.id)).pending_approvals[0].votes == []
        await agents.reject(handle.id, request.id, by="bob")
        await agents.result(handle.id)
