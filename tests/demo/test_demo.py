"""``smyth demo`` end to end, and the ledger check it rests on."""

from __future__ import annotations

import asyncio
import io
import json
import os
import pty
import re
import shlex
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import pytest
import structlog
from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowExecutionStatus
from temporalio.testing import WorkflowEnvironment

from smyth_temporal import AgentClient, ApprovalDecision, ApprovalRequest, Settings, demo
from smyth_temporal.demo import (
    DEFAULT_TIMEOUT,
    KILL_FROM_STEP,
    Decision,
    DemoError,
    DemoOptions,
    Execution,
    HistoryFacts,
    ToolScheduled,
    approve_command,
    check_approval,
    check_ledger,
    find_example,
    history_facts,
    read_executions,
    run_demo,
)
from smyth_temporal.demo._processes import Workers
from smyth_temporal.demo._render import Narrator
from smyth_temporal.types import arguments_sha256

DEMO_TIMEOUT = 90.0
SALE = {"symbol": "ACME", "quantity": 5000}
"""The sale the scripted session asks for, and the demo approves."""


def demo_command(env: WorkflowEnvironment, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "smyth_temporal.cli",
        "demo",
        "--address",
        env.client.service_client.config.target_host,
        "--model",
        "scripted",
        *extra,
    ]


def clean_environ() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SMYTH_"))}


async def test_demo_survives_the_kill(env: WorkflowEnvironment, tmp_path: Path) -> None:
    # From an empty directory: the demo must find the example beside the package, and
    # write its files under this directory's .smyth/demo/. Its stdin is not a terminal,
    # so the script approves even with --interactive.
    process = await asyncio.create_subprocess_exec(
        *demo_command(env, "--interactive"),
        cwd=tmp_path,
        env=clean_environ(),
        stdin=asyncio.subprocess.DEVNULL,
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
    assert "--interactive needs a terminal on stdin; the script approves instead" in out

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
    assert "steps went on from 3 to 7" in out
    assert "- 5 of 5 calls completed before the kill ran exactly once" in out
    assert "- 3 of 3 calls made after the kill ran exactly once" in out
    assert "- 1 alert in .smyth/demo/alerts.jsonl, none sent twice" in out
    assert "PROBLEM" not in out
    assert "Alerts sent: 1" in out
    kill_to_progress = re.search(r"first new result\s+([\d.]+)s after the kill", out)
    assert kill_to_progress and float(kill_to_progress.group(1)) < 15

    # What the demo says about the approval, in the order it happened.
    lines = out.splitlines()
    asked = index_of(
        lines, r"APPROVAL\s+the run waits for a decision on sell_position\(ACME, 5000\)"
    )
    request_id = search(out, r"\n\s+request\s+(apr-6-call_6_0) \(step 6\)\n")
    printed_hash = search(out, r"\n\s+sha256\s+([0-9a-f]{64})\n")
    assert printed_hash == arguments_sha256(SALE)
    assert re.search(r"\n\s+reason\s+ACME is down 6\.80% today, -3\.6 sigma", out)
    assert re.search(r"\n\s+deadline\s+[\d-]+ [\d:.]+ UTC, in 30 min \(then rejected\)\n", out)
    listed = index_of(lines, r"approvals\s+AgentClient\.pending_approvals\(\) finds it too")
    approving = index_of(lines, r"approve\s+AgentClient\.approve\(workflow_id, 'apr-6-call_6_0'")
    assert f"arguments_sha256='{printed_hash[:16]}…'" in lines[approving + 1]
    approved = index_of(lines, r"approved\s+by demo-script at [\d-]+ [\d:.]+ UTC, [\d.]+s after")
    resumed = index_of(lines, r"step 6\s+sell_position\(ACME, 5000\) -> trade_id=")
    assert asked < listed < approving < approved < resumed
    waited = float(
        search(
            out,
            r"approval\s+sell_position\(ACME, 5000\), step 6: approved by "
            r"demo-script after ([\d.]+)s",
        )
    )
    assert 1.0 <= waited < 10  # the demo leaves the request pending for APPROVAL_PAUSE
    assert re.search(
        r"- AgentClient\.pending_approvals\(\) listed it [\d.]+s after it was seen", out
    )
    assert re.search(
        r"- sell_position ran once, [\d.]+s after the approval was sent; 1 sale in\s+"
        r"\.smyth/demo/trades\.jsonl, none made twice",
        out,
    )
    history = re.search(
        r"history: update decide_approval accepted from demo-script at event (\d+);\s+"
        r"smyth\.tool\.sell_position scheduled at event (\d+)",
        out,
    )
    assert history, out
    accepted_at, scheduled_at = int(history.group(1)), int(history.group(2))
    assert accepted_at < scheduled_at
    assert re.search(r"Sales: 5,000 ACME at 101\.50 USD \(trade \w+\)", out)

    # What the ledger says, read here rather than taken from the demo's word.
    files = tmp_path / ".smyth" / "demo"
    executions = read_executions(files / "executions.jsonl")
    first_pid, second_pid = int(killed.group(1)), int(replacement.group(1))
    assert {e.pid for e in executions} == {first_pid, second_pid}
    by_key: dict[str, list[Execution]] = {}
    for execution in executions:
        by_key.setdefault(execution.key, []).append(execution)
    assert len(by_key) == 9
    repeated = {key: runs for key, runs in by_key.items() if len(runs) > 1}
    [(repeated_key, (cut, rerun))] = repeated.items()
    assert repeated_key.startswith(f"{workflow_id.group(1)}/")
    assert repeated_key.endswith("/3/call_3_0")
    assert (cut.tool, cut.pid, cut.attempt, cut.ended) == ("get_volatility", first_pid, 1, None)
    assert (rerun.pid, rerun.attempt) == (second_pid, 2) and rerun.ended is not None
    assert all(runs[0].ended is not None for runs in by_key.values() if len(runs) == 1)
    assert max(e.step for e in executions if e.pid == first_pid) == 3
    assert min(e.step for e in executions if e.pid == second_pid) == 3
    assert len((files / "alerts.jsonl").read_text().splitlines()) == 1
    (trade,) = [json.loads(line) for line in (files / "trades.jsonl").read_text().splitlines()]
    assert trade["key"] == repeated_key.replace("/3/call_3_0", "/6/call_6_0")
    (sale,) = [e for e in executions if e.tool == "sell_position"]
    assert (sale.step, sale.call_id, sale.pid, sale.attempt) == (6, "call_6_0", second_pid, 1)
    assert sale.arguments == SALE and sale.ended is not None
    # Worker 1 died without a word; worker 2 was stopped gracefully at the end.
    assert "worker.stopped" not in (files / "worker-1.log").read_text()
    assert "worker.stopped" in (files / "worker-2.log").read_text()

    # What Temporal says: one run, completed; one activity needed a second attempt.
    handle = env.client.get_workflow_handle(workflow_id.group(1))
    description = await handle.describe()
    assert description.status == WorkflowExecutionStatus.COMPLETED
    events = [event async for event in handle.fetch_history_events()]
    attempts = [
        event.activity_task_started_event_attributes.attempt
        for event in events
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
    ]
    assert len(attempts) == 7 + 9  # model turns and tool calls
    assert sorted(attempts)[-2:] == [1, 2]
    # One decision, the demo's, by update, pinning the printed hash; the sale was
    # scheduled once, after it, and its only execution started after it was accepted.
    (accepted,) = [
        event
        for event in events
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
    ]
    update = accepted.workflow_execution_update_accepted_event_attributes.accepted_request
    assert update.input.name == "decide_approval"
    decision = json.loads(update.input.args.payloads[0].data)
    assert (decision["request_id"], decision["by"], decision["approved"]) == (
        request_id,
        "demo-script",
        True,
    )
    assert decision["arguments_sha256"] == printed_hash
    (scheduled,) = [
        event
        for event in events
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and event.activity_task_scheduled_event_attributes.activity_type.name
        == "smyth.tool.sell_position"
    ]
    assert (accepted.event_id, scheduled.event_id) == (accepted_at, scheduled_at)
    assert sale.started > accepted.event_time.ToMicroseconds() / 1e6


async def test_demo_lets_a_person_approve(env: WorkflowEnvironment, tmp_path: Path) -> None:
    # --interactive on a terminal: the demo prints the `smyth approve` command and waits;
    # the command it printed, run as is, is what lets the run finish.
    controller, terminal = pty.openpty()
    process = await asyncio.create_subprocess_exec(
        *demo_command(env, "--interactive"),
        cwd=tmp_path,
        env=clean_environ(),
        stdin=terminal,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    os.close(terminal)
    seen: list[str] = []
    try:
        assert process.stdout is not None
        async with asyncio.timeout(DEMO_TIMEOUT):
            while not (command := _printed_command(seen)):
                line = await process.stdout.readline()
                assert line, "the demo ended without printing the command:\n" + "".join(seen)
                seen.append(line.decode())
            # The demo waits for the decision: nothing approved it meanwhile.
            await asyncio.sleep(1.5)
            assert process.returncode is None
            words = shlex.split(command)
            assert words[:2] == ["smyth", "approve"] and "--sha256" in words
            approve = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "smyth_temporal.cli",
                *words[1:],
                cwd=tmp_path,  # where the person ran the demo: its project, its store
                env=clean_environ(),
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
            )
            approved, _ = await approve.communicate()
            assert approve.returncode == 0, approved.decode()
            rest, stderr = await process.communicate()
    finally:
        os.close(controller)
        if process.returncode is None:
            process.kill()
            await process.wait()
    out = "".join(seen) + rest.decode()
    assert process.returncode == 0, f"demo failed:\n{out}\n{stderr.decode()}"
    by = words[words.index("--by") + 1]
    assert re.search(rf"approved\s+by {re.escape(by)} at ", out), out
    assert re.search(
        rf"approval\s+sell_position\(ACME, 5000\), step 6: approved by {re.escape(by)}", out
    )
    assert "- sell_position ran once" in out
    assert "PROBLEM" not in out and "demo-script" not in out
    (trade,) = (tmp_path / ".smyth" / "demo" / "trades.jsonl").read_text().splitlines()
    assert json.loads(trade)["quantity"] == 5000


def _printed_command(lines: list[str]) -> str | None:
    for line in lines:
        if line.strip().startswith("smyth approve "):
            return line.strip()
    return None


def index_of(lines: list[str], pattern: str) -> int:
    """The index of the first line matching ``pattern``."""
    for index, line in enumerate(lines):
        if re.search(pattern, line):
            return index
    raise AssertionError(f"no line matches {pattern!r}:\n" + "\n".join(lines))


def search(text: str, pattern: str) -> str:
    """The first group of ``pattern`` in ``text``."""
    found = re.search(pattern, text)
    assert found, f"{pattern!r} not in:\n{text}"
    return found.group(1)


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
    example = find_example([Path(__file__).resolve().parents[2]])
    assert example.prompt.startswith("Check on my watchlist")


NOW = datetime(2025, 1, 15, 15, 30, tzinfo=UTC)


def request(status: str = "approved", **decision: Any) -> ApprovalRequest:
    return ApprovalRequest(
        id="apr-6-call_6_0",
        tool="sell_position",
        call_id="call_6_0",
        step=6,
        arguments=SALE,
        arguments_sha256=arguments_sha256(SALE),
        requested_at=NOW,
        deadline=NOW + timedelta(minutes=30),
        status=status,
        decision=None
        if status == "pending"
        else ApprovalDecision(approved=status == "approved", by="demo-script", **decision),
        decided_at=None if status == "pending" else NOW + timedelta(seconds=1),
    )


SOLD = run("sell_position", 6, "call_6_0", pid=20)  # started at 6.0
HISTORY = HistoryFacts(
    decisions=[Decision(50, "update", "apr-6-call_6_0", "demo-script")],
    scheduled=[
        ToolScheduled(40, "send_alert", 5, "call_5_0"),
        ToolScheduled(53, "sell_position", 6, "call_6_0"),
    ],
)


def test_check_approval_accepts_one_run_after_the_decision() -> None:
    proof = check_approval(request(), [GOOD[0], SOLD], HISTORY, not_before=5.9)
    assert proof.problems == []
    assert proof.runs == [SOLD]
    assert proof.decision == HISTORY.decisions[0]
    assert [s.event_id for s in proof.scheduled] == [53]


def test_check_approval_catches_a_second_run() -> None:
    again = run("sell_position", 6, "call_6_0", pid=20, attempt=2)
    proof = check_approval(request(), [SOLD, again], HISTORY, not_before=5.9)
    assert proof.problems == [
        "sell_position of request apr-6-call_6_0 was approved and then ran 2 times (2 to the end)"
    ]


def test_check_approval_catches_a_run_before_the_approval() -> None:
    proof = check_approval(request(), [SOLD], HISTORY, not_before=6.5)
    assert proof.problems == [
        "sell_position of request apr-6-call_6_0 started before it was approved"
    ]


def test_check_approval_catches_history_out_of_order_or_missing() -> None:
    early = HistoryFacts(
        decisions=HISTORY.decisions, scheduled=[ToolScheduled(45, "sell_position", 6, "call_6_0")]
    )
    proof = check_approval(request(), [SOLD], early, not_before=5.9)
    assert proof.problems == [
        "history scheduled sell_position of request apr-6-call_6_0 before its decision"
    ]
    proof = check_approval(request(), [SOLD], HistoryFacts(), not_before=5.9)
    assert proof.problems == [
        "the history of the run has no decision for sell_position of request apr-6-call_6_0",
        "history scheduled sell_position of request apr-6-call_6_0 0 times",
    ]


def test_check_approval_of_a_rejection_wants_no_run() -> None:
    rejected = request("rejected", comment="no")
    assert (
        check_approval(rejected, [GOOD[0]], HistoryFacts(HISTORY.decisions), not_before=0).problems
        == []
    )
    proof = check_approval(rejected, [SOLD], HISTORY, not_before=0)
    assert proof.problems == ["sell_position of request apr-6-call_6_0 was rejected but ran once"]
    pending = check_approval(request("pending"), [], HistoryFacts(), not_before=0)
    assert pending.problems == ["sell_position of request apr-6-call_6_0 was never decided"]


def test_check_ledger_catches_a_sale_made_twice() -> None:
    trades = [{"key": "wf/6/call_6_0"}, {"key": "wf/6/call_6_0"}]
    proof = check_ledger(GOOD, [], completed_before_kill=DONE, killed_pid=10, trades=trades)
    assert proof.trades == 2
    assert proof.problems == ["the sale of call wf/6/call_6_0 was made 2 times"]


def _event(event_id: int, event_type: EventType.ValueType) -> HistoryEvent:
    return HistoryEvent(event_id=event_id, event_type=event_type)


def test_history_facts_reads_decisions_and_tool_calls() -> None:
    def payload(value: dict[str, Any]) -> Payload:
        return Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(value).encode())

    accepted = _event(7, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED)
    update = accepted.workflow_execution_update_accepted_event_attributes.accepted_request.input
    update.name = "decide_approval"
    update.args.payloads.append(
        payload({"request_id": "apr-6-call_6_0", "by": "alice", "approved": True})
    )
    signaled = _event(9, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED)
    signaled.workflow_execution_signaled_event_attributes.signal_name = "approval_decision"
    signaled.workflow_execution_signaled_event_attributes.input.payloads.append(
        payload({"request_id": None, "by": "bob", "approved": False})
    )
    other_signal = _event(10, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED)
    other_signal.workflow_execution_signaled_event_attributes.signal_name = "something_else"
    scheduled = _event(11, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
    activity = scheduled.activity_task_scheduled_event_attributes
    activity.activity_type.name = "smyth.tool.sell_position"
    activity.input.payloads.append(
        payload({"tool": "sell_position", "step": 6, "call_id": "call_6_0"})
    )
    model = _event(12, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
    model.activity_task_scheduled_event_attributes.activity_type.name = "smyth.model"

    facts = history_facts([accepted, signaled, other_signal, scheduled, model])
    assert facts.decisions == [
        Decision(7, "update", "apr-6-call_6_0", "alice"),
        Decision(9, "signal", None, "bob"),
    ]
    assert facts.scheduled == [ToolScheduled(11, "sell_position", 6, "call_6_0")]


def test_approve_command_reaches_the_demo_server() -> None:
    settings = Settings.load(address="localhost:7233", namespace="default")
    waiting = request("pending")
    command = approve_command("wf-1", waiting, by="Ann Smith", settings=settings, defaults=settings)
    assert command == f"smyth approve wf-1 --by 'Ann Smith' --sha256 {arguments_sha256(SALE)}"
    elsewhere = Settings.load(address="127.0.0.1:9999", namespace="default")
    command = approve_command("wf-1", waiting, by="ann", settings=elsewhere, defaults=settings)
    assert command.endswith(" --address 127.0.0.1:9999")
    command = approve_command("wf-1", waiting, by="ann", settings=settings, defaults=None)
    assert command.endswith(" --address localhost:7233 --namespace default")


def test_check_ledger_catches_a_rerun_under_another_key() -> None:
    other = Execution(**{**GOOD[3].__dict__, "key": "wf/3/other"})
    proof = check_ledger([*GOOD[:3], other, GOOD[4]], [], completed_before_kill=DONE, killed_pid=10)
    assert proof.problems == ["get_volatility(ACME) re-ran with another idempotency key"]


def test_check_ledger_catches_later_calls_that_ran_twice() -> None:
    # A call that ended on the killed worker (not cut off) and ran twice after it, and
    # a call made after the kill that ran twice.
    ended_before = run("get_news", 2, "call_2_1", pid=10)
    ledger = [
        *GOOD,
        ended_before,
        run("get_news", 2, "call_2_1", pid=20, attempt=2),
        run("get_news", 2, "call_2_1", pid=20, attempt=3),
        run("send_alert", 4, "call_4_0", pid=20, attempt=2),
    ]
    proof = check_ledger(ledger, [], completed_before_kill=DONE, killed_pid=10)
    assert proof.problems == [
        "send_alert(ACME) ran 2 times",
        "get_news(ACME) ran 3 times",
    ]


def test_read_executions_pairs_starts_and_ends(tmp_path: Path) -> None:
    def line(event: str, key: str, attempt: int, pid: int, time: float, **more: Any) -> str:
        entry = {"event": event, "key": key, "attempt": attempt, "pid": pid, "time": time}
        return json.dumps({**entry, **more})

    start = {"tool": "get_quote", "arguments": {"symbol": "ACME"}, "step": 1}
    ledger = tmp_path / "executions.jsonl"
    ledger.write_text(
        "\n".join(
            [
                line("start", "wf/1/b", 1, 20, 2.0, call_id="b", **start),
                line("start", "wf/1/a", 1, 10, 1.0, call_id="a", **start),
                line("end", "wf/1/a", 1, 10, 1.5, error="boom"),
                line("end", "wf/1/unknown", 1, 10, 1.6),  # no start: ignored
                '{"event": "start", "key": "wf/1/c"',  # being written: read next time
            ]
        )
    )
    first, second = read_executions(ledger)
    assert (first.call_id, first.ended, first.error, first.label) == (
        "a",
        1.5,
        "boom",
        "get_quote(ACME)",
    )
    assert (second.call_id, second.pid, second.ended) == ("b", 20, None)
    assert read_executions(tmp_path / "absent.jsonl") == []


def test_the_kill_point_is_a_slow_or_late_call_still_running() -> None:
    assert run("get_volatility", 1, "c", pid=1, ended=False).kill_point
    assert run("send_alert", KILL_FROM_STEP, "c", pid=1, ended=False).kill_point
    assert not run("get_quote", KILL_FROM_STEP - 1, "c", pid=1, ended=False).kill_point
    assert not run("get_volatility", KILL_FROM_STEP, "c", pid=1).kill_point


def test_check_approval_takes_a_signal_for_the_only_pending_request() -> None:
    # `smyth approve --no-wait` signals a decision that may name no request.
    facts = HistoryFacts(
        decisions=[Decision(50, "signal", None, "bob")], scheduled=HISTORY.scheduled
    )
    proof = check_approval(request(), [SOLD], facts, not_before=5.9)
    assert proof.problems == []
    assert proof.decision == Decision(50, "signal", None, "bob")


def test_history_facts_skips_payloads_that_are_not_json_objects() -> None:
    accepted = _event(7, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED)
    update = accepted.workflow_execution_update_accepted_event_attributes.accepted_request.input
    update.name = "decide_approval"
    update.args.payloads.append(Payload(data=b"\x00not json"))
    scheduled = _event(8, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
    activity = scheduled.activity_task_scheduled_event_attributes
    activity.activity_type.name = "smyth.tool.get_quote"
    activity.input.payloads.append(Payload(data=b"[1, 2]"))
    facts = history_facts([accepted, scheduled])
    assert facts.decisions == [Decision(7, "update", None, "None")]
    assert facts.scheduled == [ToolScheduled(8, "None", 0, "None")]


class Pollers:
    """Stands in for ``AgentClient.workers_polling``: the counts a server lists, in turn."""

    def __init__(self, *counts: int) -> None:
        self.counts = list(counts)

    async def workers_polling(self, task_queue: str | None = None) -> int:
        return self.counts.pop(0) if len(self.counts) > 1 else self.counts[0]


async def test_a_replacement_polls_once_the_queue_lists_more_pollers(tmp_path: Path) -> None:
    # The server keeps listing the killed worker's poller: 1 before the replacement
    # starts, still 1 until it polls, then 2.
    agents = Pollers(1, 1, 2)
    workers = Workers(
        cast(AgentClient, agents),
        Settings.load(address="localhost:1", namespace="default", task_queue="q"),
        example=find_example([Path(__file__).resolve().parents[2]]),
        model="scripted",
        files=tmp_path,
        ledger=tmp_path / "alerts.jsonl",
    )
    workers._command = lambda: [sys.executable, "-c", "import time; time.sleep(30)"]  # type: ignore[method-assign]
    worker = await workers.spawn()
    try:
        assert worker.pollers_before == 1
        assert not await workers.is_polling(worker)
        assert await workers.is_polling(worker)
    finally:
        workers.stop()
    assert worker.process.returncode is not None and worker.log_file.closed


def test_the_narration_is_plain_text_off_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    out = io.StringIO()
    narrator = Narrator(out, started=100.0)
    narrator.line("CRASH", "[bold]not markup[/bold] :smile:", at=101.25)
    narrator.bullet("- " + "word " * 30, label="proof", style="green")
    lines = out.getvalue().splitlines()
    assert lines[0] == "   1.2s  CRASH     [bold]not markup[/bold] :smile:"
    assert lines[1].startswith("  proof      - word word") and len(lines[1]) <= 90
    assert lines[2].startswith(" " * 15 + "word")
    assert "\x1b" not in out.getvalue()


def test_run_demo_fails_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    logging = structlog.get_config()
    try:
        assert run_demo(DemoOptions(model="openai")) == 1
    finally:  # run_demo configures logging for its process; this one is the tests'
        structlog.configure(**logging)
    err = capsys.readouterr().err
    assert err.startswith("smyth: error: demo: --model openai needs OPENAI_API_KEY")
    assert err.count("\n") == 1


def test_the_public_names_are_exported() -> None:
    assert set(demo.__all__) == {name for name in vars(demo) if not name.startswith("_")}
    assert DemoOptions().timeout == DEFAULT_TIMEOUT
