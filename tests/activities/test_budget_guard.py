"""The activities' budget guard against the tenant's budget workflow, on a real dev server."""

from __future__ import annotations

import asyncio

import pytest
from temporalio.client import Client
from temporalio.testing import ActivityEnvironment

from smyth_temporal import AgentClient
from smyth_temporal.activities._budget import BudgetGuard
from smyth_temporal.testing import ScriptedModel, agent_worker
from smyth_temporal.types.budget import Price, PriceTable
from smyth_temporal.types.messages import Message
from smyth_temporal.types.model import ModelRequest
from tests.helpers.budget_agents import PRICED_MODEL, Shopper


async def test_a_call_cancelled_after_the_model_answered_still_counts_its_cost(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    # An interrupt cancels the model activity; arriving while it commits, it left the
    # money spent uncounted and the reservation held for hours.
    tenant = f"cancelled-{task_queue}"
    agents.task_queue = task_queue
    guard = BudgetGuard(PriceTable.of({PRICED_MODEL: Price(input=1.0, output=1.0)}))
    request = ModelRequest(
        model=PRICED_MODEL, messages=[Message(role="user", content="Hi")], tenant=tenant
    )

    async def call() -> None:
        key = await guard.reserve(request)
        assert key is not None
        committing = asyncio.create_task(guard.commit(tenant, key, 1.0))
        await asyncio.sleep(0)  # the commit is on its way
        committing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await committing

    async with agent_worker(client, Shopper, model=ScriptedModel([]), task_queue=task_queue):
        assert await agents.wait_for_worker(timeout=30)
        await agents.budgets.set(tenant, daily=10.0)
        await ActivityEnvironment(client).run(call)
        summary = await agents.budgets.show(tenant)
        for _ in range(200):  # the commit goes on after the cancel (a bound, not a timing)
            if summary is None or summary.in_flight == 0:
                break
            await asyncio.sleep(0.05)
            summary = await agents.budgets.show(tenant)
    assert summary is not None
    assert (summary.spent_today, summary.in_flight) == (1.0, 0)
