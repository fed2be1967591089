"""Time travel over HTTP: fork a run at a step, rewind a run to a step.

``POST /v1/runs/{id}/fork`` over ``AgentClient.fork`` and ``POST /v1/runs/{id}/rewind``
over ``AgentClient.rewind``, acting for the caller's key: operator and above (a viewer
is refused with 403 before anything is read), a run of another tenant is 404 as a run
that does not exist, and a step that cannot be used is 409; in each case nothing starts
and nothing is reset. A run's lineage (its parent, forks and rewinds) is part of
``GET /v1/runs/{id}``.

Added in 0.10.0.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Response, status
from temporalio.exceptions import WorkflowAlreadyStartedError

from smyth_temporal.gateway._auth import Operator
from smyth_temporal.gateway._gateway import GatewayDep
from smyth_temporal.gateway._models import ForkRequest, RewindDone, RewindRequest, RunCreated

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


@router.post("/runs/{workflow_id}/rewind", summary="Rewind a run to a step")
async def rewind_run(
    workflow_id: RunId, body: RewindRequest, caller: Operator, gateway: GatewayDep
) -> RewindDone:
    """Take this run back to right after step ``to_step``; it goes on from there.

    Through Temporal's reset: the same workflow id, a new run (the abandoned one's
    history stays readable). ``prompt`` is added as a user message before step
    ``to_step + 1``; memories the run wrote after the step are removed; approvals
    decided after it are void. Side-effect calls after the step cannot be undone: they
    are listed in the answer. 409 when the run cannot go back there (a step it has not
    gone past, one in an earlier run of its chain, an update being handled).
    """
    done = await gateway.acting_for(caller).rewind(
        workflow_id, to_step=body.to_step, prompt=body.prompt
    )
    return RewindDone(
        workflow_id=done.workflow_id,
        run_id=done.run_id,
        abandoned_run_id=done.abandoned_run_id,
        to_step=done.to_step,
        side_effects=list(done.side_effects),
        voided_approvals=list(done.voided_approvals),
    )
