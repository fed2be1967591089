"""Time travel over HTTP: fork a run at a step (``POST /v1/runs/{id}/fork``).

Over ``AgentClient.fork``, acting for the caller's key: operator and above (a viewer
is refused with 403 before anything is read), a run of another tenant is 404 as a run
that does not exist, and a step the run has not finished is 409; in each case nothing
starts. A run's lineage (its parent, forks and rewinds) is part of ``GET /v1/runs/{id}``.

Added in 0.10.0.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Response, status
from temporalio.exceptions import WorkflowAlreadyStartedError

from smyth_temporal.gateway._auth import Operator
from smyth_temporal.gateway._gateway import GatewayDep
from smyth_temporal.gateway._models import ForkRequest, RunCreated

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["runs"])

RunId = Annotated[str, Path(description="the run's workflow id")]


@router.post(
    "/runs/{workflow_id}/fork",
    status_code=status.HTTP_201_CREATED,
    summary="Fork a run at a step",
)
async def fork_run(
    workflow_id: RunId,
    body: ForkRequest,
    caller: Operator,
    gateway: GatewayDep,
    response: Response,
) -> RunCreated:
    """Start a new run from this run's state right after step ``at_step``.

    No model is called for the steps up to ``at_step``; the original is untouched.
    ``prompt`` is added as a user message before the fork's first turn, ``model`` runs
    the rest on another model. 409 when the run has not finished that step or ``id``
    names an existing run. ``Location`` names the fork.
    """
    agents = gateway.acting_for(caller)
    try:
        handle = await agents.fork(
            workflow_id, at_step=body.at_step, prompt=body.prompt, model=body.model, id=body.id
        )
    except WorkflowAlreadyStartedError:
        raise HTTPException(
            status.HTTP_409_CONFLICT, f"a run with workflow id {body.id!r} exists already"
        ) from None
    description = await handle.describe()
    response.headers["Location"] = f"/v1/runs/{handle.id}"
    return RunCreated(
        workflow_id=handle.id,
        run_id=handle.result_run_id,
        agent=description.workflow_type,
        tenant=caller.tenant,
    )
