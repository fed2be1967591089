"""``smyth pause`` and ``smyth resume``: hold agent runs in place, and let them go on.

One run by workflow id, or every run of a tenant (``--tenant``) and/or an agent type
(``--agent``), through Temporal's Workflow Pause (``AgentClient.pause``).

Added in 0.5.0.
"""

from __future__ import annotations

from typing import Annotated

import typer

from smyth_temporal.cli._common import CommonOptions, agent_type, command, non_empty, run, status
from smyth_temporal.clients import AgentClient, Paused

__all__ = ["app"]

app = typer.Typer()

_WorkflowId = Annotated[
    str | None,
    typer.Argument(metavar="WORKFLOW_ID", help="the agent run's workflow id"),
]
_Tenant = Annotated[
    str | None,
    typer.Option("--tenant", parser=non_empty, metavar="TENANT", help="every run of this tenant"),
]
_Agent = Annotated[
    str | None,
    typer.Option(
        "--agent",
        parser=non_empty,
        metavar="AGENT",
        help="every run of this agent type (Name or module:Class)",
    ),
]
_Reason = Annotated[
    str | None,
    typer.Option("--reason", metavar="TEXT", help="why, recorded by the server"),
]

_EPILOG = (
    "Needs Workflow Pause on the server (`smyth dev` turns it on; a self-hosted server "
    "1.30+ needs --dynamic-config-value frontend.WorkflowPauseEnabled=true).\n\n"
    "examples:\n\n"
    "  smyth pause MarketAnalyst-3f9a0c1d2e4b --reason 'vendor outage'\n\n"
    "  smyth pause --tenant acme\n\n"
    "  smyth resume --agent MarketAnalyst"
)


@command(
    app,
    "pause",
    epilog=_EPILOG,
    help="Pause agent runs: they make no model or tool call until resumed (a call already "
    "running finishes; messages sent meanwhile wait). Name a workflow id, or --tenant "
    "and/or --agent for every running one.",
)
def pause(
    options: CommonOptions,
    workflow_id: _WorkflowId = None,
    tenant: _Tenant = None,
    agent: _Agent = None,
    reason: _Reason = None,
) -> None:
    """Pause agent runs."""
    _check(workflow_id, tenant, agent)
    run(_act(options, "pause", workflow_id, tenant, agent, reason))


@command(
    app,
    "resume",
    epilog=_EPILOG,
    help="Resume paused agent runs where they were. Name a workflow id, or --tenant and/or "
    "--agent for every paused one.",
)
def resume(
    options: CommonOptions,
    workflow_id: _WorkflowId = None,
    tenant: _Tenant = None,
    agent: _Agent = None,
    reason: _Reason = None,
) -> None:
    """Resume agent runs."""
    _check(workflow_id, tenant, agent)
    run(_act(options, "resume", workflow_id, tenant, agent, reason))


def _check(workflow_id: str | None, tenant: str | None, agent: str | None) -> None:
    if workflow_id is not None and (tenant or agent):
        raise typer.BadParameter("give a workflow id, or --tenant/--agent, not both")
    if workflow_id is None and not (tenant or agent):
        raise typer.BadParameter("give a workflow id, or --tenant and/or --agent")


async def _act(
    options: CommonOptions,
    verb: str,
    workflow_id: str | None,
    tenant: str | None,
    agent: str | None,
    reason: str | None,
) -> None:
    agents = await AgentClient.connect(options.settings())
    past = "paused" if verb == "pause" else "resumed"
    if workflow_id is not None:
        act = agents.pause if verb == "pause" else agents.resume
        if await act(workflow_id, reason=reason):
            print(f"{past} {workflow_id}")
        else:
            status(f"{workflow_id} was {'paused already' if verb == 'pause' else 'not paused'}")
        return
    many = agents.pause_agents if verb == "pause" else agents.resume_agents
    done: Paused = await many(
        tenant=tenant, agent=agent_type(agent) if agent else None, reason=reason
    )
    for changed in done.changed:
        print(f"{past} {changed}")
    scope = " and ".join(
        part
        for part in (f"tenant {tenant}" if tenant else "", f"agent {agent}" if agent else "")
        if part
    )
    state = "running" if verb == "pause" else "paused"
    status(f"{past} {len(done.changed)} {state} run(s) of {scope}")
