"""``TenantBudget``: one long-lived workflow per tenant that keeps its spending.

Workflow code. Model calls reserve their likely cost before they are made, commit
what they cost after, and release the reservation when they fail; updates run one at
a time in the workflow, so concurrent agents can never both spend the last of a
budget, and the state lives in history, so a crashed worker loses no reservation.
Spending is counted per UTC day and month (by the workflow's clock); the run
continues as new every few hundred updates, carrying its state.
"""

from __future__ import annotations

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
    BudgetReservation,
    BudgetSummary,
)

__all__ = ["BudgetState", "TenantBudget", "VersionedTenantBudget"]

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
    committed: list[str] = Field(default_factory=list)
    """Keys of recent commits: a commit sent again (a retried activity) counts once."""
    refused: int = 0


@workflow.defn(name=BUDGET_WORKFLOW)
class TenantBudget:
    """A tenant's daily and monthly budget: reserve, commit, release."""

    @workflow.init
    def __init__(self, state: BudgetState) -> None:
        self.state = state
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
        self._roll().limits = limits
        return self.summary()

    @workflow.update(name=BUDGET_RESERVE_UPDATE)
    def reserve(self, reservation: BudgetReservation) -> BudgetGrant:
        """Hold ``amount`` for a call, unless a limit would be passed."""
        self._updates += 1
        state = self._roll()
        if reservation.key in state.held or reservation.key in state.committed:
            return BudgetGrant(granted=True)  # a retried attempt of a call already counted
        problem = self._over(reservation.amount)
        if problem:
            state.refused += 1
            return BudgetGrant(granted=False, reason=problem)
        state.held[reservation.key] = _Held(
            amount=reservation.amount, at=workflow.now(), workflow_id=reservation.workflow_id
        )
        return BudgetGrant(granted=True)

    @workflow.update(name=BUDGET_COMMIT_UPDATE)
    def commit(self, commit: BudgetCommit) -> None:
        """Count what a call cost, in place of its reservation."""
        self._updates += 1
        state = self._roll()
        if commit.key in state.committed:
            return
        state.held.pop(commit.key, None)
        state.spent_today += commit.cost
        state.spent_this_month += commit.cost
        state.committed = [*state.committed[-(_COMMITTED_KEPT - 1) :], commit.key]

    @workflow.update(name=BUDGET_RELEASE_UPDATE)
    def release(self, key: str) -> None:
        """Drop a failed call's reservation."""
        self._updates += 1
        self._roll().held.pop(key, None)

    @workflow.query(name=BUDGET_SUMMARY_QUERY)
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

    def _roll(self) -> BudgetState:
        """Start a new day or month when the clock says so; drop stale reservations."""
        state, now = self.state, workflow.now()
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
