"""``smyth rewind``: the same agent run, back to a step (``AgentClient.rewind``).

Added in 0.10.0.
"""

from __future__ import annotations

from typing import Annotated

import typer

from smyth_temporal.agent.workflow import AgentWorkflow
from smyth_temporal.cli._common import CommonOptions, command, non_empty, non_negative, run
from smyth_temporal.clients import AgentClient, RewindResult
from smyth_temporal.worker import load_agent

__all__ = ["app", "rewind_lines"]

app = typer.Typer()

_EPILOG = (
    "The run goes on under the same workflow id from right after step N, through "
    "Temporal's reset: its history shows the reset, and the abandoned run's history stays "
    "(temporal workflow show --run-id). Memories the run wrote after step N are removed; "
    "approvals decided after it are void. Tool calls with side effects after step N "
    "cannot be undone: they are listed (and a tool's reconcile hook is asked about them "
    "when the run calls them again). --agent names the agent's class, whose tools say "
    "which calls had side effects; without it every tool call after step N is listed.\n\n"
    "examples:\n\n"
    "  smyth rewind Analyst-3f9a0c1d2e4b --to-step 36 --prompt 'Check the March figures first.'"
)


@command(
    app,
    "rewind",
    epilog=_EPILOG,
    help="Take an agent run back to right after step N (the same workflow id goes on from "
    "there), optionally with a new user message; lists the side effects it cannot undo.",
)
def rewind(
    options: CommonOptions,
    workflow_id: Annotated[
        str, typer.Argument(metavar="WORKFLOW_ID", help="the run to rewind", parser=non_empty)
    ],
    to_step: Annotated[
        int,
        typer.Option("--to-step", parser=non_negative, metavar="N", help="go back to after step N"),
    ],
    prompt: Annotated[
        str | None,
        typer.Option(
            "--prompt", parser=non_empty, metavar="TEXT", help="a user message before step N+1"
        ),
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option("--agent", parser=non_empty, metavar="module:Class", help="the agent's class"),
    ] = None,
) -> None:
    """Rewind an agent run to a step."""
    cls = load_agent(agent) if agent else None
    run(_rewind(options, workflow_id, to_step, prompt, cls))


async def _rewind(
    options: CommonOptions,
    workflow_id: str,
    to_step: int,
    prompt: str | None,
    cls: type[AgentWorkflow] | None,
) -> None:
    agents = await AgentClient.connect(options.settings())
    result = await agents.rewind(workflow_id, to_step=to_step, prompt=prompt, agent=cls)
    for line in rewind_lines(result):
        print(line)


def rewind_lines(result: RewindResult) -> list[str]:
    """What ``smyth rewind`` prints: the new run, then what the rewind could not undo."""
    lines = [
        f"rewound {result.workflow_id} to step {result.to_step}: run {result.run_id} goes on "
        f"from step {result.to_step + 1} (abandoned run {result.abandoned_run_id}, "
        f"{result.seconds * 1000:.0f} ms)"
    ]
    if result.side_effects:
        lines.append(f"side effects after step {result.to_step} that a rewind cannot undo:")
        for call in result.side_effects:
            what = f"result: {call.result}" if call.outcome == "completed" else "outcome unknown"
            lines.append(
                f"  step {call.step}  {call.tool}  {call.outcome}  "
                f"key {call.idempotency_key}  {what}"
            )
    else:
        lines.append(f"no side effects after step {result.to_step}")
    if result.voided_approvals:
        lines.append("approvals void: " + ", ".join(result.voided_approvals))
    return lines
