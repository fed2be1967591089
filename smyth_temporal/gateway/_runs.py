"""Agent runs: start, state, result, events (Server-Sent Events) and interrupt."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Path, Query, Request, Response, status
from fastapi.responses import StreamingResponse

from smyth_temporal.gateway._auth import Operator, Reader
from smyth_temporal.gateway._gateway import GatewayDep, while_connected
from smyth_temporal.gateway._models import InterruptRequest, RunCreated, StartRequest
from smyth_temporal.gateway._sse import (
    SSE_RESPONSES,
    Lookahead,
    encode,
    error_event,
    event_stream,
)
from smyth_temporal.types.agent import AgentInput, AgentResult, AgentState, InterruptOutcome
from smyth_temporal.types.events import AgentEvent

__all__ = ["EVENTS_SETTLE", "router"]

router = APIRouter(prefix="/v1", tags=["runs"])

EVENTS_SETTLE = 0.5
"""Seconds an event stream waits for its first event before answering: enough for a
run without an event stream to be refused with a status, short enough not to hold up
a reader that resumes at the end of an idle session."""

RunId = Annotated[str, Path(description="the run's workflow id")]


@router.post(
    "/agents/{agent}/runs",
    status_code=status.HTTP_201_CREATED,
    summary="Start an agent run",
)
async def start_run(
    agent: str, body: StartRequest, caller: Operator, gateway: GatewayDep, response: Response
) -> RunCreated:
    """Start a run of ``agent`` for the caller's tenant; ``Location`` names the run.

    An agent no worker on the gateway's task queue has is refused with 404 (naming
    the agents served), and no run of it is left waiting: a probe that runs no agent
    code asks the workers first, and a run started anyway is terminated if the
    worker that takes it lacks the agent.
    """
    name = gateway.agent(agent)
    served = await gateway.check_served(name)
    if served is False:
        gateway.agent(name)  # refused now: the same 404 as the next request gets
    # The client acting for the key fills in what is the key's to say (its tenant).
    handle = await gateway.acting_for(caller).start(
        name,
        AgentInput(prompt=body.prompt, session_id=body.session_id, metadata=body.metadata),
    )
    if served:  # else no worker polls yet: the run waits for one, as any run does
        await gateway.confirm_started(handle.id, name)
    response.headers["Location"] = f"/v1/runs/{handle.id}"
    return RunCreated(
        workflow_id=handle.id, run_id=handle.result_run_id, agent=name, tenant=caller.tenant
    )


@router.get("/runs/{workflow_id}", summary="A run's state")
async def run_state(workflow_id: RunId, caller: Reader, gateway: GatewayDep) -> AgentState:
    """The agent's ``AgentState``: status, step, recent messages, usage, approvals, lineage.

    Lineage: the run it was forked from (``fork_of``), the runs forked from it
    (``forks``, the caller's tenant's only) and the rewinds it went through
    (``rewinds``). The agent's own ``data`` is shown only to keys that may operate the
    run (operator, admin); viewers and approvers get it empty.
    """
    agents = gateway.acting_for(caller)
    return await agents.state(workflow_id, timeout=gateway.options.worker_timeout, lineage=True)


@router.get("/runs/{workflow_id}/result", summary="Wait for a run's result")
async def run_result(
    workflow_id: RunId, caller: Reader, gateway: GatewayDep, request: Request
) -> AgentResult:
    """Wait for the run to end and return its ``AgentResult`` (409 if it failed)."""
    return await while_connected(request, gateway.acting_for(caller).result(workflow_id))


@router.get(
    "/runs/{workflow_id}/events",
    summary="Follow a run's events (Server-Sent Events)",
    response_class=StreamingResponse,
    responses=SSE_RESPONSES,
)
async def run_events(
    workflow_id: RunId,
    caller: Reader,
    gateway: GatewayDep,
    after: Annotated[int | None, Query(ge=-1, description="the last offset seen")] = None,
    last_event_id: Annotated[
        int | None, Header(ge=-1, description="the last offset seen (set by EventSource)")
    ] = None,
) -> StreamingResponse:
    """The run's events as they happen, until the run ends.

    Each event is ``event: <kind>``, ``data: <the AgentEvent as JSON>`` and
    ``id: <its stream offset>``. To resume after a disconnect, send the last id seen
    as ``Last-Event-ID`` (browsers' ``EventSource`` does) or ``?after=``: nothing is
    missed and nothing comes twice. An error after the stream began comes as
    ``event: error`` with problem details.
    """
    resume = last_event_id if last_event_id is not None else after
    events = await gateway.acting_for(caller).open_events(workflow_id, after=resume)
    release = gateway.streams.take(caller)  # 429 past the key's cap
    source: Lookahead[AgentEvent] = Lookahead(events, on_close=release)
    await source.settle(EVENTS_SETTLE)
    return event_stream(
        source,
        lambda event: encode(event.model_dump_json(), event=event.kind, id=event.offset),
        idle=gateway.options.ping_interval,
        on_error=error_event,
    )


@router.post("/runs/{workflow_id}/interrupt", summary="Stop a run's current turn")
async def interrupt_run(
    workflow_id: RunId,
    caller: Operator,
    gateway: GatewayDep,
    body: InterruptRequest | None = None,
) -> InterruptOutcome:
    """Stop the current turn at its next safe point (409 when nothing runs)."""
    reason = body.reason if body is not None else None
    return await gateway.acting_for(caller).interrupt(workflow_id, reason=reason)
