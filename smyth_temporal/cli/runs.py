"""``smyth run``, ``state`` and ``result``: start agent runs, look at them, wait for them."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from temporalio.exceptions import WorkflowAlreadyStartedError

from smyth_temporal.cli._common import CommonOptions, agent_type, command, run, status
from smyth_temporal.cli._output import format_state, format_usage, progress_line
from smyth_temporal.clients import AgentClient
from smyth_temporal.clients.agents import PROGRESS_INTERVAL
from smyth_temporal.exceptions import ClientError
from smyth_temporal.types.agent import AgentInput, AgentResult, AgentState

__all__ = ["STATE_TIMEOUT", "app"]

app = typer.Typer()

STATE_TIMEOUT = 10.0
"""Seconds ``smyth state`` waits for a worker to answer the query."""

_Json = Annotated[bool, typer.Option("--json", help="print JSON")]
_WorkflowId = Annotated[str, typer.Argument(metavar="ID", help="the run's workflow id")]


@command(
    app,
    "run",
    task_queue=True,
    help="Start an agent and print its workflow id; --wait shows progress and prints the output.",
)
def run_agent(
    options: CommonOptions,
    agent: Annotated[
        str, typer.Argument(metavar="AGENT", help="the agent's workflow type name or module:Class")
    ],
    prompt: Annotated[str, typer.Option("--prompt", help="the task, as the first user message")],
    id: Annotated[
        str | None, typer.Option("--id", help="the workflow id (default: <agent>-<random>)")
    ] = None,
    tenant: Annotated[str, typer.Option("--tenant", help="whose agent this is")] = "default",
    session: Annotated[
        str | None, typer.Option("--session", help="a session id grouping runs")
    ] = None,
    wait: Annotated[
        bool, typer.Option("--wait", help="wait for the result, with progress")
    ] = False,
    json_: _Json = False,
) -> None:
    """Start an agent run."""
    run(
        _run(
            options,
            agent,
            AgentInput(prompt=prompt, tenant=tenant, session_id=session),
            id,
            wait,
            json_,
        )
    )


async def _run(
    options: CommonOptions,
    spec: str,
    agent_input: AgentInput,
    id: str | None,
    wait: bool,
    as_json: bool,
) -> None:
    settings = options.settings()
    name = agent_type(spec)
    agents = await AgentClient.connect(settings)
    if await agents.workers_polling() == 0:
        raise ClientError(
            f"no worker polls task queue {settings.task_queue!r} (namespace "
            f"{settings.namespace!r} at {settings.address}); start one with "
            "`smyth worker module:Class`"
        )
    try:
        handle = await agents.start(name, agent_input, id=id)
    except WorkflowAlreadyStartedError as exc:
        raise ClientError(f"an agent run with workflow id {exc.workflow_id!r} is running") from exc
    if not as_json:
        print(handle.id, flush=True)
    await agents.confirm_pickup(handle.id, name, note=status)
    summary: dict[str, Any] = {
        "workflow_id": handle.id,
        "run_id": handle.result_run_id,
        "agent": name,
        "task_queue": settings.task_queue,
    }
    if not wait:
        if as_json:
            print(json.dumps(summary))
        return
    result = await agents.result(handle.id, on_progress=_Progress())
    if as_json:
        print(json.dumps({**summary, "result": result.model_dump(mode="json")}))
    else:
        _print_result(result)


@command(
    app,
    "state",
    help="Show an agent's status, steps, usage, pending tool calls, last messages and lineage "
    "(the run it was forked from, its forks, its rewinds).",
)
def state(options: CommonOptions, workflow_id: _WorkflowId, json_: _Json = False) -> None:
    """Show an agent's state."""
    run(_state(options, workflow_id, json_))


async def _state(options: CommonOptions, workflow_id: str, as_json: bool) -> None:
    agents = await AgentClient.connect(options.settings())
    found = await agents.state(workflow_id, timeout=STATE_TIMEOUT, lineage=True)
    print(found.model_dump_json(indent=2) if as_json else format_state(found))


@command(
    app, "result", help="Wait for an agent run to end (showing progress) and print its output."
)
def result(options: CommonOptions, workflow_id: _WorkflowId, json_: _Json = False) -> None:
    """Wait for an agent run and print its output."""
    run(_result(options, workflow_id, json_))


async def _result(options: CommonOptions, workflow_id: str, as_json: bool) -> None:
    agents = await AgentClient.connect(options.settings())
    # Only runs still going show progress; a finished run's result comes at once.
    ended = await agents.result(
        workflow_id, on_progress=_Progress(), progress_delay=PROGRESS_INTERVAL
    )
    if as_json:
        print(ended.model_dump_json(indent=2))
    else:
        _print_result(ended)


class _Progress:
    """Prints a progress line (stderr) whenever it reads differently from the last."""

    def __init__(self) -> None:
        self.last: str | None = None

    def __call__(self, state: AgentState) -> None:
        line = progress_line(state)
        if line != self.last:
            status(line)
            self.last = line


def _print_result(result: AgentResult) -> None:
    # The summary goes to stderr; with both on a terminal, an output without a final
    # newline would run into it.
    output = result.output if result.output is not None else ""
    print(output, end="" if output.endswith("\n") else "\n", flush=True)
    status(f"{result.status} after {result.steps} steps; {format_usage(result.usage)}")
