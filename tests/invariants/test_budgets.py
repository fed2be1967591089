"""I3: a tenant's committed spend never passes its limit by more than what calls cost
beyond their reservations (so never, when every call costs at most what it reserved).

The ledger (``BudgetLedger``, the ``TenantBudget`` workflow's logic) is pure, so a
stateful Hypothesis machine drives it directly over many generated histories: calls of
several runs interleaved (two runs racing the last unit), continue-as-new of an agent
(activity ids start again) and of the budget itself (its state round-trips through
JSON), retried attempts, attempts that time out and still commit, commits sent twice,
releases, crashes between reserve and commit, and a clock crossing days and months.
A smaller property runs real agents on the dev server.
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    precondition,
    rule,
)
from temporalio.client import Client

from smyth_temporal import AgentClient, AgentInput, ModelHTTPError
from smyth_temporal.agent.budget import STALE_RESERVATION, BudgetLedger, BudgetState
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from smyth_temporal.types.budget import (
    BudgetCommit,
    BudgetLimits,
    BudgetRelease,
    BudgetReservation,
    Price,
    reservation_key,
)
from smyth_temporal.types.model import ModelRequest, ModelResponse
from tests.helpers.budget_agents import PRICES_TOML, Hopper, Shopper

QUARTERS = st.integers(min_value=0, max_value=12).map(lambda n: n / 4)
"""Amounts in quarters: exact in binary, so sums compare without a tolerance."""

_EXAMPLES = settings().max_examples
"""The profile's example count (``dev`` or ``ci``): the pure ledger takes many times it."""

START = datetime(2026, 1, 31, 22, 0, tzinfo=UTC)
"""Two hours before a new day and a new month."""


@dataclass
class Attempt:
    """One attempt of a call, as the model activity would make it."""

    key: str
    number: int
    amount: float
    cost: float
    at: datetime
    granted: bool = False
    spent: bool = False
    """It reached the model: the money is gone, whether or not it ever commits."""
    done: bool = False
    """It committed or released (an attempt that crashed is neither)."""


class LedgerMachine(RuleBasedStateMachine):
    """Drives one tenant's ledger the way concurrent model activities would."""

    attempts = Bundle("attempts")

    def __init__(self) -> None:
        super().__init__()
        self.ledger = BudgetLedger(BudgetState(tenant="acme"))
        self.now = START
        self.runs = itertools.count()
        self.run = f"run-{next(self.runs)}"
        self.activities = itertools.count(1)
        self.calls: list[str] = []
        self.tries: dict[str, int] = {}
        self.limits = BudgetLimits()
        self.committed: dict[tuple[str, int], float] = {}
        self.allowance: dict[str, float] = {}
        """Per day and month: what commits cost beyond the reservation they replaced."""
        self.expected: dict[str, float] = {}
        """Per day and month: what the attempts that committed cost, each counted once."""

    @initialize(daily=QUARTERS, monthly=QUARTERS)
    def set_limits(self, daily: float, monthly: float) -> None:
        self.limits = BudgetLimits(daily=daily, monthly=daily + monthly)
        self.ledger.set_limits(self.limits, self.now)

    @rule(more=QUARTERS)
    def raise_limits(self, more: float) -> None:
        # Limits only grow here: a limit lowered below what is spent is passed by the
        # operator's choice, not by a call.
        daily, monthly = self.limits.daily or 0.0, self.limits.monthly or 0.0
        self.limits = BudgetLimits(daily=daily + more, monthly=monthly + more)
        self.ledger.set_limits(self.limits, self.now)

    @rule(workflow_id=st.sampled_from(["a", "a/b", "b", "a%2Fb"]))
    def new_call(self, workflow_id: str) -> None:
        # Ids a model activity would have: the same workflow ids in every run, slashes.
        key = reservation_key(workflow_id, self.run, str(next(self.activities)))
        self.calls.append(key)

    @rule()
    def agent_continues_as_new(self) -> None:
        self.run = f"run-{next(self.runs)}"
        self.activities = itertools.count(1)  # activity ids start again in a new run

    @rule()
    def budget_continues_as_new(self) -> None:
        carried = BudgetState.model_validate_json(self.ledger.state.model_dump_json())
        self.ledger = BudgetLedger(carried)

    @precondition(lambda self: bool(self.calls))
    @rule(target=attempts, data=st.data(), amount=QUARTERS, extra=QUARTERS, over=st.booleans())
    def reserve(self, data: st.DataObject, amount: float, extra: float, over: bool) -> Attempt:
        # A new attempt of any call: its first, a retry after a crash, after a commit,
        # or beside an earlier attempt that timed out but still runs.
        key = data.draw(st.sampled_from(self.calls))
        number = self.tries[key] = self.tries.get(key, 0) + 1
        # Mostly a call costs at most what it reserved; sometimes more (the price of a
        # reply is known only after it is written).
        cost = amount + extra if over else max(amount - extra, 0.0)
        attempt = Attempt(key=key, number=number, amount=amount, cost=cost, at=self.now)
        grant = self.ledger.reserve(
            BudgetReservation(key=key, amount=amount, attempt=number), self.now
        )
        attempt.granted = grant.granted
        if not grant.granted:
            assert grant.reason  # a refusal always says why
        return attempt

    @rule(attempt=attempts)
    def reserve_again(self, attempt: Attempt) -> None:
        # The same attempt's reservation delivered twice holds once (while it holds).
        if not attempt.granted or attempt.done or self.now - attempt.at > STALE_RESERVATION:
            return
        before = self.ledger.summary().reserved
        reservation = BudgetReservation(
            key=attempt.key, amount=attempt.amount, attempt=attempt.number
        )
        assert self.ledger.reserve(reservation, self.now).granted
        assert self.ledger.summary().reserved == before

    @rule(attempt=attempts)
    def call_model(self, attempt: Attempt) -> None:
        if attempt.granted:
            attempt.spent = True

    @rule(attempt=attempts, twice=st.booleans())
    def commit(self, attempt: Attempt, twice: bool) -> None:
        if not attempt.spent or attempt.done:
            return
        held = self.ledger.summary().reserved
        commit = BudgetCommit(key=attempt.key, cost=attempt.cost, attempt=attempt.number)
        self.ledger.commit(commit, self.now)
        if twice:  # a commit sent again counts once
            self.ledger.commit(commit, self.now)
        released = held - self.ledger.summary().reserved
        attempt.done = True
        self.committed[(attempt.key, attempt.number)] = attempt.cost
        for period in self._periods():
            self.expected[period] = self.expected.get(period, 0.0) + attempt.cost
            beyond = max(attempt.cost - released, 0.0)
            self.allowance[period] = self.allowance.get(period, 0.0) + beyond

    @rule(attempt=consumes(attempts))
    def release(self, attempt: Attempt) -> None:
        # A call that failed before it reached the model gives its share back.
        if attempt.granted and not attempt.spent and not attempt.done:
            self.ledger.release(BudgetRelease(key=attempt.key, attempt=attempt.number), self.now)
            attempt.done = True

    @rule(attempt=consumes(attempts))
    def crash(self, attempt: Attempt) -> None:
        """The worker dies: the attempt says nothing more (its hold stays until stale)."""

    @rule(minutes=st.integers(min_value=1, max_value=3 * 60))
    def clock_moves(self, minutes: int) -> None:
        self.now += timedelta(minutes=minutes)
        self.ledger.roll(self.now)

    @invariant()
    def committed_spend_stays_within_the_limits(self) -> None:
        state = self.ledger.state
        day, month = self._periods()
        if state.day == day and self.limits.daily is not None:
            assert state.spent_today <= self.limits.daily + self.allowance.get(day, 0.0)
        if state.month == month and self.limits.monthly is not None:
            assert state.spent_this_month <= self.limits.monthly + self.allowance.get(month, 0.0)

    @invariant()
    def every_commit_is_counted_once(self) -> None:
        state = self.ledger.state
        day, month = self._periods()
        if state.day == day:
            assert state.spent_today == self.expected.get(day, 0.0)
        if state.month == month:
            assert state.spent_this_month == self.expected.get(month, 0.0)

    @invariant()
    def nothing_is_held_past_its_time(self) -> None:
        for held in self.ledger.state.held.values():
            assert self.now - held.at <= STALE_RESERVATION

    def _periods(self) -> tuple[str, str]:
        return self.now.strftime("%Y-%m-%d"), self.now.strftime("%Y-%m")


LedgerMachine.TestCase.settings = settings(max_examples=5 * _EXAMPLES, stateful_step_count=50)
test_the_ledger_keeps_committed_spend_within_the_limits = LedgerMachine.TestCase


@settings(max_examples=5 * _EXAMPLES)
@given(
    parts=st.tuples(st.text(), st.text(), st.text()),
    others=st.tuples(st.text(), st.text(), st.text()),
)
def test_reservation_keys_of_different_calls_never_collide(
    parts: tuple[str, str, str], others: tuple[str, str, str]
) -> None:
    # "a/b" + "c" and "a" + "b/c" were one key; "#" separates an attempt from its key.
    key = reservation_key(*parts)
    assert (key == reservation_key(*others)) == (parts == others)
    assert "#" not in key


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -1.0])
def test_a_price_that_would_disable_or_refund_a_budget_is_refused(bad: float) -> None:
    # A NaN price made every reservation's amount NaN, and every limit check with a
    # NaN in the held amounts false: the tenant's budget granted everything, for good.
    for field in ("input", "output", "cached_input"):
        with pytest.raises(ValueError, match=field):
            Price.model_validate({field: bad})
    with pytest.raises(ValueError, match="amount"):
        BudgetReservation(key="k", amount=bad)
    with pytest.raises(ValueError, match="cost"):
        BudgetCommit(key="k", cost=bad)


def test_a_retry_after_a_commit_is_checked_against_the_limit_again() -> None:
    ledger = BudgetLedger(BudgetState(tenant="acme", limits=BudgetLimits(daily=3.0)))
    key = reservation_key("wf", "run", "1")
    for attempt in (1, 2):
        granted = ledger.reserve(BudgetReservation(key=key, amount=1.5, attempt=attempt), START)
        assert granted.granted
        ledger.commit(BudgetCommit(key=key, cost=1.5, attempt=attempt), START)
    third = ledger.reserve(BudgetReservation(key=key, amount=1.5, attempt=3), START)
    assert not third.granted
    assert "over its daily budget: 3.0000 spent" in third.reason
    assert ledger.summary().spent_today == 3.0  # both attempts reached the model


def test_attempts_that_time_out_and_go_on_never_share_one_reservation() -> None:
    # A heartbeat timeout schedules a retry while the first attempt still runs; both
    # reach the model. Sharing one hold let every further retry through unchecked.
    ledger = BudgetLedger(BudgetState(tenant="acme", limits=BudgetLimits(daily=2.0)))
    key = reservation_key("wf", "run", "1")
    assert ledger.reserve(BudgetReservation(key=key, amount=1.0, attempt=1), START).granted
    assert ledger.reserve(BudgetReservation(key=key, amount=1.0, attempt=2), START).granted
    assert not ledger.reserve(BudgetReservation(key=key, amount=1.0, attempt=3), START).granted
    ledger.commit(BudgetCommit(key=key, cost=1.0, attempt=1), START)  # the first goes on
    assert ledger.summary().reserved == 1.0  # the second attempt's hold stays
    ledger.release(BudgetRelease(key=key, attempt=1), START)  # too late: nothing to drop
    assert ledger.summary().reserved == 1.0


def test_the_release_update_still_takes_a_bare_key_from_older_workers() -> None:
    # An old worker's reservation (no attempt) is found by its bare key.
    ledger = BudgetLedger(BudgetState(tenant="acme"))
    ledger.reserve(BudgetReservation(key="wf/1", amount=1.0), START)
    ledger.release(BudgetRelease(key="wf/1"), START)
    assert ledger.summary().in_flight == 0


# -- the same guarantee with real agents on the dev server ------------------------------

quote = tool_call("get_quote", symbol="ACME")
_TENANTS = itertools.count()


@pytest.fixture(autouse=True)
def prices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "prices.toml"
    path.write_text(PRICES_TOML)
    monkeypatch.setenv("SMYTH_PRICES_FILE", str(path))
    return path


@settings(max_examples=max(_EXAMPLES // 10, 2))
@given(
    limit=st.integers(min_value=0, max_value=16),
    shoppers=st.integers(min_value=1, max_value=3),
    hoppers=st.integers(min_value=0, max_value=2),
    flaky=st.booleans(),
)
@example(limit=16, shoppers=2, hoppers=1, flaky=True)  # always: retries and continue-as-new
async def test_concurrent_agents_never_push_a_tenant_past_its_limit(
    client: Client,
    agents: AgentClient,
    task_queue: str,
    limit: int,
    shoppers: int,
    hoppers: int,
    flaky: bool,
) -> None:
    # Each call costs 1.0 and reserves more: a tenant's recorded spend is exactly what
    # its agents spent, and never more than its limit. Flaky, every other second call
    # fails (a 503): its attempt releases, and its retry reserves again.
    tenant = f"i3-{task_queue}-{next(_TENANTS)}"
    agents.task_queue = task_queue
    failures = itertools.cycle([flaky, False])

    def second(request: ModelRequest) -> ModelResponse:
        if next(failures):
            raise ModelHTTPError("overloaded", status_code=503, retryable=True)
        return quote

    model = ScriptedModel([quote, second, quote, reply("Done.")])
    async with agent_worker(client, Shopper, Hopper, model=model, task_queue=task_queue):
        assert await agents.wait_for_worker(timeout=30)
        await agents.budgets.set(tenant, daily=float(limit))
        kinds = [Shopper] * shoppers + [Hopper] * hoppers
        handles = [
            await agents.start(kind, AgentInput(prompt="Shop.", tenant=tenant)) for kind in kinds
        ]
        results = await asyncio.gather(*(agents.result(h.id) for h in handles))
        summary = await agents.budgets.show(tenant)
    assert summary is not None
    spent = sum(r.usage.cost for r in results)
    assert summary.spent_today == spent
    assert spent <= limit
    assert (summary.reserved, summary.in_flight) == (0.0, 0)
    assert all(r.status in {"completed", "over_budget"} for r in results)
