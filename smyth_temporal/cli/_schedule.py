"""``smyth schedule``: periodic agent runs through Temporal Schedules.

``create``, ``list``, ``describe``, ``pause``, ``resume``, ``trigger`` and ``delete``,
on ``AgentClient.schedules``. Registered by ``build_parser`` in ``main``; this module
uses ``main``'s shared options and helpers, so ``main`` imports it only when it
builds the parser.

Added in 0.2.0.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable, Coroutine, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio.client import ScheduleOverlapPolicy

from smyth_temporal._schedules import (
    MIN_INTERVAL,
    ScheduleSummary,
    overlap_name,
)
from smyth_temporal.cli._output import _table, format_duration, one_line, status
from smyth_temporal.cli.main import (
    EXIT_OK,
    _add_common_options,
    _agent_type,
    _EpilogFormatter,
    _non_empty,
    _run_async,
    _settings,
)
from smyth_temporal.client import AgentClient
from smyth_temporal.exceptions import ClientError, ScheduleNotFoundError

__all__ = ["OVERLAP_POLICIES", "add_schedule_commands", "parse_duration"]

OVERLAP_POLICIES: dict[str, ScheduleOverlapPolicy] = {
    overlap_name(policy): policy for policy in ScheduleOverlapPolicy
}
"""``--overlap`` values: ``skip``, ``buffer-one``, ``buffer-all``, ``cancel-other``,
``terminate-other``, ``allow-all``."""

_PROMPT_WIDTH = 50
_NEXT_RUNS_SHOWN = 3
_INTERVAL_UNITS = (("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1))

_DURATION = re.compile(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")

ScheduleHandler = Callable[[argparse.Namespace, AgentClient], Coroutine[Any, Any, None]]

_SCHEDULE_EPILOG = """\
A schedule lives on the Temporal server and starts a run of the agent every interval,
on the agents' task queue, where a worker of the agent takes it. Intervals count from
the Unix epoch: --every 1h fires on the hour, --every 1d at midnight UTC. By default a
run that is due while the previous one still runs is skipped (--overlap skip).

examples:
  smyth schedule create MarketAnalyst --every 1h --prompt "Summarize the market."
  smyth schedule list
  smyth schedule pause MarketAnalyst-schedule-1a2b3c4d --note "market closed"
  smyth schedule trigger MarketAnalyst-schedule-1a2b3c4d
  smyth schedule delete MarketAnalyst-schedule-1a2b3c4d
"""


def parse_duration(text: str) -> timedelta:
    """``--every``: ``30s``, ``15m``, ``1h``, ``1d`` or a mix from largest, ``1h30m``.

    Raises:
        argparse.ArgumentTypeError: Not such a duration, or shorter than a second.
    """
    match = _DURATION.fullmatch(text.strip().lower())
    if not text.strip() or match is None:
        raise argparse.ArgumentTypeError(f"not a duration like 30s, 15m, 1h, 1d or 1h30m: {text}")
    days, hours, minutes, seconds = (int(group or 0) for group in match.groups())
    duration = timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)
    if duration < MIN_INTERVAL:
        raise argparse.ArgumentTypeError(f"must be at least 1s: {text}")
    return duration


def add_schedule_commands(commands: argparse._SubParsersAction[Any]) -> None:
    """Add ``schedule`` and its ``create``, ``list``, ``describe``, ``pause``, ...

    Args:
        commands: The subcommands of ``smyth``.
    """
    schedule = commands.add_parser(
        "schedule",
        help="run agents periodically: create, list, pause, resume, trigger, delete",
        description="Periodic agent runs through Temporal Schedules.",
        epilog=_SCHEDULE_EPILOG,
        formatter_class=_EpilogFormatter,
    )
    actions = schedule.add_subparsers(dest="schedule_command", required=True, metavar="COMMAND")

    create = actions.add_parser(
        "create",
        help="start an agent every interval",
        description="Create a schedule that starts AGENT with --prompt every --every; "
        "print its id.",
        epilog=_SCHEDULE_EPILOG,
        formatter_class=_EpilogFormatter,
    )
    _add_options(create, task_queue=True)
    create.add_argument(
        "agent", metavar="AGENT", help="the agent's workflow type name or module:Class"
    )
    create.add_argument(
        "--every",
        type=parse_duration,
        required=True,
        metavar="DURATION",
        help="the interval: 30s, 15m, 1h, 1d, 1h30m ... (at least 1s)",
    )
    create.add_argument(
        "--prompt", type=_non_empty, required=True, help="the task every run starts from"
    )
    create.add_argument("--id", help="the schedule id (default: <agent>-schedule-<random>)")
    create.add_argument(
        "--tenant", type=_non_empty, default="default", help="whose agent (%(default)s)"
    )
    create.add_argument(
        "--overlap",
        choices=list(OVERLAP_POLICIES),
        default="skip",
        metavar="POLICY",
        help="what to do when a run is due while the previous one still runs: "
        f"{', '.join(OVERLAP_POLICIES)} (default: %(default)s)",
    )
    create.add_argument("--paused", action="store_true", help="create it paused")
    create.add_argument("--note", metavar="TEXT", help="why it exists or is paused")
    create.add_argument(
        "--execution-timeout",
        type=parse_duration,
        metavar="DURATION",
        help="bound each run, so a stuck run does not hold back the next ones",
    )
    create.add_argument("--json", action="store_true", help="print the ScheduleSummary as JSON")
    create.set_defaults(schedule_handler=_create)

    listing = actions.add_parser(
        "list",
        help="the agent schedules",
        description="List the agent schedules of the namespace (schedules made without "
        "smyth are left out).",
    )
    _add_options(listing)
    listing.add_argument("--tenant", help="only this tenant's schedules")
    listing.add_argument(
        "--agent", metavar="AGENT", help="only this agent's (workflow type name or module:Class)"
    )
    listing.add_argument("--json", action="store_true", help="print a JSON list of ScheduleSummary")
    listing.set_defaults(schedule_handler=_list)

    describe = actions.add_parser(
        "describe",
        help="one schedule: its agent, prompt, recent and next runs",
        description="Show an agent schedule: agent, prompt, interval, state, recent runs "
        "and the next due times.",
    )
    _add_options(describe)
    describe.add_argument("schedule_id", metavar="ID", help="the schedule id")
    describe.add_argument("--json", action="store_true", help="print ScheduleSummary as JSON")
    describe.set_defaults(schedule_handler=_describe)

    pause = actions.add_parser(
        "pause",
        help="stop starting runs (a run in progress goes on)",
        description="Pause a schedule; `smyth schedule resume` starts it again.",
    )
    _add_options(pause)
    pause.add_argument("schedule_id", metavar="ID", help="the schedule id")
    pause.add_argument("--note", metavar="TEXT", help="why; shown by describe")
    pause.set_defaults(schedule_handler=_pause)

    resume = actions.add_parser(
        "resume",
        help="start runs again from the next due time",
        description="Resume a paused schedule; runs missed while paused are not made up.",
    )
    _add_options(resume)
    resume.add_argument("schedule_id", metavar="ID", help="the schedule id")
    resume.add_argument("--note", metavar="TEXT", help="why; shown by describe")
    resume.set_defaults(schedule_handler=_resume)

    trigger = actions.add_parser(
        "trigger",
        help="start a run now",
        description="Start a run now, paused or not. The schedule's overlap policy "
        "applies: with skip, nothing starts while a run is in progress.",
    )
    _add_options(trigger)
    trigger.add_argument("schedule_id", metavar="ID", help="the schedule id")
    trigger.add_argument(
        "--overlap",
        choices=list(OVERLAP_POLICIES),
        metavar="POLICY",
        help="override the schedule's overlap policy for this run (allow-all: start it "
        "even while another runs)",
    )
    trigger.set_defaults(schedule_handler=_trigger)

    delete = actions.add_parser(
        "delete",
        help="delete a schedule (runs it started go on)",
        description="Delete a schedule. Runs it started are not stopped.",
    )
    _add_options(delete)
    delete.add_argument("schedule_id", metavar="ID", help="the schedule id")
    delete.set_defaults(schedule_handler=_delete)


def _add_options(parser: argparse.ArgumentParser, *, task_queue: bool = False) -> None:
    _add_common_options(parser, task_queue=task_queue)
    parser.set_defaults(handler=_cmd_schedule)


def _cmd_schedule(args: argparse.Namespace) -> int:
    return _run_async(_schedule(args))


async def _schedule(args: argparse.Namespace) -> int:
    agents = await AgentClient.connect(_settings(args))
    handler: ScheduleHandler = args.schedule_handler
    await handler(args, agents)
    return EXIT_OK


async def _create(args: argparse.Namespace, agents: AgentClient) -> None:
    schedules = agents.schedules
    schedule_id = await schedules.create(
        _agent_type(args.agent),
        every=args.every,
        prompt=args.prompt,
        id=args.id,
        tenant=args.tenant,
        overlap=OVERLAP_POLICIES[args.overlap],
        paused=args.paused,
        note=args.note,
        execution_timeout=args.execution_timeout,
    )
    summary = await schedules.describe(schedule_id)
    if args.json:
        print(summary.model_dump_json(indent=2))
    else:
        print(schedule_id, flush=True)
        status(_when(summary, datetime.now(UTC)))
    if await agents.workers_polling() == 0:
        status(
            f"note: no worker polls task queue {agents.task_queue!r}; the runs wait until "
            f"one does (`smyth worker module:{summary.agent}`)"
        )


async def _list(args: argparse.Namespace, agents: AgentClient) -> None:
    agent = _agent_type(args.agent) if args.agent else None
    found = await agents.schedules.list(tenant=args.tenant, agent=agent)
    if args.json:
        print(json.dumps([s.model_dump(mode="json") for s in found], indent=2))
    elif found:
        print(format_schedules(found, datetime.now(UTC)))
    else:
        print("no agent schedules" + (f" (tenant {args.tenant})" if args.tenant else ""))


async def _describe(args: argparse.Namespace, agents: AgentClient) -> None:
    summary = await agents.schedules.describe(args.schedule_id)
    if args.json:
        print(summary.model_dump_json(indent=2))
    else:
        print(format_schedule(summary, datetime.now(UTC)))


async def _pause(args: argparse.Namespace, agents: AgentClient) -> None:
    await agents.schedules.pause(args.schedule_id, note=args.note)
    print(f"paused {args.schedule_id}")


async def _resume(args: argparse.Namespace, agents: AgentClient) -> None:
    schedules = agents.schedules
    await schedules.resume(args.schedule_id, note=args.note)
    print(f"resumed {args.schedule_id}")
    status(_when(await schedules.describe(args.schedule_id), datetime.now(UTC)))


async def _trigger(args: argparse.Namespace, agents: AgentClient) -> None:
    schedules = agents.schedules
    schedule_id: str = args.schedule_id
    try:
        before: ScheduleSummary | None = await schedules.describe(schedule_id)
    except ScheduleNotFoundError:
        raise
    except ClientError:
        before = None  # not an agent schedule: trigger it all the same
    await schedules.trigger(schedule_id, overlap=OVERLAP_POLICIES.get(args.overlap or ""))
    print(f"triggered {schedule_id}")
    if before is not None and before.running:
        policy = args.overlap or before.overlap
        running = ", ".join(before.running)
        if policy == "skip":
            status(f"note: {running} is still running, so with overlap skip no run starts")
        elif policy.startswith("buffer-"):
            status(f"note: {running} is still running; the run starts when it ends")


async def _delete(args: argparse.Namespace, agents: AgentClient) -> None:
    await agents.schedules.delete(args.schedule_id)
    print(f"deleted {args.schedule_id}")


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
    return _table(rows)


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
