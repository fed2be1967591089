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
from urllib.parse import quote

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
    "BudgetRelease",
    "BudgetReservation",
    "BudgetSummary",
    "Price",
    "PriceTable",
    "budget_workflow_id",
    "reservation_key",
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


def reservation_key(workflow_id: str, run_id: str, activity_id: str) -> str:
    """The key a model call reserves under: its run and its activity, each percent-encoded.

    Activity ids start again in every run of a workflow (continue-as-new, reset), so
    the run id is part of the key; the parts are encoded so that a ``/`` in a workflow
    id cannot make two calls' keys equal.

    Added in 0.8.0.
    """
    return "/".join(quote(part, safe="") for part in (workflow_id, run_id, activity_id))


class Price(BaseModel):
    """What a model charges, per million tokens.

    Added in 0.5.0.
    """

    # A price is a finite number of 0 or more: a NaN would make every limit check
    # false (a budget that grants everything), a negative one would refund spending.
    input: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    """Per million input (prompt) tokens not served from the cache."""
    output: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    """Per million output (completion) tokens."""
    cached_input: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """Per million cached input tokens (``None``: the ``input`` price).

    Changed in 0.8.0: every price must be a finite number of 0 or more."""
    cache_write: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """Per million input tokens written to the prompt cache (``None``: the ``input``
    price); Anthropic charges 1.25 times its input price (2 times with the 1-hour TTL).
    Added in 0.10.0."""

    def cost(self, usage: Usage) -> float:
        """What ``usage`` costs at these prices."""
        cached = min(usage.cached_tokens, usage.input_tokens)
        written = min(usage.cache_write_tokens, usage.input_tokens - cached)
        cached_price = self.input if self.cached_input is None else self.cached_input
        write_price = self.input if self.cache_write is None else self.cache_write
        return (
            (usage.input_tokens - cached - written) * self.input
            + cached * cached_price
            + written * write_price
            + usage.output_tokens * self.output
        ) / _PER_TOKENS


_PROVIDER_PREFIXES = frozenset({"openai", "openai-responses", "anthropic", "google"})
"""The prefixes ``models.default_provider`` routes by. Only these are dropped before
pricing: after any colon, a bare name's tag (``llama3:8b``) would price as ``8b``."""


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
        """The price of ``model``: its exact entry, else the longest matching glob.

        A model string with a provider's prefix (``anthropic:claude-sonnet-4-5``) is
        priced by its name (``claude-sonnet*``), as vendors name their models in price
        lists, unless an entry names the whole string; only when its name has no price
        do globs over the whole string (``anthropic:*``) apply. Changed in 0.10.0: the
        prefix is dropped.
        """
        if model in self.prices:
            return self.prices[model]
        prefix, sep, name = model.partition(":")
        if sep and name and prefix in _PROVIDER_PREFIXES:
            found = self._entry(name)
            if found is not None:
                return found
        return self._entry(model)

    def _entry(self, model: str) -> Price | None:
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
    """A model call asks to spend up to ``amount`` before it is made.

    Changed in 0.8.0: ``attempt``; ``amount`` must be a finite number of 0 or more.
    """

    key: str
    """The call (``reservation_key``: its run and activity), never the same for two calls."""
    amount: float = Field(ge=0, allow_inf_nan=False)
    """The most the call is expected to cost."""
    workflow_id: str = ""
    """The agent run that asks (for the summary)."""
    attempt: int = 0
    """The activity attempt that asks: each attempt that may reach the model holds its own
    reservation, a reservation sent again by one attempt holds once (0: a worker older
    than 0.8.0)."""


class BudgetGrant(BaseModel):
    """The budget's answer to a reservation."""

    granted: bool
    """Whether the call may go ahead."""
    reason: str = ""
    """Why not, in words (which limit, how much is left)."""


class BudgetCommit(BaseModel):
    """What a reserved call really cost.

    Changed in 0.8.0: ``attempt``; ``cost`` must be a finite number of 0 or more.
    """

    key: str
    """The call's reservation key."""
    cost: float = Field(ge=0, allow_inf_nan=False)
    """What the call cost."""
    attempt: int = 0
    """The activity attempt that made the call: each attempt that reached the model is
    counted, a commit sent again by the same attempt once (0: a worker older than 0.8.0)."""


class BudgetRelease(BaseModel):
    """A call that failed gives its reservation back.

    Added in 0.8.0 (before, the ``release`` update took the bare key, which it still
    accepts from older workers).
    """

    key: str
    """The call's reservation key."""
    attempt: int = 0
    """The attempt that failed: a later attempt's reservation of the same call stays."""


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
