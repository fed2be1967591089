"""Deciding approvals through the Responses API: ``mcp_approval_response`` input items.

A response that stops at a pending approval carries an ``mcp_approval_request`` item
(its ``id`` is the request's). OpenAI's clients answer it with an input item
``{"type": "mcp_approval_response", "approval_request_id": ..., "approve": ...}`` in the
next ``responses.create`` with ``previous_response_id``; the gateway decides the
request with the key that sent it, as ``POST /v1/runs/{id}/approvals/{request}`` would
(the same roles: a viewer or an operator is a 403; another tenant's response a 404).

The arguments approved are the ones the request item showed: the request is looked up
in the session and approved with its own ``arguments_sha256``. A decision sent again
(a retry after a lost answer) finds the request decided the same way and is not sent
twice; one decided the other way is a 409, as the REST API answers.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import HTTPException, status
from pydantic import BaseModel, ConfigDict, ValidationError

from smyth_temporal.clients import AgentClient
from smyth_temporal.types.agent import AgentState
from smyth_temporal.types.approvals import ApprovalDecision, ApprovalRequest

__all__ = ["APPROVAL_RESPONSE", "ApprovalResponse", "approval_responses", "decide", "settled"]

APPROVAL_RESPONSE = "mcp_approval_response"
"""The input item type that answers an ``mcp_approval_request``."""

_SETTLED = frozenset({"idle", "completed", "failed", "max_steps", "interrupted", "over_budget"})
"""Session statuses at which a decided turn has gone as far as it will without input."""


class ApprovalResponse(BaseModel):
    """One ``mcp_approval_response`` input item."""

    model_config = ConfigDict(extra="ignore")

    approval_request_id: str
    """The ``id`` of the ``mcp_approval_request`` item it answers (the request's id)."""
    approve: bool
    """Approve (run the call) or reject it."""
    reason: str | None = None
    """Why, recorded as the decision's comment."""


def approval_responses(items: list[dict[str, Any]]) -> list[ApprovalResponse]:
    """The ``mcp_approval_response`` items of ``items``, in order.

    Raises:
        HTTPException: 400 for an item without ``approval_request_id`` or ``approve``.
    """
    found = []
    for item in items:
        if item.get("type") != APPROVAL_RESPONSE:
            continue
        try:
            found.append(ApprovalResponse.model_validate(item))
        except ValidationError as exc:
            reason = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise HTTPException(
                status.HTTP_400_BAD_REQUEST, f"invalid {APPROVAL_RESPONSE} item: {reason}"
            ) from None
    return found


async def decide(
    client: AgentClient,
    workflow_id: str,
    answers: list[ApprovalResponse],
    *,
    response_id: str,
    timeout: float,
) -> list[ApprovalRequest]:
    """Decide the requests ``answers`` name in the session; the requests, as they were.

    Raises:
        HTTPException: 404 for a request the session does not have; 409 for one
            decided the other way (or no longer pending: expired, withdrawn).
        AccessDeniedError: The key may not decide (the gateway answers 403).
    """
    client.identity.permit("approve")  # before the session is read: a viewer learns nothing
    state = await client.state(workflow_id, timeout=timeout)
    requests = {request.id: request for request in state.approvals}
    decided = []
    for answer in answers:
        request = requests.get(answer.approval_request_id)
        if request is None:
            raise HTTPException(
                status.HTTP_404_NOT_FOUND,
                f"no approval request {answer.approval_request_id!r} in response {response_id!r}",
            )
        decided.append(request)
        wanted = "approved" if answer.approve else "rejected"
        if request.status == wanted:
            continue  # the same decision again (a retry): it was taken
        if request.status != "pending":
            raise HTTPException(
                status.HTTP_409_CONFLICT,
                f"approval request {request.id} ({request.tool}) is {request.status}, not pending",
            )
        await client.decide(
            workflow_id,
            ApprovalDecision(
                request_id=request.id,
                approved=answer.approve,
                by="responses",  # the client acting for the key records the key's name
                comment=answer.reason,
                # What the request item showed is what is approved.
                arguments_sha256=request.arguments_sha256 if answer.approve else None,
            ),
            timeout=timeout,
        )
    return decided


async def settled(
    client: AgentClient, workflow_id: str, *, every: float, timeout: float
) -> AgentState:
    """The session's state once the decided turn went on: it answered, or waits again.

    Asked every ``every`` seconds (a whole answer has no events to follow, as
    ``reply_or_pending`` explains): the turn has gone as far as it goes when the
    session is idle (or ended), or waits for a decision: on another request, or on a
    decided one that needs more votes (a quorum policy). The decision was taken before
    this is asked, so a request it settled no longer shows as pending.
    """
    while True:
        state = await client.state(workflow_id, timeout=timeout)
        if state.status in _SETTLED or state.pending_approvals:
            return state
        await asyncio.sleep(every)
