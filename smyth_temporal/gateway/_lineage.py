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

from smyth_temporal.agent import AgentWorkflow
from smyth_temporal.clients import AgentClient, agent_name
from smyth_temporal.exceptions import AgentNotFoundError
from smyth_temporal.gateway._auth import Operator
from smyth_temporal.gateway._gateway import Gateway, GatewayDep
from smyth_temporal.gateway._models import ForkRequest, RewindDone, RewindRequest, RunCreated

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["runs"])

RunId = Annotated[str, Path(description="the run's workflow id")]


async def _served_agent(
    gateway: Gateway, agents: AgentClient, workflow_id: str
) -> tuple[str, type[AgentWorkflow] | None]:
    """The agent of run ``workflow_id`` if this gateway serves it, and its class if given.

    Only an agent this gateway serves: a fork of another would wait for a worker that
    never comes, and the class says which tools have side effects. The role and the
    tenant are checked before anything about the run is said.

    Raises:
        AccessDeniedError: The caller may not operate runs.
        AgentNotFoundError: No run of the caller's tenant has that id.
        UnknownAgentError: This gateway does not serve the run's agent.
    """
    agents.identity.permit("operate")
    info = await agents.identity.describe(workflow_id)
    if info is None:
        raise AgentNotFoundError(f"no agent run with workflow id {workflow_id!r}")
    name = gateway.agent(info.type.name)
    classes = (a for a in gateway.served if isinstance(a, type) and agent_name(a) == name)
    return name, next(classes, None)


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
    the rest on another model. 404 for a run of an agent this gateway does not serve;
    409 when the run has not finished that step or ``id`` names an existing run.
    ``Location`` names the fork.
    """
    agents = gateway.acting_for(caller)
    name, agent = await _served_agent(gateway, agents, workflow_id)
    try:
        handle = await agents.fork(
            workflow_id,
            at_step=body.at_step,
            prompt=body.prompt,
            model=body.model,
            id=body.id,
            agent=agent,
        )
    except WorkflowAlreadyStartedError:
        raise HTTPException(
            status.HTTP_409_CONFLICT, f"a run with workflow id {body.id!r} exists already"
        ) from None
    response.headers["Location"] = f"/v1/runs/{handle.id}"
    return RunCreated(
        workflow_id=handle.id, run_id=handle.result_run_id, agent=name, tenant=caller.tenant
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
    are listed in the answer. 404 for a run of an agent this gateway does not serve;
    409 when the run cannot go back there (a step it has not gone past, one in an
    earlier run of its chain, an update being handled).
    """
    agents = gateway.acting_for(caller)
    _, agent = await _served_agent(gateway, agents, workflow_id)
    done = await agents.rewind(workflow_id, to_step=body.to_step, prompt=body.prompt, agent=agent)
    return RewindDone(
        workflow_id=done.workflow_id,
        run_id=done.run_id,
        abandoned_run_id=done.abandoned_run_id,
        to_step=done.to_step,
        side_effects=list(done.side_effects),
        voided_approvals=list(done.voided_approvals),
    )
