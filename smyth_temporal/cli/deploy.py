"""``smyth verify-deploy``: would this code replay the agents' recent runs?

Replays the histories of recent runs (and every open one) of the agent types named,
downloaded from the server, against the local classes (``verify_deploy``). One line
per run that does not replay, naming its workflow id and its first nondeterministic
step; exit code 1 if there is any.

Added in 0.5.0.
"""

from __future__ import annotations

import sys
from datetime import timedelta
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from smyth_temporal.agent.workflow import AgentWorkflow
from smyth_temporal.cli._common import (
    EXIT_ERROR,
    CommonOptions,
    command,
    non_negative,
    run,
    status,
)
from smyth_temporal.cli.schedules import parse_duration
from smyth_temporal.clients import VerifyReport, connect_client, verify_deploy
from smyth_temporal.plugin import SmythPlugin
from smyth_temporal.worker import load_agents

__all__ = ["app"]

app = typer.Typer()

# DEFAULT_SINCE as typed: Click runs the option's parser on its default too.
_DEFAULT_SINCE: Any = "24h"

_EPILOG = (
    "Run it in CI with the code about to ship, before making its build current "
    "(`temporal worker deployment set-current-version`).\n\n"
    "examples:\n\n"
    "  smyth verify-deploy examples.market_monitor.workflows:MarketMonitor\n\n"
    "  smyth verify-deploy myapp.agents:Triage myapp.agents:Writer --since 7d --limit 500"
)


@command(
    app,
    "verify-deploy",
    epilog=_EPILOG,
    help="Replay recent runs of these agents (and every open one) from the server against "
    "the local code; name each run it cannot replay and its first nondeterministic step. "
    "Exits 1 if any.",
)
def verify(
    options: CommonOptions,
    agents: Annotated[
        list[str],
        typer.Argument(
            metavar="AGENT",
            help="an agent class as module:Class, as it will be deployed",
        ),
    ],
    since: Annotated[
        timedelta,
        typer.Option(
            "--since",
            parser=parse_duration,
            metavar="DURATION",
            help="check runs started this long ago or later (30m, 24h, 7d), besides every open run",
        ),
    ] = _DEFAULT_SINCE,
    limit: Annotated[
        int | None,
        typer.Option(
            "--limit",
            parser=non_negative,
            metavar="N",
            help="at most N runs, the most recent first (default: all)",
        ),
    ] = None,
) -> None:
    """Replay recent runs against the local code."""
    classes = load_agents(agents)
    report = run(_verify(options, classes, since, limit))
    for mismatch in report.mismatches:
        print(f"{mismatch.workflow_id}: {mismatch.reason}")
    failed = len(report.mismatches)
    if not report.checked:
        status(f"no runs of these agents started within {since} or still open: nothing to replay")
        return
    status(
        f"replayed {report.checked:,} run{'s' if report.checked != 1 else ''}: "
        + (f"{failed:,} would not replay with this code" if failed else "all replay")
    )
    if failed:
        raise typer.Exit(EXIT_ERROR)


async def _verify(
    options: CommonOptions, classes: list[type[AgentWorkflow]], since: timedelta, limit: int | None
) -> VerifyReport:
    settings = options.settings()
    client = await connect_client(settings, plugins=[SmythPlugin(settings=settings)])
    with Progress(
        TextColumn("replaying histories"),
        BarColumn(),
        MofNCompleteColumn(),
        console=Console(stderr=True),
        transient=True,
        disable=not sys.stderr.isatty(),
    ) as bar:
        task = bar.add_task("histories", total=None)

        def advance(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        return await verify_deploy(client, classes, since=since, limit=limit, progress=advance)
