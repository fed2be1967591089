"""Tenants' spending limits, kept by one ``TenantBudget`` workflow each: ``BudgetClient``."""

from __future__ import annotations

import asyncio
import enum
import math
from typing import Any, Final

from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.service import RPCError, RPCStatusCode

from smyth_temporal.agent.budget import BudgetState, TenantBudget
from smyth_temporal.clients._base import count_pollers
from smyth_temporal.clients._identity import Identity
from smyth_temporal.exceptions import ClientError
from smyth_temporal.types.budget import (
    BUDGET_LIMITS_UPDATE,
    BUDGET_SUMMARY_QUERY,
    BudgetLimits,
    BudgetSummary,
    budget_workflow_id,
)

__all__ = ["BUDGET_TIMEOUT", "BudgetClient"]

BUDGET_TIMEOUT = 30.0
"""Seconds to wait for a worker to answer a budget query or update."""


class _Keep(enum.Enum):
    KEEP = enum.auto()


_KEEP: Final = _Keep.KEEP


class BudgetClient:
    """Read and set tenants' daily and monthly budgets.

    A tenant's first budget starts its ``TenantBudget`` workflow on the client's task
    queue, where agent workers serve it; from then on every priced model call of the
    tenant reserves its likely cost there first. Both calls need a worker of that task
    queue to answer.

    ```python
    await agents.budgets.set("acme", daily=20.0, monthly=400.0)
    summary = await agents.budgets.show("acme")
    ```

    Added in 0.5.0.
    """

    def __init__(self, client: Client, *, task_queue: str, identity: Identity) -> None:
        self.client = client
        self.task_queue = task_queue
        self.identity = identity
        self.timeout = BUDGET_TIMEOUT
        """Seconds to wait for a worker to answer."""

    async def show(self, tenant: str | None = None) -> BudgetSummary | None:
        """The tenant's limits and spending (``None``: it has no budget).

        Raises:
            ClientError: No worker answered (the budget lives on agent workers).
            AccessDeniedError: The caller's key names another tenant.
        """
        self.identity.permit("read")
        tenant = self.identity.tenant(tenant)
        handle = self.client.get_workflow_handle(budget_workflow_id(tenant))
        try:
            summary: BudgetSummary = await self._answered(
                handle.query(BUDGET_SUMMARY_QUERY, result_type=BudgetSummary), tenant
            )
            return summary
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                return None
            raise

    async def set(
        self,
        tenant: str | None = None,
        *,
        daily: float | _Keep | None = _KEEP,
        monthly: float | _Keep | None = _KEEP,
    ) -> BudgetSummary:
        """Set the tenant's limits (``None`` removes one; a limit not given stays).

        Raises:
            ClientError: A limit is negative or not a number, or no worker answered.
            AccessDeniedError: The caller's key is not an admin's, or names another tenant.
        """
        self.identity.permit("admin")
        tenant = self.identity.tenant(tenant)
        given = {
            name: value
            for name, value in (("daily", daily), ("monthly", monthly))
            if not isinstance(value, _Keep)
        }
        for name, value in given.items():
            if value is not None and not (math.isfinite(value) and value >= 0):
                raise ClientError(f"the {name} budget must be a number of 0 or more, not {value}")
        if await count_pollers(self.client, self.task_queue) == 0:
            raise ClientError(self._no_worker(tenant))
        current = await self.show(tenant)
        limits = current.limits if current is not None else BudgetLimits()
        limits = limits.model_copy(update=given)
        handle = await self.client.start_workflow(
            TenantBudget.run,
            BudgetState(tenant=tenant),
            id=budget_workflow_id(tenant),
            task_queue=self.task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            static_summary=f"budget of tenant {tenant}",
        )
        return await self._set_limits(handle, tenant, limits)

    async def _set_limits(
        self, handle: WorkflowHandle[Any, Any], tenant: str, limits: BudgetLimits
    ) -> BudgetSummary:
        try:
            updated: BudgetSummary = await self._answered(
                handle.execute_update(BUDGET_LIMITS_UPDATE, limits, result_type=BudgetSummary),
                tenant,
            )
            return updated
        except WorkflowUpdateFailedError as exc:
            raise ClientError(f"the budget of {tenant!r} refused the limits: {exc.cause}") from exc

    async def _answered(self, call: Any, tenant: str) -> Any:
        """``call``'s answer, or a ``ClientError`` once ``timeout`` passes without one."""
        try:
            async with asyncio.timeout(self.timeout):
                return await call
        except TimeoutError:
            raise ClientError(self._no_worker(tenant)) from None

    def _no_worker(self, tenant: str) -> str:
        return (
            f"no worker answered for the budget of {tenant!r} on task queue "
            f"{self.task_queue!r} (namespace {self.client.namespace!r}); budgets live on "
            "agent workers: start one with `smyth worker module:Agent`"
        )
