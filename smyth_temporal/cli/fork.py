"""``smyth fork``: a new agent run from a step of another (``AgentClient.fork``).

Added in 0.9.0.
"""

from __future__ import annotations

from typing import Annotated

import typer

from smyth_temporal.agent.workflow import AgentWorkflow
from smyth_temporal.cli._common import CommonOptions, command, non_empty, non_negative, run
from smyth_temporal.clients import AgentClient
from smyth_temporal.worker import load_agent

__all__ = ["app"]

app = typer.Typer()

_EPILOG = (
    "The steps up to N are read from the run's history, not run again: no model is "
    "called for them, and the original run is untouched. The agent's class replays the "
    "history: name it with --agent module:Class.\n\n"
    "examples:\n\n"
    "  smyth fork Analyst-3f9a0c1d2e4b --at-step 36 --agent app.agents:Analyst "
    "--prompt 'Check the March figures first.'\n\n"
    "  smyth fork Analyst-3f9a0c1d2e4b --at-step 36 --agent app.agents:Analyst "
    "--model gpt-4.1 --id analyst-variant-b"
)


@command(
    app,
    "fork",
    epilog=_EPILOG,
    help="Start a new run from an agent run's state right after step N (conversation, "
    "data, usage, decided approvals), optionally with a new user message or another model.",
)
def fork(
    options: CommonOptions,
    workflow_id: Annotated[
        str, typer.Argument(metavar="WORKFLOW_ID", help="the run to fork", parser=non_empty)
    ],
    at_step: Annotated[
        int,
        typer.Option("--at-step", parser=non_negative, metavar="N", help="fork right after step N"),
    ],
    agent: Annotated[
        str | None,
        typer.Option("--agent", parser=non_empty, metavar="module:Class", help="the agent's class"),
    ] = None,
    prompt: Annotated[
        str | None,
        typer.Option("--prompt", metavar="TEXT", help="a user message before step N+1"),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option("--model", parser=non_empty, metavar="NAME", help="run on this model"),
    ] = None,
    new_id: Annotated[
        str | None,
        typer.Option("--id", parser=non_empty, metavar="NEW_ID", help="the fork's workflow id"),
    ] = None,
    session: Annotated[
        str | None,
        typer.Option(
            "--session",
            parser=non_empty,
            metavar="SESSION_ID",
            help="fork a session into this session (smyth send reaches it); instead of --id",
        ),
    ] = None,
    no_replay: Annotated[
        bool,
        typer.Option(
            "--no-replay",
            help="call the model for every turn of the fork; by default, without --prompt "
            "and --model, turns the original recorded are answered from its history",
        ),
    ] = False,
) -> None:
    """Fork an agent run at a step."""
    if new_id and session:
        raise typer.BadParameter("give --id or --session, not both")
    cls = load_agent(agent) if agent else None
    replay = False if no_replay else None
    run(_fork(options, workflow_id, at_step, cls, prompt, model, new_id, session, replay))


async def _fork(
    options: CommonOptions,
    workflow_id: str,
    at_step: int,
    cls: type[AgentWorkflow] | None,
    prompt: str | None,
    model: str | None,
    new_id: str | None,
    session: str | None,
    replay: bool | None,
) -> None:
    agents = await AgentClient.connect(options.settings())
    handle = await agents.fork(
        workflow_id,
        at_step=at_step,
        prompt=prompt,
        model=model,
        id=new_id,
        session_id=session,
        agent=cls,
        replay_model_turns=replay,
    )
    print(handle.id)
