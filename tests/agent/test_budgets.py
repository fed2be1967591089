"""Budgets in money, on a real dev server: per run, passed to sub-agents, per tenant.

The worker's price table (``SMYTH_PRICES_FILE``) makes every scripted call of
``priced-model`` cost exactly 1.0, so the arithmetic below is exact.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowUpdateFailedError

from smyth_temporal import AgentClient, AgentInput, ClientError, InvalidDecisionError
from smyth_temporal.testing import ScriptedAgents, ScriptedModel, agent_worker, reply, tool_call
from smyth_temporal.types.agent import TERMINAL_STATUSES
from smyth_temporal.types.approvals import ApprovalRequest
from smyth_temporal.types.budget import (
    BUDGET_COMMIT_UPDATE,
    BUDGET_LIMITS_UPDATE,
    BUDGET_RELEASE_UPDATE,
    BUDGET_RESERVE_UPDATE,
    BudgetCommit,
    BudgetGrant,
    BudgetLimits,
    BudgetRelease,
    BudgetReservation,
    Price,
    PriceTable,
    budget_workflow_id,
)
from smyth_temporal.types.messages import Usage
from tests.helpers.budget_agents import (
    PRICES_TOML,
    ROUTED_PRICES_TOML,
    AskingSpender,
    Boss,
    Hopper,
    Intern,
    PatientSpender,
    Routed,
    Shopper,
    Spender,
)
from tests.helpers.cli_support import assert_one_error_line, run_smyth, spawn_worker, stop_process

quote = tool_call("get_quote", symbol="ACME")


@pytest.fixture(autouse=True)
def prices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "prices.toml"
    path.write_text(PRICES_TOML)
    monkeypatch.setenv("SMYTH_PRICES_FILE", str(path))
    return path


def test_prices_turn_usage_into_cost() -> None:
    table = PriceTable.of(
        {
            "gpt-4o-mini*": {"input": 0.15, "output": 0.60, "cached_input": 0.075},
            "gpt-4o*": Price(input=2.5, output=10.0),
        }
    )
    usage = Usage(input_tokens=1_000_000, cached_tokens=400_000, output_tokens=100_000)
    # The most specific glob wins; cached input tokens are priced apart.
    assert table.cost("gpt-4o-mini-2024-07-18", usage) == pytest.approx(
        0.6 * 0.15 + 0.4 * 0.075 + 0.1 * 0.60
    )
    assert table.cost("gpt-4o", usage) == pytest.approx(2.5 + 1.0)
    assert table.cost("llama3", usage) == 0.0
    assert (usage + usage).cached_tokens == 800_000


async def test_a_run_stops_at_its_max_cost(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    model = ScriptedModel([quote, quote, quote, quote, reply("Done.")])
    async with agent_worker(client, Spender, model=model, task_queue=task_queue):
        handle = await agents.start(Spender, "Keep quoting.")
        result = await agents.result(handle.id)
        state = await agents.state(handle.id)
    # The bound is checked before each call: 2.0 < 2.5 allows a third, then it stops.
    assert (result.status, result.steps) == ("over_budget", 3)
    assert result.usage.cost == pytest.approx(3.0)
    assert state.usage.cost == pytest.approx(3.0)


async def test_a_sub_agents_cost_counts_against_its_parent(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    boss = ScriptedModel([tool_call("delegate", agent="Intern", task="Quote."), quote, reply("x")])
    intern = ScriptedModel([quote, quote, quote, quote, reply("Quoted.")])
    async with agent_worker(
        client, Boss, Intern, model=ScriptedAgents(Boss=boss, Intern=intern), task_queue=task_queue
    ):
        handle = await agents.start(Boss, "Get it quoted.")
        result = await agents.result(handle.id)
        child = await agents.state(f"{handle.id}/Intern-1")
    # Boss spent 1.0, leaving the intern 2.5: it stops after its third call (3.0).
    assert child.status == "over_budget"
    assert child.usage.cost == pytest.approx(3.0)
    # The intern's 3.0 counts as the boss's: 4.0 >= 3.5, so the boss stops too.
    assert result.status == "over_budget"
    assert result.usage.cost == pytest.approx(4.0)
    assert len(boss.requests) == 1


async def test_concurrent_agents_never_overspend_their_tenants_budget(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    tenant = f"thrifty-{task_queue}"
    agents.task_queue = task_queue
    model = ScriptedModel([quote, quote, quote, reply("Done.")])  # 4.0 a run
    async with agent_worker(client, Shopper, model=model, task_queue=task_queue):
        assert await agents.wait_for_worker(timeout=30)
        limits = await agents.budgets.set(tenant, daily=5.0)
        assert limits.limits.daily == 5.0
        handles = [
            await agents.start(Shopper, AgentInput(prompt="Shop.", tenant=tenant)) for _ in range(6)
        ]
        results = await asyncio.gather(*(agents.result(h.id) for h in handles))
        summary = await agents.budgets.show(tenant)
    assert summary is not None
    statuses = sorted(r.status for r in results)
    assert set(statuses) <= {"completed", "over_budget"}  # none failed
    assert "over_budget" in statuses
    spent = sum(r.usage.cost for r in results)
    assert summary.spent_today == pytest.approx(spent)
    # Reservations are checked one at a time in the budget workflow: the most a
    # tenant can go over is what one call costs beyond its reservation.
    assert spent <= 5.0 + 1.0
    assert (summary.reserved, summary.in_flight) == (0.0, 0)
    assert summary.refused >= 1


async def test_continuing_as_new_never_bypasses_the_tenants_budget(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    # Every run of the chain starts its activity ids again: keyed by workflow id and
    # activity id, each run's first call found the first run's commit and was granted
    # unchecked (10.0 spent against 8.0, 1.0 recorded).
    tenant = f"hopper-{task_queue}"
    agents.task_queue = task_queue
    model = ScriptedModel([quote] * 9 + [reply("Done.")])  # 10.0 if nothing stops it
    async with agent_worker(client, Hopper, model=model, task_queue=task_queue):
        assert await agents.wait_for_worker(timeout=30)
        await agents.budgets.set(tenant, daily=8.0)
        handle = await agents.start(Hopper, AgentInput(prompt="Shop.", tenant=tenant))
        result = await agents.result(handle.id)
        state = await agents.state(handle.id)
        summary = await agents.budgets.show(tenant)
    assert summary is not None
    assert state.generation > 2  # it did continue as new along the way
    assert result.status == "over_budget"
    assert summary.spent_today == pytest.approx(result.usage.cost)  # every call counted
    assert result.usage.cost <= 8.0
    assert summary.refused == 1


async def test_a_model_without_a_price_answered_by_one_with_a_price_counts_against_the_budget(
    client: Client, agents: AgentClient, task_queue: str, prices: Path
) -> None:
    # The call is priced by the model that answered (a router, an alias), but only a
    # requested model with a price reserved and committed: the tenant's budget never
    # saw any of it.
    prices.write_text(ROUTED_PRICES_TOML)
    tenant = f"routed-{task_queue}"
    agents.task_queue = task_queue
    model = ScriptedModel([quote, quote, quote, reply("Done.")])  # 4.0 if nothing stops it
    async with agent_worker(client, Routed, model=model, task_queue=task_queue):
        assert await agents.wait_for_worker(timeout=30)
        await agents.budgets.set(tenant, daily=2.0)
        handle = await agents.start(Routed, AgentInput(prompt="Shop.", tenant=tenant))
        result = await agents.result(handle.id)
        summary = await agents.budgets.show(tenant)
    assert summary is not None
    assert summary.spent_today == result.usage.cost
    # Its price is known only once it answered: the last call granted passes the limit
    # by at most its own price.
    assert (result.status, result.usage.cost) == ("over_budget", 3.0)


async def test_the_budget_survives_a_worker_sigkill(
    client: Client, agents: AgentClient, address: str, task_queue: str, tmp_path: Path
) -> None:
    tenant = f"durable-{task_queue}"
    agents.task_queue = task_queue

    def worker(name: str) -> subprocess.Popen[bytes]:
        return spawn_worker(
            ["tests.helpers.budget_agents:Shopper"],
            model="tests.helpers.cli_models:scripted",
            address=address,
            task_queue=task_queue,
            log=tmp_path / f"{name}.log",
        )

    first = worker("first")
    try:
        await agents.budgets.set(tenant, daily=10.0, monthly=100.0)
        handle = client.get_workflow_handle(budget_workflow_id(tenant))
        for key in ("k1", "k2"):
            grant = await handle.execute_update(
                BUDGET_RESERVE_UPDATE,
                BudgetReservation(key=key, amount=3.0),
                result_type=BudgetGrant,
            )
            assert grant.granted
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    second = worker("second")
    try:
        summary = await agents.budgets.show(tenant)
        assert summary is not None
        assert (summary.reserved, summary.in_flight) == (6.0, 2)
        refused = await handle.execute_update(
            BUDGET_RESERVE_UPDATE, BudgetReservation(key="k3", amount=5.0), result_type=BudgetGrant
        )
        assert not refused.granted
        assert "over its daily budget: 0.0000 spent and 6.0000 reserved of 10.0000" in (
            refused.reason
        )
        await handle.execute_update(BUDGET_COMMIT_UPDATE, BudgetCommit(key="k1", cost=2.0))
        await handle.execute_update(BUDGET_COMMIT_UPDATE, BudgetCommit(key="k1", cost=2.0))
        summary = await agents.budgets.show(tenant)
        assert summary is not None
        assert (summary.spent_today, summary.spent_this_month) == (2.0, 2.0)  # counted once
        assert (summary.reserved, summary.in_flight) == (3.0, 1)

        # The same budget through the real CLI.
        where = ("--tenant", tenant, "--address", address, "--task-queue", task_queue)
        shown = run_smyth("budget", "show", *where, "--json").json()
        assert (shown["spent_today"], shown["reserved"], shown["limits"]["daily"]) == (
            2.0,
            3.0,
            10.0,
        )
        changed = run_smyth("budget", "set", *where, "--daily", "none")
        assert changed.code == 0, changed.err
        assert "today       2.0000 of none" in changed.out
        assert "this month  2.0000 of 100" in changed.out
        bad = run_smyth("budget", "set", *where, "--monthly", "-3")
        assert_one_error_line(bad, "the monthly budget must be a number of 0 or more")
        usage = run_smyth("budget", "set", *where)
        assert usage.code == 2 and "give --daily or --monthly" in usage.err

        # Past the client's checks, the budget itself refuses a negative limit.
        with pytest.raises(WorkflowUpdateFailedError):
            await handle.execute_update(BUDGET_LIMITS_UPDATE, BudgetLimits(daily=-1.0))
        # A worker older than 0.8.0 releases by the bare key; a newer one by attempt.
        await handle.execute_update(BUDGET_RELEASE_UPDATE, "k2")
        await handle.execute_update(BUDGET_RELEASE_UPDATE, BudgetRelease(key="k2", attempt=1))
        summary = await agents.budgets.show(tenant)
        assert summary is not None and (summary.in_flight, summary.limits.monthly) == (0, 100.0)
    finally:
        stop_process(second)
    nobody = run_smyth("budget", "show", "--tenant", "nobody", "--address", address)
    assert (nobody.code, nobody.out) == (0, "tenant 'nobody' has no budget\n"), nobody.err


async def test_budget_limits_are_checked(agents: AgentClient, task_queue: str) -> None:
    agents.task_queue = task_queue
    assert await agents.budgets.show(f"nobody-{task_queue}") is None
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ClientError, match="the daily budget must be a number of 0 or more"):
            await agents.budgets.set(f"t-{task_queue}", daily=bad)
    # The budget lives on agent workers: without one, a clear error, not a hang.
    with pytest.raises(ClientError, match="no worker answered for the budget of 't-"):
        await agents.budgets.set(f"t-{task_queue}", daily=1.0)


async def pending(agents: AgentClient, workflow_id: str, after: set[str]) -> ApprovalRequest:
    """The run's pending approval request, once there is one not in ``after``."""
    for _ in range(600):  # a bound on the polling, not a timing assertion
        waiting = (await agents.state(workflow_id)).pending_approvals
        fresh = [r for r in waiting if r.id not in after]
        if fresh:
            return fresh[0]
        await asyncio.sleep(0.05)
    raise AssertionError("no approval was asked for")


async def test_an_over_budget_run_asks_a_person_to_go_on(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    model = ScriptedModel([quote] * 6 + [reply("Done.")])
    async with agent_worker(client, AskingSpender, model=model, task_queue=task_queue):
        handle = await agents.start(AskingSpender, "Keep quoting.")
        first = await pending(agents, handle.id, set())
        assert first.tool == "continue_over_budget"
        assert first.arguments == {"spent": 2.0, "limit": 1.5, "extra": 1.5}
        assert first.reason and "spent 2 of its limit of 1.5" in first.reason
        with pytest.raises(InvalidDecisionError, match="extra"):
            await agents.approve(
                handle.id, by="ops", arguments={**first.arguments, "extra": "lots"}
            )
        await agents.approve(handle.id, by="ops", arguments={**first.arguments, "extra": 1.0})
        # 2.5 allowed now: one more call (3.0), then it asks again; rejected, it stops.
        second = await pending(agents, handle.id, {first.id})
        assert second.arguments == {"spent": 3.0, "limit": 2.5, "extra": 1.5}
        await agents.reject(handle.id, by="ops", comment="enough")
        result = await agents.result(handle.id)
    assert (result.status, result.steps) == ("over_budget", 3)
    assert result.usage.cost == pytest.approx(3.0)
    assert len(model.requests) == 3


async def test_an_approved_extension_outlives_fifty_later_decisions_and_continue_as_new(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    # Continue-as-new carries the 50 most recent decisions: an extension decided
    # before them was dropped, and the next run asked again for what was granted.
    orders = [tool_call("place_order", symbol="ACME", quantity=n) for n in range(51)]
    model = ScriptedModel([quote, quote, orders, reply("Done.")])
    async with agent_worker(client, PatientSpender, model=model, task_queue=task_queue):
        handle = await agents.start(PatientSpender, "Quote, then order.")
        extension = await pending(agents, handle.id, set())
        assert extension.tool == "continue_over_budget"
        await agents.approve(
            handle.id, extension.id, by="ops", arguments={**extension.arguments, "extra": 10.0}
        )
        decided = {extension.id}
        while len(decided) < 52:
            request = await pending(agents, handle.id, decided)
            assert request.tool == "place_order"
            await agents.reject(handle.id, request.id, by="ops", wait=False)
            decided.add(request.id)
        state = await agents.state(handle.id)
        for _ in range(600):  # until it finishes or asks again (a bound, not a timing)
            if state.status in TERMINAL_STATUSES or state.pending_approvals:
                break
            await asyncio.sleep(0.05)
            state = await agents.state(handle.id)
        assert state.pending_approvals == []
        result = await agents.result(handle.id)
    assert state.generation == 2
    assert (result.status, result.steps) == ("completed", 4)
    assert result.usage.cost == pytest.approx(4.0)
