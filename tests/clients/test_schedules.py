"""Periodic agents through Temporal Schedules: ``AgentClient.schedules`` and ``smyth schedule``.

These tests run on the real dev server with intervals of one second, not on the
time-skipping test server: that server (``start_time_skipping_environment``, the Java
test server) does not implement the schedule service; ``CreateSchedule`` answers
"Method ... is unimplemented". Intervals are aligned to the epoch, so each test waits
up to a second for the first run, and a few seconds in all.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

import pytest
from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    ScheduleSpec,
    ScheduleState,
)

from smyth_temporal import (
    AgentClient,
    AgentInput,
    ClientError,
    ScheduleExistsError,
    ScheduleNotFoundError,
    ScheduleSummary,
    UnknownAgentError,
    UserError,
)
from smyth_temporal.cli.main import main
from smyth_temporal.cli.schedules import parse_duration
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from tests.helpers.agents import Analyst, Summarizer
from tests.helpers.cli_support import Outcome, assert_one_error_line, run_smyth

SECOND = timedelta(seconds=1)
WAIT = 20.0
"""Seconds a test waits for a schedule to reach a state (a few, normally)."""


async def wait_for(
    agents: AgentClient,
    schedule_id: str,
    condition: Callable[[ScheduleSummary], bool],
    *,
    seen: list[ScheduleSummary] | None = None,
) -> ScheduleSummary:
    """Describe the schedule every 50 ms until ``condition`` holds (each one kept in ``seen``)."""
    deadline = time.monotonic() + WAIT
    while True:
        summary = await agents.schedules.describe(schedule_id)
        if seen is not None:
            seen.append(summary)
        if condition(summary):
            return summary
        if time.monotonic() > deadline:
            pytest.fail(f"schedule {schedule_id} did not get there in {WAIT}s: {summary}")
        await asyncio.sleep(0.05)


def until_next_second(moment: datetime) -> float:
    """Seconds from now until the whole second after ``moment`` (0 if it has passed)."""
    boundary = moment.replace(microsecond=0) + SECOND
    return max((boundary - datetime.now(UTC)).total_seconds(), 0.0)


async def test_the_agent_runs_every_interval(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    model = ScriptedModel([reply("report ready")])
    async with agent_worker(client, Analyst, model=model, task_queue=task_queue):
        schedule_id = await agents.schedules.create(
            Analyst, every=SECOND, prompt="Write the report", tenant="acme"
        )
        try:
            summary = await wait_for(agents, schedule_id, lambda s: s.runs >= 3)
        finally:
            await agents.schedules.delete(schedule_id)
        runs = summary.recent_runs[:3]
        results = [await agents.result(run.workflow_id) for run in runs]
        states = [await agents.state(run.workflow_id) for run in runs]

    assert schedule_id.startswith("Analyst-schedule-")
    assert summary.agent == "Analyst"
    assert summary.every == SECOND
    assert summary.prompt == "Write the report"
    assert summary.tenant == "acme"
    assert summary.task_queue == task_queue
    assert summary.overlap == "skip"
    assert summary.skipped_overlap == 0
    # One run per interval, due on whole seconds, each under the schedule's id.
    due = [run.scheduled_at for run in runs]
    assert [b - a for a, b in itertools.pairwise(due)] == [SECOND, SECOND]
    assert all(t.microsecond == 0 for t in due)
    assert all(run.workflow_id.startswith(f"{schedule_id}-") for run in runs)
    assert len({run.workflow_id for run in runs}) == 3
    assert [r.output for r in results] == ["report ready"] * 3
    assert [r.status for r in results] == ["completed"] * 3
    assert {s.tenant for s in states} == {"acme"}
    assert {s.messages[1].content for s in states} == {"Write the report"}


async def test_a_run_still_in_progress_makes_the_next_ones_skip(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    """A run takes 1.5 intervals: the run due meanwhile is skipped, never overlapped."""
    model = ScriptedModel([tool_call("slow_lookup", symbol="ACME", seconds=1.5), reply("done")])
    seen: list[ScheduleSummary] = []
    async with agent_worker(client, Analyst, model=model, task_queue=task_queue):
        schedule_id = await agents.schedules.create(Analyst, every=SECOND, prompt="Look it up")
        try:
            summary = await wait_for(
                agents,
                schedule_id,
                lambda s: s.runs >= 2 and s.skipped_overlap >= 1,
                seen=seen,
            )
        finally:
            await agents.schedules.delete(schedule_id)
        runs = summary.recent_runs
        results = [await agents.result(run.workflow_id) for run in runs]
        executions = [await client.get_workflow_handle(r.workflow_id).describe() for r in runs]

    assert [r.output for r in results] == ["done"] * len(runs)
    assert max(len(s.running) for s in seen) == 1
    # Each run ended before the next one started.
    for earlier, later in itertools.pairwise(executions):
        assert earlier.close_time is not None
        assert earlier.close_time <= later.start_time
    # The next run is the first one due after the previous ended.
    assert runs[1].scheduled_at - runs[0].scheduled_at >= 2 * SECOND
    assert summary.skipped_overlap >= 1


async def test_pause_resume_trigger_and_delete(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    schedules = agents.schedules
    model = ScriptedModel([tool_call("slow_lookup", symbol="ACME", seconds=2.0), reply("done")])
    schedule_id = f"hourly-{task_queue}"
    async with agent_worker(client, Analyst, model=model, task_queue=task_queue):
        created = await schedules.create(
            "Analyst",
            every=timedelta(hours=1),
            prompt="Hourly check",
            id=schedule_id,
            tenant="globex",
            paused=True,
            note="not yet",
        )
        paused = await schedules.describe(schedule_id)

        # A paused schedule still runs when triggered; the overlap policy applies.
        await schedules.trigger(schedule_id)
        first = await wait_for(agents, schedule_id, lambda s: s.runs == 1 and len(s.running) == 1)
        await schedules.trigger(schedule_id)
        skipped = await wait_for(agents, schedule_id, lambda s: s.skipped_overlap == 1)
        # Run ids end with the due time to the second: a second run started in the same
        # second as the first would collide with it.
        await asyncio.sleep(until_next_second(first.recent_runs[0].scheduled_at))
        await schedules.trigger(schedule_id, overlap=ScheduleOverlapPolicy.ALLOW_ALL)
        both = await wait_for(agents, schedule_id, lambda s: s.runs == 2)

        await schedules.resume(schedule_id, note="go")
        resumed = await schedules.describe(schedule_id)
        await schedules.pause(schedule_id, note="holiday")
        paused_again = await schedules.describe(schedule_id)
        listed = {s.id: s for s in await schedules.list()}
        other_tenant = [s.id for s in await schedules.list(tenant="acme")]
        other_agent = [s.id for s in await schedules.list(agent=Summarizer)]
        this_agent = [s.id for s in await schedules.list(agent=Analyst, tenant="globex")]

        results = [await agents.result(run.workflow_id) for run in both.recent_runs]
        await schedules.delete(schedule_id)

    assert created == schedule_id
    assert paused.paused is True
    assert paused.note == "not yet"
    assert paused.runs == 0
    assert skipped.runs == 1
    assert [r.output for r in results] == ["done", "done"]

    assert resumed.paused is False
    assert resumed.note == "go"
    now = datetime.now(UTC)
    next_run = resumed.next_runs[0]
    assert (next_run.minute, next_run.second) == (0, 0)  # on the hour
    assert timedelta(0) < next_run - now <= timedelta(hours=1)
    assert paused_again.paused is True
    assert paused_again.note == "holiday"

    assert listed[schedule_id].prompt == "Hourly check"
    assert listed[schedule_id].paused is True
    assert listed[schedule_id].runs == 2
    assert schedule_id not in other_tenant
    assert schedule_id not in other_agent
    assert schedule_id in this_agent

    with pytest.raises(ScheduleNotFoundError, match=schedule_id):
        await schedules.describe(schedule_id)
    assert schedule_id not in [s.id for s in await schedules.list()]


async def test_errors(client: Client, agents: AgentClient, task_queue: str) -> None:
    schedules = agents.schedules
    for operation in (
        schedules.describe("nope"),
        schedules.pause("nope"),
        schedules.resume("nope"),
        schedules.trigger("nope"),
        schedules.delete("nope"),
    ):
        with pytest.raises(ScheduleNotFoundError, match="no schedule with id 'nope'"):
            await operation

    for every in (timedelta(0), timedelta(seconds=-5), timedelta(milliseconds=500)):
        with pytest.raises(UserError, match="at least 1 second"):
            await schedules.create(Analyst, every=every, prompt="x")
    with pytest.raises(UserError, match="prompt"):
        await schedules.create(Analyst, every=SECOND, prompt="  ")
    with pytest.raises(UnknownAgentError, match=r"not decorated with @workflow\.defn"):
        await schedules.create(AgentClient, every=SECOND, prompt="x")  # type: ignore[arg-type]

    schedule_id = f"dup-{task_queue}"
    await schedules.create(Analyst, every=timedelta(hours=1), prompt="x", id=schedule_id)
    try:
        with pytest.raises(ScheduleExistsError, match="exists already"):
            await schedules.create(Summarizer, every=SECOND, prompt="y", id=schedule_id)
        assert (await schedules.describe(schedule_id)).agent == "Analyst"  # untouched
    finally:
        await schedules.delete(schedule_id)

    # A schedule made without smyth is not listed, and describe says why.
    foreign_id = f"foreign-{task_queue}"
    await client.create_schedule(
        foreign_id,
        Schedule(
            action=ScheduleActionStartWorkflow(
                "Analyst", AgentInput(prompt="x"), id=foreign_id, task_queue=task_queue
            ),
            spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=timedelta(hours=1))]),
            state=ScheduleState(paused=True),
        ),
    )
    try:
        with pytest.raises(ClientError, match="not an agent schedule made by smyth"):
            await schedules.describe(foreign_id)
        assert foreign_id not in [s.id for s in await schedules.list()]
    finally:
        await client.get_schedule_handle(foreign_id).delete()


# -- the CLI ------------------------------------------------------------------------

Smyth = Callable[..., Awaitable[Outcome]]


@pytest.fixture
async def smyth(capsys: pytest.CaptureFixture[str], reset_structlog: None) -> Smyth:
    """Run ``smyth ARGS...`` in-process; returns exit code, stdout and stderr."""

    async def call(*args: str) -> Outcome:
        capsys.readouterr()
        code = await asyncio.to_thread(main, list(args))  # main() runs its own loop
        captured = capsys.readouterr()
        return Outcome(code, captured.out, captured.err)

    return call


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30), ("15m", 900), ("1h", 3600), ("1d", 86400), ("1h30m", 5400), (" 2H ", 7200)],
)
def test_parse_duration(text: str, seconds: int) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)


async def test_cli_schedule_commands(
    smyth: Smyth, client: Client, agents: AgentClient, address: str, task_queue: str
) -> None:
    schedule_id = f"cli-{task_queue}"
    connection = ("--address", address)
    created = await smyth(
        *("schedule", "create", "tests.helpers.agents:Analyst", "--every", "1h"),
        *("--prompt", "Daily report", "--id", schedule_id, "--tenant", "acme"),
        *("--paused", "--note", "not yet", "--task-queue", task_queue, *connection),
    )
    assert created.code == 0, created.err
    assert created.out == f"{schedule_id}\n"
    assert "every 1h, paused" in created.err
    assert f"no worker polls task queue {task_queue!r}" in created.err

    listed = await smyth("schedule", "list", "--json", "--tenant", "acme", *connection)
    [entry] = [s for s in listed.json() if s["id"] == schedule_id]
    assert entry["agent"] == "Analyst"
    assert entry["prompt"] == "Daily report"
    assert entry["every"] == "PT1H"
    assert entry["paused"] is True
    assert entry["overlap"] == "skip"
    assert ScheduleSummary.model_validate(entry).every == timedelta(hours=1)

    table = await smyth("schedule", "list", *connection)
    assert table.code == 0, table.err
    header, *rows = table.out.splitlines()
    assert header.split()[:4] == ["ID", "AGENT", "EVERY", "STATE"]
    [row] = [r for r in rows if r.startswith(schedule_id)]
    assert row.split()[1:4] == ["Analyst", "1h", "paused"]
    assert row.endswith("Daily report")

    resumed = await smyth("schedule", "resume", schedule_id, *connection)
    assert (resumed.code, resumed.out) == (0, f"resumed {schedule_id}\n"), resumed.err
    assert "every 1h, next run in " in resumed.err

    paused = await smyth("schedule", "pause", schedule_id, "--note", "holiday", *connection)
    assert (paused.code, paused.out) == (0, f"paused {schedule_id}\n"), paused.err

    triggered = await smyth("schedule", "trigger", schedule_id, *connection)
    assert (triggered.code, triggered.out) == (0, f"triggered {schedule_id}\n"), triggered.err
    await wait_for(agents, schedule_id, lambda s: s.runs == 1 and len(s.running) == 1)
    skipped = await smyth("schedule", "trigger", schedule_id, *connection)
    assert (skipped.code, skipped.out) == (0, f"triggered {schedule_id}\n"), skipped.err
    assert "is still running, so with overlap skip no run starts" in skipped.err
    await wait_for(agents, schedule_id, lambda s: s.skipped_overlap == 1)

    described = await smyth("schedule", "describe", schedule_id, *connection)
    assert described.code == 0, described.err
    lines = described.out.splitlines()
    assert lines[0] == f"{schedule_id}  (agent Analyst, tenant acme, task queue {task_queue})"
    assert "every    1h, overlap skip" in lines
    assert "state    paused (holiday)" in lines
    assert "prompt   Daily report" in lines
    assert "runs     1 started, 1 skipped (overlap)" in lines
    # No worker serves the queue: end the triggered run.
    summary = ScheduleSummary.model_validate_json(
        (await smyth("schedule", "describe", schedule_id, "--json", *connection)).out
    )
    [run] = summary.recent_runs
    await client.get_workflow_handle(run.workflow_id).terminate(reason="test over")

    again = await smyth(
        *("schedule", "create", "Analyst", "--every", "30s", "--prompt", "x"),
        *("--id", schedule_id, *connection),
    )
    assert_one_error_line(again, f"a schedule with id {schedule_id!r} exists already")

    deleted = await smyth("schedule", "delete", schedule_id, *connection)
    assert (deleted.code, deleted.out) == (0, f"deleted {schedule_id}\n"), deleted.err
    gone = await smyth("schedule", "delete", schedule_id, *connection)
    assert_one_error_line(gone, f"no schedule with id {schedule_id!r}")


async def test_cli_usage_errors(smyth: Smyth, address: str) -> None:
    for every in ("10x", "0s", "1.5h", ""):
        bad = await smyth(
            *("schedule", "create", "Analyst", "--every", every, "--prompt", "x"),
            *("--address", address),
        )
        assert bad.code == 2, (every, bad)
        assert "--every" in bad.err
    overlap = await smyth(
        *("schedule", "trigger", "some-id", "--overlap", "sometimes", "--address", address)
    )
    assert overlap.code == 2
    assert "invalid choice: 'sometimes'" in overlap.err


def test_cli_unknown_schedule_as_a_process(address: str) -> None:
    outcome = run_smyth("schedule", "pause", "no-such-schedule", "--address", address)
    assert_one_error_line(outcome, "no schedule with id 'no-such-schedule'")
