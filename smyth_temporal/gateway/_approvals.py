"""Human approvals: the tenant's pending requests, and decisions recorded by key name.

One request is decided at ``POST /v1/runs/{id}/approvals/{request}``; several at once
(the console's inbox) at ``POST /v1/approvals/decisions``, each pinned to its own
arguments' hash and answered on its own: one refused decision refuses nothing else.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Path
from pydantic import BaseModel, Field

from smyth_temporal.gateway._auth import Approver, Reader
from smyth_temporal.gateway._gateway import Gateway, GatewayDep
from smyth_temporal.gateway._listing import (
    Limit,
    PageToken,
    decode_token,
    encode_token,
    refused_token,
)
from smyth_temporal.gateway._models import ApprovalList, Decision
from smyth_temporal.gateway._problems import Problem, problem_of
from smyth_temporal.security import Principal
from smyth_temporal.types.approvals import ApprovalDecision, ApprovalOutcome

__all__ = ["BulkDecision", "BulkDecisions", "BulkOutcome", "BulkResult", "router"]

MAX_BULK_DECISIONS = 100
"""Decisions one bulk request may carry."""

_BULK_CONCURRENCY = 8
"""Decisions of one bulk request sent at once (each is an update that waits for a worker)."""

router = APIRouter(prefix="/v1", tags=["approvals"])


@router.get("/approvals", summary="Pending approval requests")
async def pending_approvals(
    caller: Reader,
    gateway: GatewayDep,
    limit: Limit = 100,
    page_token: PageToken = None,
) -> ApprovalList:
    """The pending requests of the caller's tenant's running agents, oldest first.

    Each request carries the arguments and their ``arguments_sha256``: show the
    arguments to the person who decides and send the hash back with the approval.
    ``limit`` bounds the runs read for one page; a page may hold fewer and still have
    a ``next_page_token``: follow it until it is absent.
    """
    token = decode_token(page_token)
    async with refused_token(token):
        page = await gateway.acting_for(caller).pending_approvals_page(
            page_size=limit, page_token=token
        )
    return ApprovalList(
        approvals=page.approvals, next_page_token=encode_token(page.next_page_token)
    )


@router.post("/runs/{workflow_id}/approvals/{request_id}", summary="Decide an approval request")
async def decide(
    workflow_id: Annotated[str, Path(description="the run's workflow id")],
    request_id: Annotated[str, Path(description="the request's id")],
    body: Decision,
    caller: Approver,
    gateway: GatewayDep,
) -> ApprovalOutcome:
    """Approve or reject a pending request; the decision is recorded as the key's name.

    The agent refuses (409, leaving no trace in its history) an unknown or decided
    request, an ``arguments_sha256`` that is not the request's, or edited arguments
    that do not fit the tool.
    """
    return await _decide(gateway, caller, workflow_id, request_id, body)


class BulkDecision(Decision):
    """One decision of a bulk request: the run, the request, and the decision on it."""

    workflow_id: str = Field(min_length=1)
    """The run's workflow id."""
    request_id: str = Field(min_length=1)
    """The request's id."""


class BulkDecisions(BaseModel):
    """Several decisions at once (``POST /v1/approvals/decisions``)."""

    model_config = Decision.model_config

    decisions: list[BulkDecision] = Field(min_length=1, max_length=MAX_BULK_DECISIONS)
    """The decisions, each pinned to its request's ``arguments_sha256`` to approve."""


class BulkResult(BaseModel):
    """What became of one decision of a bulk request."""

    workflow_id: str
    """The run's workflow id."""
    request_id: str
    """The request's id."""
    status: int
    """The HTTP status the decision alone would have got (200, 403, 404, 409, ...)."""
    outcome: ApprovalOutcome | None = None
    """The request as it stands after the decision (status 200)."""
    problem: Problem | None = None
    """Why the decision was refused (any other status); it left no trace."""


class BulkOutcome(BaseModel):
    """The results of a bulk request, in the order of its decisions."""

    results: list[BulkResult]
    """One per decision."""


@router.post("/approvals/decisions", summary="Decide several approval requests")
async def decide_many(body: BulkDecisions, caller: Approver, gateway: GatewayDep) -> BulkOutcome:
    """Approve or reject several requests in one action (the console's inbox).

    Each decision is sent on its own, as ``POST /v1/runs/{id}/approvals/{request}``
    would send it, and answered on its own: a decision refused (a request decided by
    its quorum or expired meanwhile: 409; another tenant's run: 404) leaves no trace in
    its run, and the others still apply. The answer is 200 whatever each one got.
    """
    slots = asyncio.Semaphore(_BULK_CONCURRENCY)

    async def one(item: BulkDecision) -> BulkResult:
        async with slots:
            try:
                outcome = await _decide(gateway, caller, item.workflow_id, item.request_id, item)
            except Exception as exc:
                problem = problem_of(exc)
                return BulkResult(
                    workflow_id=item.workflow_id,
                    request_id=item.request_id,
                    status=problem.status,
                    problem=problem,
                )
        return BulkResult(
            workflow_id=item.workflow_id, request_id=item.request_id, status=200, outcome=outcome
        )

    return BulkOutcome(results=list(await asyncio.gather(*(one(d) for d in body.decisions))))


async def _decide(
    gateway: Gateway, caller: Principal, workflow_id: str, request_id: str, body: Decision
) -> ApprovalOutcome:
    # The client acting for the key checks the run's tenant and records the key's name
    # and role as who decided, whatever the decision says.
    decision = ApprovalDecision(
        request_id=request_id,
        approved=body.approved,
        by=caller.name,
        role=caller.role,
        comment=body.comment,
        arguments_sha256=body.arguments_sha256,
        arguments=body.arguments,
    )
    outcome = await gateway.acting_for(caller).decide(
        workflow_id, decision, timeout=gateway.options.worker_timeout
    )
    assert outcome is not None  # waited for
    return outcome
