"""The tenant's recent agent runs, from Temporal's visibility (``GET /v1/runs``).

Runs carry no tenant search attribute, so each listed chain's tenant is read from its
input once (one history event, then remembered per chain, as ``check_owner`` does)
and other tenants' runs are skipped; at most ``scan`` runs are looked at per request.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from temporalio.client import WorkflowExecution, WorkflowExecutionStatus

from smyth_temporal.clients._visibility import executions, is_paused_execution
from smyth_temporal.gateway._auth import Reader
from smyth_temporal.gateway._gateway import Gateway, GatewayDep
from smyth_temporal.gateway._models import RunList, RunSummary
from smyth_temporal.security._identity import Principal
from smyth_temporal.types.visibility import PENDING_APPROVALS_ATTRIBUTE, STATUS_ATTRIBUTE

__all__ = ["SCAN_FACTOR", "router"]

router = APIRouter(prefix="/v1", tags=["runs"])

SCAN_FACTOR = 10
"""How many runs (of every tenant) a listing looks at for each one it may answer."""


@router.get("/runs", summary="List recent runs")
async def list_runs(
    caller: Reader,
    gateway: GatewayDep,
    limit: Annotated[int, Query(ge=1, le=200, description="at most this many runs")] = 50,
) -> RunList:
    """The caller's tenant's most recent runs of the agents served, newest first.

    A chain of runs (continue-as-new) is listed once, as its latest run.
    """
    names = ", ".join(f"'{name}'" for name in gateway.agent_names)
    query = f"WorkflowType IN ({names}) AND ExecutionStatus != 'ContinuedAsNew'"
    runs: list[RunSummary] = []
    async for execution in executions(gateway.agents.client, query, limit=limit * SCAN_FACTOR):
        if await _owned(gateway, caller, execution):
            runs.append(_summary(execution))
            if len(runs) == limit:
                break
    return RunList(runs=runs)


async def _owned(gateway: Gateway, caller: Principal, execution: WorkflowExecution) -> bool:
    chain = execution.raw_info.first_run_id or execution.run_id
    tenant = await gateway.chain_tenant(execution.id, execution.run_id, chain)
    return tenant == caller.tenant


def _summary(execution: WorkflowExecution) -> RunSummary:
    attributes = execution.typed_search_attributes
    status = execution.status or WorkflowExecutionStatus.RUNNING
    return RunSummary(
        workflow_id=execution.id,
        agent=execution.workflow_type,
        status="paused" if is_paused_execution(execution) else status.name.lower(),
        agent_status=attributes.get(STATUS_ATTRIBUTE),
        pending_approvals=attributes.get(PENDING_APPROVALS_ATTRIBUTE) or 0,
        started_at=execution.start_time,
        closed_at=execution.close_time,
    )
