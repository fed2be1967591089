"""Human approvals: the tenant's pending requests, and decisions recorded by key name."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from smyth_temporal.gateway._auth import Approver, Reader
from smyth_temporal.gateway._gateway import GatewayDep
from smyth_temporal.gateway._listing import (
    Limit,
    PageToken,
    decode_token,
    encode_token,
    refused_token,
)
from smyth_temporal.gateway._models import ApprovalList, Decision
from smyth_temporal.types.approvals import ApprovalDecision, ApprovalOutcome

__all__ = ["router"]

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
    # The client acting for the key checks the run's tenant and records the key's name
    # as who decided, whatever the decision says.
    decision = ApprovalDecision(
        request_id=request_id,
        approved=body.approved,
        by=caller.name,
        comment=body.comment,
        arguments_sha256=body.arguments_sha256,
        arguments=body.arguments,
    )
    outcome = await gateway.acting_for(caller).decide(
        workflow_id, decision, timeout=gateway.options.worker_timeout
    )
    assert outcome is not None  # waited for
    return outcome
