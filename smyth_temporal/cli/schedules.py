"""``smyth schedule``: periodic agent runs through Temporal Schedules.

``create``, ``list``, ``describe``, ``pause``, ``resume``, ``trigger`` and ``delete``,
on ``AgentClient.schedules``.

Added in 0.2.0.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Annotated

import typer
from temporalio.client import ScheduleOverlapPolicy

from smyth_temporal.cli._common import (
    CommonOptions,
    agent_type,
    choice,
    command,
    non_empty,
    print_json,
    run,
    status,
)
from smyth_temporal.cli._output import format_duration, one_line, table
from smyth_temporal.clients import AgentClient, ScheduleSummary
from smyth_temporal.clients.schedules import MIN_INTERVAL, overlap_name
from smyth_temporal.exceptions import ClientError, ScheduleNotFoundError

__all__ = ["OVERLAP_POLICIES", "app", "parse_duration"]

OVERLAP_POLICIES: dict[str, ScheduleOverlapPolicy] = {
    overlap_name(policy): policy for policy in ScheduleOverlapPolicy
}
"""``--overlap`` values: ``skip``, ``buffer-one``, ``buffer-all``, ``cancel-other``,
``terminate-other``, ``allow-all``."""

_PROMPT_WIDTH = 50
_NEXT_RUNS_SHOWN = 3
_INTERVAL_UNITS = (("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1))

_DURATION = re.compile(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")

_SCHEDULE_EPILOG = "\n\n".join(
    [
        (
            "A schedule lives on the Temporal server and starts a run of the agent every "
            "interval, on the agents' task queue, where a worker of the agent takes it. Intervals "
            "count from the Unix epoch: --every 1h fires on the hour, --every 1d at midnight UTC. "
            "By default a run that is due while the previous one still runs is skipped (--overlap "
            "skip)."
        ),
        "examples:",
        '  smyth schedule create MarketAnalyst --every 1h --prompt "Summarize the market."',
        "  smyth schedule list",
        '  smyth schedule pause MarketAnalyst-schedule-1a2b3c4d --note "market closed"',
        "  smyth schedule trigger MarketAnalyst-schedule-1a2b3c4d",
        "  smyth schedule delete MarketAnalyst-schedule-1a2b3c4d",
    ]
)


def parse_duration(text: str) -> timedelta:
    """``--every``: ``30s``, ``15m``, ``1h``, ``1d`` or a mix from largest, ``1h30m``.

    Raises:
        typer.BadParameter: Not such a duration, or shorter than a second.
    """
    match = _DURATION.fullmatch(text.strip().lower())
    if not text.strip() or match is None:
        raise typer.BadParameter(f"not a duration like 30s, 15m, 1h, 1d or 1h30m: {text}")
    days, hours, minutes, seconds = (int(group or 0) for group in match.groups())
    duration = timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)
    if duration < MIN_INTERVAL:
        raise typer.BadParameter(f"must be at least 1s: {text}")
    return duration


app = typer.Typer(
    help="Run agents periodically through Temporal Schedules: create, list, pause, resume, "
    "trigger, delete.",
    epilog=_SCHEDULE_EPILOG,
)

_ScheduleId = Annotated[str, typer.Argument(metavar="ID", help="the schedule id")]
_Note = Annotated[str | None, typer.Option("--note", metavar="TEXT", help="why; shown by describe")]
_Overlap = Annotated[
    str | None,
    typer.Option(
        "--overlap",
        parser=choice(*OVERLAP_POLICIES),
        metavar="POLICY",
        help="what to do when a run is due while the previous one still runs: "
        f"{', '.join(OVERLAP_POLICIES)} (default: skip)",
    ),
]
_Json = Annotated[bool, typer.Option("--json", help="print ScheduleSummary as JSON")]
_Every = Annotated[
    timedelta,
    typer.Option(
        "--every",
        parser=parse_duration,
        metavar="DURATION",
        help="the interval: 30s, 15m, 1h, 1d, 1h30m ... (at least 1s)",
    ),
]


@command(
    app,
    "create",
    task_queue=True,
    epilog=_SCHEDULE_EPILOG,
    help="Create a schedule that starts AGENT with --prompt every --every; print its id.",
)
def create(
    options: CommonOptions,
    agent: Annotated[
        str, typer.Argument(metavar="AGENT", help="the agent's workflow type name or module:Class")
    ],
    every: _Every,
    prompt: Annotated[
        str, typer.Option("--prompt", parser=non_empty, help="the task every run starts from")
    ],
    id: Annotated[
        str | None,
        typer.Option("--id", help="the schedule id (default: <agent>-schedule-<random>)"),
    ] = None,
    tenant: Annotated[
        str, typer.Option("--tenant", parser=non_empty, help="whose agent")
    ] = "default",
    overlap: _Overlap = None,
    paused: Annotated[bool, typer.Option("--paused", help="create it paused")] = False,
    note: Annotated[
        str | None, typer.Option("--note", metavar="TEXT", help="why it exists or is paused")
    ] = None,
    execution_timeout: Annotated[
        timedelta | None,
        typer.Option(
            "--execution-timeout",
            parser=parse_duration,
            metavar="DURATION",
            help="bound each run, so a stuck run does not hold back the next ones",
        ),
    ] = None,
    json_: _Json = False,
) -> None:
    """Start an agent every interval."""

    async def go(agents: AgentClient) -> None:
        schedules = agents.schedules
        schedule_id = await schedules.create(
            agent_type(agent),
            every=every,
            prompt=prompt,
            id=id,
            tenant=tenant,
            overlap=OVERLAP_POLICIES[overlap or "skip"],
            paused=paused,
            note=note,
            execution_timeout=execution_timeout,
        )
        summary = await schedules.describe(schedule_id)
        if json_:
            print(summary.model_dump_json(indent=2))
        else:
            print(schedule_id, flush=True)
            status(_when(summary, datetime.now(UTC)))
        if await agents.workers_polling() == 0:
            status(
                f"note: no worker polls task queue {agents.task_queue!r}; the runs wait until "
                f"one does (`smyth worker module:{summary.agent}`)"
            )

    run(_with_agents(options, go))


@command(
    app,
    "list",
    help="List the agent schedules of the namespace (schedules made without smyth are left out).",
)
def list_schedules(
    options: CommonOptions,
    tenant: Annotated[
        str | None, typer.Option("--tenant", help="only this tenant's schedules")
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            metavar="AGENT",
            help="only this agent's (workflow type name or module:Class)",
        ),
    ] = None,
    json_: Annotated[
        bool, typer.Option("--json", help="print a JSON list of ScheduleSummary")
    ] = False,
) -> None:
    """The agent schedules."""

    async def go(agents: AgentClient) -> None:
        found = await agents.schedules.list(
            tenant=tenant, agent=agent_type(agent) if agent else None
        )
        if json_:
            print_json([s.model_dump(mode="json") for s in found])
        elif found:
            print(format_schedules(found, datetime.now(UTC)))
        else:
            print("no agent schedules" + (f" (tenant {tenant})" if tenant else ""))

    run(_with_agents(options, go))


@command(
    app,
    "describe",
    help="Show an agent schedule: agent, prompt, interval, state, recent runs and the next due "
    "times.",
)
def describe(options: CommonOptions, schedule_id: _ScheduleId, json_: _Json = False) -> None:
    """One schedule: its agent, prompt, recent and next runs."""

    async def go(agents: AgentClient) -> None:
        summary = await agents.schedules.describe(schedule_id)
        if json_:
            print(summary.model_dump_json(indent=2))
        else:
            print(format_schedule(summary, datetime.now(UTC)))

    run(_with_agents(options, go))


@command(
    app, "pause", help="Pause a schedule (a run in progress goes on); `resume` starts it again."
)
def pause(options: CommonOptions, schedule_id: _ScheduleId, note: _Note = None) -> None:
    """Stop starting runs."""

    async def go(agents: AgentClient) -> None:
        await agents.schedules.pause(schedule_id, note=note)
        print(f"paused {schedule_id}")

    run(_with_agents(options, go))


@command(
    app,
    "resume",
    help="Resume a paused schedule from the next due time; runs missed while paused are not "
    "made up.",
)
def resume(options: CommonOptions, schedule_id: _ScheduleId, note: _Note = None) -> None:
    """Start runs again from the next due time."""

    async def go(agents: AgentClient) -> None:
        schedules = agents.schedules
        await schedules.resume(schedule_id, note=note)
        print(f"resumed {schedule_id}")
        status(_when(await schedules.describe(schedule_id), datetime.now(UTC)))

    run(_with_agents(options, go))


@command(
    app,
    "trigger",
    help="Start a run now, paused or not. The schedule's overlap policy applies: with skip, "
    "nothing starts while a run is in progress (--overlap allow-all starts it anyway).",
)
def trigger(options: CommonOptions, schedule_id: _ScheduleId, overlap: _Overlap = None) -> None:
    """Start a run now."""

    async def go(agents: AgentClient) -> None:
        schedules = agents.schedules
        try:
            before: ScheduleSummary | None = await schedules.describe(schedule_id)
        except ScheduleNotFoundError:
            raise
        except ClientError:
            before = None  # not an agent schedule: trigger it all the same
        await schedules.trigger(schedule_id, overlap=OVERLAP_POLICIES.get(overlap or ""))
        print(f"triggered {schedule_id}")
        if before is not None and before.running:
            policy = overlap or before.overlap
            running = ", ".join(before.running)
            if policy == "skip":
                status(f"note: {running} is still running, so with overlap skip no run starts")
            elif policy.startswith("buffer-"):
                status(f"note: {running} is still running; the run starts when it ends")

    run(_with_agents(options, go))


@command(app, "delete", help="Delete a schedule. Runs it started are not stopped.")
def delete(options: CommonOptions, schedule_id: _ScheduleId) -> None:
    """Delete a schedule (runs it started go on)."""

    async def go(agents: AgentClient) -> None:
        await agents.schedules.delete(schedule_id)
        print(f"deleted {schedule_id}")

    run(_with_agents(options, go))


async def _with_agents(
    options: CommonOptions, operation: Callable[[AgentClient], Awaitable[None]]
) -> None:
    await operation(await AgentClient.connect(options.settings()))


# -- output -----------------------------------------------------------------------


def format_schedules(schedules: Sequence[ScheduleSummary], now: datetime) -> str:
    """A table of schedules: id, agent, interval, state, next and last run, prompt."""
    header = ("ID", "AGENT", "EVERY", "STATE", "NEXT RUN", "LAST RUN", "RUNS", "PROMPT")
    rows = [header] + [
        (
            s.id,
            s.agent,
            _interval(s.every),
            "paused" if s.paused else "active",
            _next(s, now),
            _ago(s.recent_runs[-1].started_at, now) if s.recent_runs else "-",
            str(s.runs),
            one_line(s.prompt, _PROMPT_WIDTH),
        )
        for s in schedules
    ]
    return table(rows)


def format_schedule(summary: ScheduleSummary, now: datetime) -> str:
    """One schedule, several lines: what it starts, its state, its runs."""
    s = summary
    state = "paused" if s.paused else "active"
    if s.note:
        state += f" ({one_line(s.note)})"
    skipped = f", {s.skipped_overlap} skipped (overlap)" if s.skipped_overlap else ""
    lines = [
        f"{s.id}  (agent {s.agent}, tenant {s.tenant}, task queue {s.task_queue})",
        f"every    {_interval(s.every)}, overlap {s.overlap}",
        f"state    {state}",
        f"prompt   {one_line(s.prompt, 160)}",
        f"runs     {s.runs} started{skipped}",
    ]
    if s.running:
        lines.append(f"running  {', '.join(s.running)}")
    next_runs = ", ".join(_utc(t) for t in s.next_runs[:_NEXT_RUNS_SHOWN])
    lines.append(f"next     {next_runs or '-'}")
    if s.recent_runs:
        lines.append(f"recent runs ({len(s.recent_runs)}):")
        lines.extend(
            f"  {run.workflow_id}  started {_ago(run.started_at, now)}"
            for run in reversed(s.recent_runs)
        )
    return "\n".join(lines)


def _when(summary: ScheduleSummary, now: datetime) -> str:
    """``every 1h, next run in 12m (2026-05-03T14:00:00Z)`` or ``... paused``."""
    line = f"every {_interval(summary.every)}"
    if summary.paused:
        return line + ", paused"
    return line + f", next run {_next(summary, now)}"


def _next(summary: ScheduleSummary, now: datetime) -> str:
    if summary.paused or not summary.next_runs:
        return "-"
    due = summary.next_runs[0]
    return f"in {format_duration((due - now).total_seconds(), parts=2)} ({_utc(due)})"


def _ago(moment: datetime, now: datetime) -> str:
    return f"{format_duration((now - moment).total_seconds(), parts=2)} ago"


def _interval(every: timedelta) -> str:
    """``1h``, ``1h 30m``, ``1d 5m``: exact, unlike an age (whole seconds only)."""
    remaining = int(every.total_seconds())
    shown = []
    for suffix, size in _INTERVAL_UNITS:
        count, remaining = divmod(remaining, size)
        if count:
            shown.append(f"{count}{suffix}")
    return " ".join(shown) or "0s"


def _utc(moment: datetime) -> str:
    """``2026-05-03T14:00:00Z``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
