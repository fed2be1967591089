"""Budgets: prices of model calls, and a tenant's daily and monthly spending limits.

A ``PriceTable`` turns a call's ``Usage`` into ``Usage.cost`` on the worker, so the
cost is recorded in history with the call. A run stops at ``AgentConfig.max_cost``
(sub-agents' costs included); a tenant's calls stop at its budget, which one
long-lived workflow per tenant keeps (``TenantBudget``): every model call reserves
its likely cost there first, commits what it really cost after, or releases it.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping

from pydantic import BaseModel, Field

from smyth_temporal.types.messages import Usage

__all__ = [
    "BUDGET_COMMIT_UPDATE",
    "BUDGET_LIMITS_UPDATE",
    "BUDGET_RELEASE_UPDATE",
    "BUDGET_RESERVE_UPDATE",
    "BUDGET_SUMMARY_QUERY",
    "BUDGET_WORKFLOW",
    "BudgetCommit",
    "BudgetGrant",
    "BudgetLimits",
    "BudgetReservation",
    "BudgetSummary",
    "Price",
    "PriceTable",
    "budget_workflow_id",
]

BUDGET_WORKFLOW = "smyth.budget"
"""The workflow type of a tenant's budget."""
BUDGET_RESERVE_UPDATE = "reserve"
BUDGET_COMMIT_UPDATE = "commit"
BUDGET_RELEASE_UPDATE = "release"
BUDGET_LIMITS_UPDATE = "set_limits"
BUDGET_SUMMARY_QUERY = "summary"

_PER_TOKENS = 1_000_000


def budget_workflow_id(tenant: str) -> str:
    """The workflow id of ``tenant``'s budget (one per tenant and namespace)."""
    return f"smyth-budget/{tenant}"


class Price(BaseModel):
    """What a model charges, per million tokens.

    Added in 0.5.0.
    """

    input: float = 0.0
    """Per million input (prompt) tokens not served from the cache."""
    output: float = 0.0
    """Per million output (completion) tokens."""
    cached_input: float | None = None
    """Per million cached input tokens (``None``: the ``input`` price)."""

    def cost(self, usage: Usage) -> float:
        """What ``usage`` costs at these prices."""
        cached = min(usage.cached_tokens, usage.input_tokens)
        cached_price = self.input if self.cached_input is None else self.cached_input
        return (
            (usage.input_tokens - cached) * self.input
            + cached * cached_price
            + usage.output_tokens * self.output
        ) / _PER_TOKENS


class PriceTable(BaseModel):
    """Prices by model name; a name may be a glob (``gpt-4o-mini*``), the most specific wins.

    ```python
    table = PriceTable(prices={"gpt-4o-mini*": Price(input=0.15, output=0.6)})
    ```

    Added in 0.5.0.
    """

    prices: dict[str, Price] = Field(default_factory=dict)
    """Model name (or glob) to its price."""

    def price(self, model: str) -> Price | None:
        """The price of ``model``: its exact entry, else the longest matching glob."""
        if model in self.prices:
            return self.prices[model]
        matches = [p for p in self.prices if fnmatch.fnmatchcase(model, p)]
        return self.prices[max(matches, key=len)] if matches else None

    def cost(self, model: str, usage: Usage) -> float:
        """What ``usage`` of ``model`` costs (0 for a model without a price)."""
        price = self.price(model)
        return price.cost(usage) if price is not None else 0.0

    @classmethod
    def of(cls, prices: Mapping[str, Price | Mapping[str, float]]) -> PriceTable:
        """A table from ``{model: Price or {"input": .., "output": .., "cached_input": ..}}``."""
        return cls.model_validate({"prices": dict(prices)})


class BudgetLimits(BaseModel):
    """A tenant's spending limits, in the price table's currency.

    Added in 0.5.0.
    """

    daily: float | None = None
    """At most this much per UTC day (``None``: no daily limit)."""
    monthly: float | None = None
    """At most this much per UTC calendar month (``None``: no monthly limit)."""


class BudgetReservation(BaseModel):
    """A model call asks to spend up to ``amount`` before it is made."""

    key: str
    """The call (workflow id and activity id): the same for every attempt, so a retried
    attempt reserves once."""
    amount: float
    """The most the call is expected to cost."""
    workflow_id: str = ""
    """The agent run that asks (for the summary)."""


class BudgetGrant(BaseModel):
    """The budget's answer to a reservation."""

    granted: bool
    """Whether the call may go ahead."""
    reason: str = ""
    """Why not, in words (which limit, how much is left)."""


class BudgetCommit(BaseModel):
    """What a reserved call really cost."""

    key: str
    cost: float


class BudgetSummary(BaseModel):
    """A tenant's limits and spending, as its budget workflow holds them.

    Added in 0.5.0.
    """

    tenant: str
    limits: BudgetLimits
    day: str
    """The current UTC day (``YYYY-MM-DD``)."""
    spent_today: float = 0.0
    month: str
    """The current UTC month (``YYYY-MM``)."""
    spent_this_month: float = 0.0
    reserved: float = 0.0
    """Reserved by calls in flight, not yet committed or released."""
    in_flight: int = 0
    """Calls holding a reservation."""
    refused: int = 0
    """Reservations refused so far (this run of the budget workflow)."""
