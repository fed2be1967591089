"""``TenantBudget``: one long-lived workflow per tenant that keeps its spending.

Workflow code. Model calls reserve their likely cost before they are made, commit
what they cost after, and release the reservation when they fail; updates run one at
a time in the workflow, so concurrent agents can never both spend the last of a
budget, and the state lives in history, so a crashed worker loses no reservation.
Spending is counted per UTC day and month (by the workflow's clock); the run
continues as new every few hundred updates, carrying its state.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from pydantic import BaseModel, Field
from temporalio import workflow
from temporalio.common import VersioningBehavior

from smyth_temporal.types.budget import (
    BUDGET_COMMIT_UPDATE,
    BUDGET_LIMITS_UPDATE,
    BUDGET_RELEASE_UPDATE,
    BUDGET_RESERVE_UPDATE,
    BUDGET_SUMMARY_QUERY,
    BUDGET_WORKFLOW,
    BudgetCommit,
    BudgetGrant,
    BudgetLimits,
    BudgetRelease,
    BudgetReservation,
    BudgetSummary,
)

__all__ = ["BudgetLedger", "BudgetState", "TenantBudget", "VersionedTenantBudget"]

UPDATES_PER_RUN = 500
"""Updates a run takes before it continues as new (history stays small)."""

STALE_RESERVATION = timedelta(hours=2)
"""A reservation neither committed nor released this long is dropped: its call is
long over (a model call's timeout is minutes) and its activity gave up."""

_COMMITTED_KEPT = 2_000


class _Held(BaseModel):
    amount: float
    at: datetime
    workflow_id: str = ""


class BudgetState(BaseModel):
    """What a tenant's budget carries from run to run."""

    tenant: str
    limits: BudgetLimits = Field(default_factory=BudgetLimits)
    day: str = ""
    spent_today: float = 0.0
    month: str = ""
    spent_this_month: float = 0.0
    held: dict[str, _Held] = Field(default_factory=dict)
    """Reservations in flight, by attempt (``key#attempt``; before 0.8.0 the bare key)."""
    committed: list[str] = Field(default_factory=list)
    """Recent commits, by attempt: a commit sent again by one attempt counts once."""
    refused: int = 0


class BudgetLedger:
    """The budget's bookkeeping: pure, over a ``BudgetState`` and the time it is told.

    The one guarantee: committed spending passes a limit by at most what calls cost
    beyond their reservations. Every attempt of a call that may reach the model holds
    its likely cost before, and is refused when spending, what others hold and its own
    amount would pass a limit; its commit replaces the hold with what it cost.

    - Each attempt holds its own reservation: an attempt retried after a commit is a
      new call to the model, and so is one retried after a timeout while the earlier
      attempt may still be running (it may yet commit what it spent). An attempt that
      died without a word keeps its hold until ``STALE_RESERVATION``: whether it
      reached the model is unknown.
    - A reservation or commit sent again by one attempt counts once.
    - A release or commit touches its own attempt's hold only.

    Added in 0.8.0 (the ``TenantBudget`` workflow's logic, apart so it can be tested
    on its own).
    """

    def __init__(self, state: BudgetState) -> None:
        self.state = state

    def reserve(self, reservation: BudgetReservation, now: datetime) -> BudgetGrant:
        """Hold ``amount`` for a call, unless a limit would be passed."""
        state = self.roll(now)
        hold = _attempt_id(reservation.key, reservation.attempt)
        if hold in state.held:
            return BudgetGrant(granted=True)  # the same attempt asking again
        problem = self._over(reservation.amount)
        if problem:
            state.refused += 1
            return BudgetGrant(granted=False, reason=problem)
        state.held[hold] = _Held(
            amount=reservation.amount, at=now, workflow_id=reservation.workflow_id
        )
        return BudgetGrant(granted=True)

    def commit(self, commit: BudgetCommit, now: datetime) -> None:
        """Count what a call cost, in place of its reservation."""
        state = self.roll(now)
        done = _attempt_id(commit.key, commit.attempt)
        if done in state.committed:
            return
        state.held.pop(done, None)
        state.spent_today += commit.cost
        state.spent_this_month += commit.cost
        state.committed = [*state.committed[-(_COMMITTED_KEPT - 1) :], done]

    def release(self, release: BudgetRelease, now: datetime) -> None:
        """Drop a failed attempt's reservation."""
        self.roll(now).held.pop(_attempt_id(release.key, release.attempt), None)

    def set_limits(self, limits: BudgetLimits, now: datetime) -> None:
        """Replace the limits; spending so far stays."""
        self.roll(now).limits = limits

    def summary(self) -> BudgetSummary:
        """Limits, spending and reservations now."""
        state = self.state
        return BudgetSummary(
            tenant=state.tenant,
            limits=state.limits,
            day=state.day,
            spent_today=state.spent_today,
            month=state.month,
            spent_this_month=state.spent_this_month,
            reserved=sum(h.amount for h in state.held.values()),
            in_flight=len(state.held),
            refused=state.refused,
        )

    def roll(self, now: datetime) -> BudgetState:
        """Start a new day or month when ``now`` says so; drop stale reservations."""
        state = self.state
        day, month = now.strftime("%Y-%m-%d"), now.strftime("%Y-%m")
        if state.day != day:
            state.day, state.spent_today = day, 0.0
        if state.month != month:
            state.month, state.spent_this_month = month, 0.0
        stale = [k for k, h in state.held.items() if now - h.at > STALE_RESERVATION]
        for key in stale:
            del state.held[key]
        return state

    def _over(self, amount: float) -> str:
        state = self.state
        reserved = sum(h.amount for h in state.held.values())
        for name, limit, spent in (
            ("daily", state.limits.daily, state.spent_today),
            ("monthly", state.limits.monthly, state.spent_this_month),
        ):
            if limit is not None and spent + reserved + amount > limit:
                left = max(limit - spent - reserved, 0.0)
                return (
                    f"tenant {state.tenant!r} is over its {name} budget: {spent:.4f} spent and "
                    f"{reserved:.4f} reserved of {limit:.4f}; this call may cost {amount:.4f} "
                    f"({left:.4f} left)"
                )
        return ""


def _attempt_id(key: str, attempt: int) -> str:
    # A worker older than 0.8.0 (attempt 0) sent the bare key for all attempts. A new
    # key is percent-encoded, so "#" appears in none.
    return key if attempt == 0 else f"{key}#{attempt}"


@workflow.defn(name=BUDGET_WORKFLOW)
class TenantBudget:
    """A tenant's daily and monthly budget: reserve, commit, release."""

    @workflow.init
    def __init__(self, state: BudgetState) -> None:
        self.state = state
        self.ledger = BudgetLedger(state)
        self._updates = 0

    @workflow.run
    async def run(self, state: BudgetState) -> None:
        """Take updates until the run has had enough, then continue as new."""
        await workflow.wait_condition(
            lambda: self._updates >= UPDATES_PER_RUN and workflow.all_handlers_finished()
        )
        workflow.continue_as_new(self.state)

    @workflow.update(name=BUDGET_LIMITS_UPDATE)
    def set_limits(self, limits: BudgetLimits) -> BudgetSummary:
        """Replace the limits; spending so far stays."""
        self._updates += 1
        self.ledger.set_limits(limits, workflow.now())
        return self.summary()

    @set_limits.validator
    def _valid_limits(self, limits: BudgetLimits) -> None:
        # Refused before it is accepted (a negative limit would refuse even free calls).
        for name, limit in (("daily", limits.daily), ("monthly", limits.monthly)):
            if limit is not None and not (math.isfinite(limit) and limit >= 0):
                raise ValueError(f"the {name} budget must be a number of 0 or more, not {limit}")

    @workflow.update(name=BUDGET_RESERVE_UPDATE)
    def reserve(self, reservation: BudgetReservation) -> BudgetGrant:
        """Hold ``amount`` for a call, unless a limit would be passed."""
        self._updates += 1
        return self.ledger.reserve(reservation, workflow.now())

    @workflow.update(name=BUDGET_COMMIT_UPDATE)
    def commit(self, commit: BudgetCommit) -> None:
        """Count what a call cost, in place of its reservation."""
        self._updates += 1
        self.ledger.commit(commit, workflow.now())

    @workflow.update(name=BUDGET_RELEASE_UPDATE)
    def release(self, release: BudgetRelease | str) -> None:
        """Drop a failed call's reservation (a bare key: from a worker older than 0.8.0)."""
        self._updates += 1
        if isinstance(release, str):
            release = BudgetRelease(key=release)
        self.ledger.release(release, workflow.now())

    @workflow.query(name=BUDGET_SUMMARY_QUERY)
    def summary(self) -> BudgetSummary:
        """Limits, spending and reservations now."""
        return self.ledger.summary()


# A budget lives for months: pinned to the build that started it (what versioned workers
# do by default), it would stall every model call of its tenant once that build's
# workers are retired. On versioned workers it moves to the current build instead; its
# code is a small state machine over updates, kept compatible. (The server refuses a
# versioning behavior from an unversioned worker, hence a class of its own.)
@workflow.defn(name=BUDGET_WORKFLOW, versioning_behavior=VersioningBehavior.AUTO_UPGRADE)
class VersionedTenantBudget(TenantBudget):
    """``TenantBudget`` for workers of a Worker Deployment: it follows the current build."""

    @workflow.run
    async def run(self, state: BudgetState) -> None:
        """As ``TenantBudget.run``."""
        await super().run(state)
