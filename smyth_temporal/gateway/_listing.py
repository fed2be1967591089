"""The tenant's recent agent runs, from Temporal's visibility (``GET /v1/runs``).

Bounded per request: one page of at most ``limit`` runs is read from Temporal, and
``next_page_token`` goes on from there. The server filters by the ``SmythTenant``
search attribute; runs without it (started before 0.8.0) come too, and the tenant
of every listed chain is checked against its input once (one history event, then
remembered per chain in the client's tenant cache, ``Identity.sees``): another
tenant's run is never named.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from http import HTTPStatus
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query
from temporalio.client import WorkflowExecution, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from smyth_temporal.clients import AgentClient, execution_page, is_paused_execution
from smyth_temporal.gateway._auth import Reader
from smyth_temporal.gateway._gateway import GatewayDep
from smyth_temporal.gateway._models import RunList, RunSummary
from smyth_temporal.types.visibility import PENDING_APPROVALS_ATTRIBUTE, STATUS_ATTRIBUTE

__all__ = [
    "MAX_PAGE",
    "Limit",
    "PageToken",
    "decode_token",
    "encode_token",
    "refused_token",
    "router",
]

router = APIRouter(prefix="/v1", tags=["runs"])

MAX_PAGE = 200
"""The most runs one listing request reads from Temporal."""

_MAX_TOKEN = 4096
_UNREADABLE_TOKEN = frozenset(
    {RPCStatusCode.INVALID_ARGUMENT, RPCStatusCode.INTERNAL, RPCStatusCode.UNKNOWN}
)

Limit = Annotated[
    int, Query(ge=1, le=MAX_PAGE, description="read at most this many runs for this page")
]
PageToken = Annotated[
    str | None,
    Query(
        max_length=_MAX_TOKEN,
        description="the `next_page_token` of the previous page, to go on from there",
    ),
]


def decode_token(token: str | None) -> bytes:
    """Temporal's page token from its URL-safe form (``b""``: the first page).

    Raises:
        HTTPException: 400, not a token this gateway gave.
    """
    if not token:
        return b""
    try:
        return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (binascii.Error, ValueError):
        raise HTTPException(HTTPStatus.BAD_REQUEST, "invalid page_token") from None


def encode_token(token: bytes) -> str | None:
    """Temporal's page token in a URL-safe form (``None``: no next page)."""
    return base64.urlsafe_b64encode(token).decode().rstrip("=") if token else None


@asynccontextmanager
async def refused_token(token: bytes) -> AsyncIterator[None]:
    """Answer 400 when Temporal cannot read a page token the caller sent (it is opaque).

    A forged token can only move where the page starts: the query names the tenant,
    and every listed run is checked.
    """
    try:
        yield
    except RPCError as exc:
        # Servers refuse tokens they cannot parse as invalid, or as errors of their
        # own (the dev server: UNKNOWN, "something went wrong, please retry").
        if token and exc.status in _UNREADABLE_TOKEN:
            raise HTTPException(HTTPStatus.BAD_REQUEST, "invalid page_token") from exc
        raise


@router.get("/runs", summary="List recent runs")
async def list_runs(
    caller: Reader,
    gateway: GatewayDep,
    limit: Limit = 50,
    page_token: PageToken = None,
) -> RunList:
    """The caller's tenant's most recent runs of the agents served, newest first.

    A chain of runs (continue-as-new) is listed once, as its latest run. A page may
    hold fewer than ``limit`` runs and still have a ``next_page_token``: follow it
    until it is absent.
    """
    names = ", ".join(f"'{name}'" for name in gateway.agent_names)
    query = f"WorkflowType IN ({names}) AND ExecutionStatus != 'ContinuedAsNew'"
    token = decode_token(page_token)
    agents = gateway.acting_for(caller)
    tenant = agents.identity.tenant(None)
    async with refused_token(token):
        page, following = await execution_page(
            agents.client, query, tenant=tenant, page_size=limit, token=token
        )
    runs = [_summary(execution) for execution in page if await _owned(agents, execution)]
    return RunList(runs=runs, next_page_token=encode_token(following))


async def _owned(agents: AgentClient, execution: WorkflowExecution) -> bool:
    chain = execution.raw_info.first_run_id or execution.run_id
    return await agents.identity.sees(execution.id, execution.run_id, chain)


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
