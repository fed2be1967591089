"""``smyth demo`` end to end, and the ledger check it rests on."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowExecutionStatus
from temporalio.testing import WorkflowEnvironment

from smyth_temporal.cli._demo import (
    DemoError,
    Execution,
    check_ledger,
    find_example,
    read_executions,
)

DEMO_TIMEOUT = 90.0


async def test_demo_survives_the_kill(env: WorkflowEnvironment, tmp_path: Path) -> None:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SMYTH_"))}
    # From an empty directory: the demo must find the example beside the package, and
    # write its files under this directory's .smyth/demo/.
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "smyth_temporal.cli",
        "demo",
        "--address",
        env.client.service_client.config.target_host,
        "--model",
        "scripted",
        cwd=tmp_path,
        env=environ,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(), DEMO_TIMEOUT)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    out = stdout.decode()
    assert process.returncode == 0, f"demo failed:\n{out}\n{stderr.decode()}"

    # What the demo says.
    workflow_id = re.search(r"workflow id (market-monitor-demo-\w+)", out)
    killed = re.search(
        r"CRASH\s+get_volatility\(ACME\) running on worker 1: SIGKILL to pid (\d+)", out
    )
    replacement = re.search(r"worker 2\s+started, pid (\d+)", out)
    assert workflow_id and killed and replacement, out
    assert "using the server at" in out  # the session's server, not a new one
    assert re.search(r"worker 2\s+polling, [\d.]+s after the kill", out)
    assert re.search(r"retry\s+get_volatility\(ACME\) attempt 2 starts on worker 2", out)
    assert "steps went on from 3 to 6" in out
    assert "- 5 of 5 calls completed before the kill ran exactly once" in out
    assert "- 1 alert in .smyth/demo/alerts.jsonl, none sent twice" in out
    assert "PROBLEM" not in out
    assert "Alerts sent: 1" in out
    kill_to_progress = re.search(r"first new result\s+([\d.]+)s after the kill", out)
    assert kill_to_progress and float(kill_to_progress.group(1)) < 15

    # What the ledger says, read here rather than taken from the demo's word.
    files = tmp_path / ".smyth" / "demo"
    executions = read_executions(files / "executions.jsonl")
    first_pid, second_pid = int(killed.group(1)), int(replacement.group(1))
    assert {e.pid for e in executions} == {first_pid, second_pid}
    by_key: dict[str, list[Execution]] = {}
    for execution in executions:
        by_key.setdefault(execution.key, []).append(execution)
    assert len(by_key) == 8
    repeated = {key: runs for key, runs in by_key.items() if len(runs) > 1}
    assert list(repeated) == [f"{workflow_id.group(1)}/3/call_3_0"]
    cut, rerun = repeated[f"{workflow_id.group(1)}/3/call_3_0"]
    assert (cut.tool, cut.pid, cut.attempt, cut.ended) == ("get_volatility", first_pid, 1, None)
    assert (rerun.pid, rerun.attempt) == (second_pid, 2) and rerun.ended is not None
    assert all(runs[0].ended is not None for runs in by_key.values() if len(runs) == 1)
    assert max(e.step for e in executions if e.pid == first_pid) == 3
    assert min(e.step for e in executions if e.pid == second_pid) == 3
    assert len((files / "alerts.jsonl").read_text().splitlines()) == 1
    # Worker 1 died without a word; worker 2 was stopped gracefully at the end.
    assert "worker.stopped" not in (files / "worker-1.log").read_text()
    assert "worker.stopped" in (files / "worker-2.log").read_text()

    # What Temporal says: one run, completed; one activity needed a second attempt.
    handle = env.client.get_workflow_handle(workflow_id.group(1))
    description = await handle.describe()
    assert description.status == WorkflowExecutionStatus.COMPLETED
    attempts = [
        event.activity_task_started_event_attributes.attempt
        async for event in handle.fetch_history_events()
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
    ]
    assert len(attempts) == 6 + 8  # model turns and tool calls
    assert sorted(attempts)[-2:] == [1, 2]


def run(
    tool: str, step: int, call: str, pid: int, *, attempt: int = 1, ended: bool = True
) -> Execution:
    return Execution(
        tool=tool,
        arguments={"symbol": "ACME"},
        key=f"wf/{step}/{call}",
        call_id=call,
        step=step,
        attempt=attempt,
        pid=pid,
        started=float(step),
        ended=float(step) + 0.5 if ended else None,
    )


GOOD = [
    run("get_quote", 1, "call_1_0", pid=10),
    run("get_news", 2, "call_2_0", pid=10),
    run("get_volatility", 3, "call_3_0", pid=10, ended=False),
    run("get_volatility", 3, "call_3_0", pid=20, attempt=2),
    run("send_alert", 4, "call_4_0", pid=20),
]
DONE = [(1, "call_1_0"), (2, "call_2_0")]


def test_check_ledger_accepts_a_clean_recovery() -> None:
    proof = check_ledger(
        GOOD, [{"key": "wf/4/call_4_0"}], completed_before_kill=DONE, killed_pid=10
    )
    assert proof.problems == []
    assert [runs[0].tool for runs in proof.completed] == ["get_quote", "get_news"]
    assert [len(runs) for runs in proof.interrupted] == [2]
    assert [runs[0].tool for runs in proof.later] == ["send_alert"]
    assert (proof.executions, proof.alerts) == (5, 1)


def test_check_ledger_catches_a_completed_call_that_ran_again() -> None:
    ledger = [*GOOD, run("get_news", 2, "call_2_0", pid=20, attempt=2)]
    proof = check_ledger(ledger, [], completed_before_kill=DONE, killed_pid=10)
    assert proof.problems == ["get_news(ACME) had completed before the kill but ran 2 times"]


def test_check_ledger_catches_a_cut_off_call_that_never_reran() -> None:
    proof = check_ledger(GOOD[:3], [], completed_before_kill=DONE, killed_pid=10)
    assert proof.problems == [
        "get_volatility(ACME) was cut off by the kill and then ran 0 times (0 to the end)"
    ]


def test_check_ledger_catches_a_kill_that_cut_off_nothing() -> None:
    ledger = [GOOD[0], GOOD[1], run("send_alert", 4, "call_4_0", pid=20)]
    proof = check_ledger(ledger, [], completed_before_kill=DONE, killed_pid=10)
    assert proof.problems == ["the kill cut off no tool call"]


def test_check_ledger_catches_a_duplicate_alert_and_a_lost_call() -> None:
    alerts = [{"key": "wf/4/call_4_0"}, {"key": "wf/4/call_4_0"}]
    done = [*DONE, (1, "call_1_1")]
    proof = check_ledger(GOOD, alerts, completed_before_kill=done, killed_pid=10)
    assert proof.problems == [
        "1 completed call(s) are missing from the execution ledger",
        "the alert of call wf/4/call_4_0 was sent 2 times",
    ]


def test_find_example_explains_where_to_run(tmp_path: Path) -> None:
    with pytest.raises(DemoError, match="source checkout"):
        find_example([tmp_path])
    example = find_example([Path(__file__).resolve().parent.parent])
    assert example.prompt.startswith("Check on my watchlist")
