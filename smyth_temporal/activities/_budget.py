"""The model activity's side of budgets: price a call, and reserve, commit or release it.

A tenant has a budget when its ``TenantBudget`` workflow exists (``smyth budget
set``). A call of a model with a price reserves its likely cost there first (the
prompt's size and the reply's token bound, priced as if nothing were cached), and
commits what it really cost after; a call that fails releases its reservation. The
key names the run and the call (``reservation_key``), never the same for two calls,
across continue-as-new too; every message carries its attempt, because every attempt
may reach the model: each is checked against the limits and holds, commits or
releases its own reservation (see ``agent.budget.BudgetLedger``).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import structlog
from temporalio import activity
from temporalio.client import WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from smyth_temporal.exceptions import BudgetExceededError
from smyth_temporal.models import ModelProvider, reply_bound
from smyth_temporal.types.budget import (
    BUDGET_COMMIT_UPDATE,
    BUDGET_RELEASE_UPDATE,
    BUDGET_RESERVE_UPDATE,
    BudgetCommit,
    BudgetGrant,
    BudgetRelease,
    BudgetReservation,
    PriceTable,
    budget_workflow_id,
    reservation_key,
)
from smyth_temporal.types.messages import Usage
from smyth_temporal.types.model import ModelRequest

__all__ = ["BUDGET_EXCEEDED", "BudgetGuard"]

BUDGET_EXCEEDED = BudgetExceededError.__name__
"""The failure type of a model call its tenant's budget refused (not retried)."""

DEFAULT_OUTPUT_ESTIMATE = 1024
"""Reply tokens a reservation assumes when the request sets no ``max_tokens`` and its
provider does not say what it sends instead (``models.BoundedReplies``)."""

_CHARS_PER_TOKEN = 4
_NO_BUDGET_TTL = 30.0
_SWITCH_RETRIES = 20

_log = structlog.get_logger("smyth_temporal.budget")


class BudgetGuard:
    """Prices model calls and keeps them within their tenant's budget.

    Args:
        prices: The worker's price table.
        provider: The worker's model provider, asked for the reply bound of a request
            that sets none (Anthropic sends 4,096 tokens, Gemini the model's limit).
    """

    def __init__(self, prices: PriceTable, provider: ModelProvider | None = None) -> None:
        self.prices = prices
        self._provider = provider
        self._without_budget: dict[str, float] = {}

    def cost(self, request: ModelRequest, model: str | None, usage: Usage) -> float:
        """What ``usage`` cost: at the requested model's price, else the answering one's."""
        price = self.prices.price(request.model) or (self.prices.price(model) if model else None)
        return price.cost(usage) if price is not None else 0.0

    async def reserve(self, request: ModelRequest) -> str | None:
        """Reserve the call's likely cost; the key to commit with (``None``: no budget).

        Raises:
            ApplicationError: ``BudgetExceededError`` (non-retryable): the tenant's
                budget refused the call.
        """
        if not self.prices.prices or self._known_without_budget(request.tenant):
            return None
        # A model without a price may answer as one with a price (an alias, a router),
        # and ``cost`` prices it so: it reserves nothing, but the budget still checks
        # it and counts what it cost.
        price = self.prices.price(request.model)
        amount = price.cost(self._estimate(request)) if price is not None else 0.0
        info = activity.info()
        # A standalone activity (no workflow) is named by its own run id instead.
        run = info.workflow_run_id or info.activity_run_id or ""
        key = reservation_key(info.workflow_id or "", run, info.activity_id)
        reservation = BudgetReservation(
            key=key,
            amount=amount,
            workflow_id=info.workflow_id or "",
            attempt=info.attempt,
        )
        grant = await self._update(request.tenant, BUDGET_RESERVE_UPDATE, reservation, BudgetGrant)
        if grant is None:
            return None
        if not grant.granted:
            _log.warning("budget.refused", tenant=request.tenant, reason=grant.reason)
            raise ApplicationError(grant.reason, type=BUDGET_EXCEEDED, non_retryable=True)
        return key

    async def commit(self, tenant: str, key: str, cost: float) -> None:
        """Count what the call cost against the tenant's budget."""
        commit = BudgetCommit(key=key, cost=cost, attempt=activity.info().attempt)
        # Shielded: the model has answered, so the money is spent; a cancellation now
        # (an interrupt) must not leave it uncounted, its reservation held for hours.
        await asyncio.shield(self._update(tenant, BUDGET_COMMIT_UPDATE, commit, None))

    async def release(self, tenant: str, key: str) -> None:
        """Give a failed call's reservation back."""
        release = BudgetRelease(key=key, attempt=activity.info().attempt)
        await self._update(tenant, BUDGET_RELEASE_UPDATE, release, None)

    def _estimate(self, request: ModelRequest) -> Usage:
        bound = reply_bound(self._provider, request) if self._provider is not None else None
        return _estimate(request, bound)

    def _known_without_budget(self, tenant: str) -> bool:
        until = self._without_budget.get(tenant)
        return until is not None and time.monotonic() < until

    async def _update(self, tenant: str, name: str, arg: Any, result_type: Any) -> Any:
        handle = activity.client().get_workflow_handle(budget_workflow_id(tenant))
        for _ in range(_SWITCH_RETRIES):
            try:
                return await handle.execute_update(name, arg, result_type=result_type)
            except RPCError as exc:
                if exc.status != RPCStatusCode.NOT_FOUND:
                    raise
                if "already completed" in exc.message:
                    await asyncio.sleep(0.05)  # the budget is continuing as new
                    continue
                self._without_budget[tenant] = time.monotonic() + _NO_BUDGET_TTL
                return None
            except WorkflowUpdateFailedError as exc:
                raise ApplicationError(f"the budget of {tenant!r} failed: {exc.cause}") from exc
        raise ApplicationError(f"the budget of {tenant!r} kept switching runs")


def _estimate(request: ModelRequest, provider_bound: int | None = None) -> Usage:
    """An upper-bound guess of a call's usage, before it is made.

    Args:
        request: The call.
        provider_bound: The reply bound its provider sends (it knows which of the
            request's names for the bound it reads), else ``None``.
    """
    chars = sum(len(m.content or "") for m in request.messages) + len(str(request.tools))
    settings = request.settings
    # The bound the provider sends first: it knows which of the request's names for it
    # wins when two disagree. Else the bound by any of its names: chat completions', or
    # the Responses and Gemini APIs' (passed through by their providers).
    output = (
        provider_bound
        or settings.get("max_tokens")
        or settings.get("max_completion_tokens")
        or settings.get("max_output_tokens")
    )
    return Usage(
        input_tokens=chars // _CHARS_PER_TOKEN + 1,
        output_tokens=int(output) if output else DEFAULT_OUTPUT_ESTIMATE,
    )
