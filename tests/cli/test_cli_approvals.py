"""``smyth approvals``, ``approve`` and ``reject`` against a real dev server.

A worker process serves ``tests.helpers.approval_agents:Trader`` with the scripted model
``tests.helpers.cli_models:trader`` (it sells what the prompt names, every sale gated, then
answers with what the tools returned). Runs are started by ``smyth run`` processes and
decided by ``smyth approve``/``reject`` processes, so nothing is shared with the test
but the server. Other tests use the same server: every assertion on ``smyth
approvals`` filters by workflow id or by a tenant of its own.
"""

from __future__ import annotations

import asyncio
import io
import json
import socket
import sys
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from smyth_temporal import AgentClient, AgentState
from smyth_temporal.cli import approvals as approvals_command
from smyth_temporal.cli import main as cli
from smyth_temporal.cli._output import (
    format_approvals,
    format_deadline,
    format_decided,
    format_duration,
    format_sent,
)
from smyth_temporal.clients import PendingApproval
from smyth_temporal.testing import new_task_queue
from smyth_temporal.types import ApprovalDecision, ApprovalRequest, ApprovalRule
from tests.helpers.agents import LEDGER_ENV, read_ledger
from tests.helpers.cli_support import (
    Outcome,
    assert_one_error_line,
    run_smyth,
    spawn_worker,
    stop_process,
)

VISIBILITY_TIMEOUT = 10.0  # list queries are eventually consistent

pytestmark = pytest.mark.usefixtures("reset_structlog")


@dataclass
class TraderWorker:
    address: str
    task_queue: str
    ledger: Path

    def smyth(self, *args: str, env: dict[str, str] | None = None) -> Outcome:
        """``smyth ARGS --address ...`` as a process."""
        return run_smyth(*args, "--address", self.address, env=env)

    def start(self, prompt: str, *extra: str) -> str:
        """``smyth run Trader --prompt PROMPT``; the new run's workflow id."""
        workflow_id = f"cli-approvals-{uuid.uuid4().hex[:8]}"
        outcome = self.smyth(
            "run",
            "Trader",
            "--prompt",
            prompt,
            "--id",
            workflow_id,
            "--task-queue",
            self.task_queue,
            *extra,
        )
        assert (outcome.code, outcome.out) == (0, f"{workflow_id}\n"), outcome.err
        return workflow_id

    def executed(self, workflow_id: str) -> list[dict[str, Any]]:
        """The tool calls the worker ran for one run (from the ledger)."""
        return [e for e in read_ledger(self.ledger) if e["key"].startswith(f"{workflow_id}/")]


@pytest.fixture(scope="module")
def trader(address: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TraderWorker]:
    """``smyth worker tests.helpers.approval_agents:Trader`` with a scripted model, as a process."""
    task_queue = new_task_queue("smyth-cli-approvals")
    directory = tmp_path_factory.mktemp("trader")
    log, ledger = directory / "worker.log", directory / "ledger.jsonl"
    process = spawn_worker(
        ["tests.helpers.approval_agents:Trader"],
        model="tests.helpers.cli_models:trader",
        address=address,
        task_queue=task_queue,
        log=log,
        env={LEDGER_ENV: str(ledger)},
    )
    try:
        yield TraderWorker(address, task_queue, ledger)
    finally:
        stop_process(process)


@pytest.fixture
def agents(env: WorkflowEnvironment) -> AgentClient:
    return AgentClient(env.client)


async def pending_requests(
    agents: AgentClient, workflow_id: str, count: int
) -> list[ApprovalRequest]:
    """Wait until the run has ``count`` pending requests (by query: no visibility lag)."""
    state: AgentState | None = None
    for _ in range(200):
        state = await agents.state(workflow_id)
        if len(state.pending_approvals) == count:
            return state.pending_approvals
        await asyncio.sleep(0.05)
    raise AssertionError(f"never saw {count} pending approvals: {state}")


def listed(trader: TraderWorker, workflow_id: str, *args: str) -> list[dict[str, Any]]:
    """The entries of ``smyth approvals --json ARGS`` for one run."""
    outcome = trader.smyth("approvals", "--json", *args)
    assert outcome.code == 0, outcome.err
    return [p for p in json.loads(outcome.out) if p["workflow_id"] == workflow_id]


def listed_soon(trader: TraderWorker, workflow_id: str) -> list[dict[str, Any]]:
    """``listed``, polled until the run shows up (or the visibility timeout passes)."""
    deadline = time.monotonic() + VISIBILITY_TIMEOUT
    while not (found := listed(trader, workflow_id)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return found


# -- through the worker process ------------------------------------------------------


def test_approvals_lists_the_request_and_approve_resumes_the_run(trader: TraderWorker) -> None:
    tenant = f"desk-{uuid.uuid4().hex[:6]}"
    workflow_id = trader.start("sell ACME:10", "--tenant", tenant)

    [entry] = listed_soon(trader, workflow_id)  # no tenant filter: across all agents
    assert (entry["agent"], entry["tenant"]) == ("Trader", tenant)
    request = ApprovalRequest.model_validate(entry["request"])
    assert (request.id, request.tool, request.status) == ("apr-1-call_1_0", "sell", "pending")
    assert request.arguments == {"symbol": "ACME", "quantity": 10}
    assert trader.executed(workflow_id) == []  # nothing runs before the decision
    # Listed above, so visible: the tenant filter is what leaves it out here.
    assert listed(trader, workflow_id, "--tenant", "someone-else") == []
    assert listed(trader, workflow_id, "--tenant", tenant) == [entry]

    table = trader.smyth("approvals", "--tenant", tenant)
    assert table.code == 0, table.err
    header, row = table.out.splitlines()  # the tenant is ours alone: one row
    assert header.replace("WORKFLOW ID", "WORKFLOW_ID").split() == [
        *("AGENT", "WORKFLOW_ID", "REQUEST", "TOOL", "ARGUMENTS", "AGE", "DEADLINE")
    ]
    agent, listed_id, request_id, tool, arguments, age, *due = row.split()
    assert (agent, listed_id, request_id, tool) == ("Trader", workflow_id, request.id, "sell")
    assert arguments == '{"symbol":"ACME","quantity":10}'
    assert age.endswith("s") and age[:-1].isdigit(), age  # seconds old
    assert due == ["in", "6d", "23h"]  # the default timeout is 7 days
    assert header.index("ARGUMENTS") == row.index(arguments)  # aligned columns

    approve = trader.smyth(
        "approve", workflow_id, "--by", "alice", "--sha256", request.arguments_sha256
    )
    assert approve.code == 0, approve.err
    assert approve.out == f"approved apr-1-call_1_0 (sell) on {workflow_id} by alice\n"

    result = trader.smyth("result", workflow_id)
    assert (result.code, result.out) == (0, "sold 10 ACME\n"), result.err
    assert [(e["tool"], e["quantity"]) for e in trader.executed(workflow_id)] == [("sell", 10)]

    deadline = time.monotonic() + VISIBILITY_TIMEOUT
    while (empty := trader.smyth("approvals", "--tenant", tenant)).out != (
        f"no pending approvals (tenant {tenant})\n"
    ):
        assert time.monotonic() < deadline, f"still listed after the decision: {empty.out}"
        time.sleep(0.2)
    assert trader.smyth("approvals", "--json", "--tenant", tenant).out == "[]\n"


async def test_reject_reason_reaches_the_model(trader: TraderWorker, agents: AgentClient) -> None:
    workflow_id = await asyncio.to_thread(trader.start, "sell ACME:10")
    [request] = await pending_requests(agents, workflow_id, 1)

    # --by defaults to user@host (getpass reads LOGNAME first, then USER).
    reject = await asyncio.to_thread(
        trader.smyth,
        "reject",
        workflow_id,
        "--reason",
        "market is closed",
        "--sha256",
        request.arguments_sha256,
        env={"LOGNAME": "bob", "USER": "bob"},
    )
    assert reject.code == 0, reject.err
    by = f"bob@{socket.gethostname()}"
    assert reject.out == (
        f"rejected apr-1-call_1_0 (sell) on {workflow_id} by {by}: market is closed\n"
    )

    result = await asyncio.to_thread(trader.smyth, "result", workflow_id)
    assert result.code == 0, result.err
    assert "the call to 'sell' was not run" in result.out
    assert f"rejected by {by}: market is closed" in result.out
    assert trader.executed(workflow_id) == []

    # Temporal says "not found" for a run that is over; the CLI says what happened.
    late = await asyncio.to_thread(trader.smyth, "approve", workflow_id, "--by", "bob")
    assert_one_error_line(
        late,
        f"agent run {workflow_id!r} has already ended (completed); there is nothing left to decide",
    )


async def test_invalid_decisions_are_one_line_errors(
    trader: TraderWorker, agents: AgentClient
) -> None:
    workflow_id = await asyncio.to_thread(trader.start, "sell ACME:1 GLOBEX:2")
    sell_acme, sell_globex = await pending_requests(agents, workflow_id, 2)
    history_before = await agents.client.get_workflow_handle(workflow_id).fetch_history()

    def approve(*args: str) -> Outcome:
        return trader.smyth("approve", *args, "--by", "eve")

    refusals = {
        "2 requests are pending (apr-1-call_1_0, apr-1-call_1_1): name one": (workflow_id,),
        "unknown approval request 'nope'": (workflow_id, "--request", "nope"),
        f"request {sell_acme.id}: arguments_sha256 does not match": (
            workflow_id,
            "--request",
            sell_acme.id,
            "--sha256",
            "0" * 64,
        ),
        f"request {sell_acme.id}: edited arguments rejected: Invalid arguments for tool 'sell'": (
            workflow_id,
            "--request",
            sell_acme.id,
            "--arguments",
            '{"symbol": "ACME", "quantity": "many"}',
        ),
        "no agent run with workflow id 'cli-approvals-nobody'": ("cli-approvals-nobody",),
    }
    # Independent of each other: in parallel, to keep the test short.
    with ThreadPoolExecutor(len(refusals)) as pool:
        outcomes = list(pool.map(lambda args: approve(*args), refusals.values()))
    for message, outcome in zip(refusals, outcomes, strict=True):
        assert_one_error_line(outcome, message)
    # The update's validator refused them all: not a trace in history.
    history_after = await agents.client.get_workflow_handle(workflow_id).fetch_history()
    assert len(history_after.events) == len(history_before.events)

    first = await asyncio.to_thread(approve, workflow_id, "--request", sell_acme.id)
    assert first.out == f"approved {sell_acme.id} (sell) on {workflow_id} by eve\n", first.err
    again = await asyncio.to_thread(approve, workflow_id, "--request", sell_acme.id)
    assert_one_error_line(again, f"request {sell_acme.id} is already approved (by eve)")

    # Now only one is pending: no --request needed, the hash of what was shown is.
    reject = await asyncio.to_thread(
        trader.smyth, "reject", workflow_id, "--by", "eve", "--sha256", sell_globex.arguments_sha256
    )
    assert reject.out == f"rejected {sell_globex.id} (sell) on {workflow_id} by eve\n", reject.err
    result = await asyncio.to_thread(trader.smyth, "result", workflow_id)
    assert result.out.startswith("sold 1 ACME | Error: the call to 'sell' was not run"), result
    assert [e["symbol"] for e in trader.executed(workflow_id)] == ["ACME"]


async def test_edited_arguments(trader: TraderWorker, agents: AgentClient) -> None:
    workflow_id = await asyncio.to_thread(trader.start, "sell ACME:500")
    [request] = await pending_requests(agents, workflow_id, 1)
    edited = '{"symbol": "ACME", "quantity": 50}'
    approve = await asyncio.to_thread(
        trader.smyth,
        "approve",
        workflow_id,
        "--by",
        "carol",
        "--arguments",
        edited,
        "--sha256",
        request.arguments_sha256,  # what was shown, before the edit
    )
    assert approve.out == (
        f"approved {request.id} (sell) on {workflow_id} by carol with edited arguments "
        '{"symbol":"ACME","quantity":50}\n'
    ), approve.err
    result = await asyncio.to_thread(trader.smyth, "result", workflow_id)
    assert result.out == "sold 50 ACME\n", result.err


async def test_no_wait_sends_a_signal(trader: TraderWorker, agents: AgentClient) -> None:
    workflow_id = await asyncio.to_thread(trader.start, "sell ACME:10")
    [request] = await pending_requests(agents, workflow_id, 1)

    # A signal is not answered: a bad one is sent all the same, and ignored by the agent.
    bogus = await asyncio.to_thread(
        trader.smyth, "approve", workflow_id, "--request", "nope", "--by", "mallory", "--no-wait"
    )
    assert (bogus.code, bogus.out) == (
        0,
        f"sent approval for nope on {workflow_id} by mallory (signal; not validated)\n",
    ), bogus.err
    sent = await asyncio.to_thread(
        trader.smyth,
        "approve",
        workflow_id,
        "--by",
        "frank",
        "--no-wait",
        "--sha256",
        request.arguments_sha256,
    )
    # The request shown is the one the signal names.
    assert sent.out == (
        f"sent approval for {request.id} on {workflow_id} by frank (signal; not validated)\n"
    ), sent.err

    result = await asyncio.to_thread(trader.smyth, "result", workflow_id)
    assert result.out == "sold 10 ACME\n", result.err
    [audit] = (await agents.state(workflow_id)).approvals
    assert audit.decision is not None
    assert (audit.status, audit.decision.by) == ("approved", "frank")


async def test_without_a_request_id_the_request_is_shown_and_decided_only_by_its_hash(
    trader: TraderWorker, agents: AgentClient
) -> None:
    workflow_id = await asyncio.to_thread(trader.start, "sell ACME:10")
    [request] = await pending_requests(agents, workflow_id, 1)
    handle = agents.client.get_workflow_handle(workflow_id)
    before = len((await handle.fetch_history()).events)
    shown = f'pending request {request.id} on {workflow_id}: sell {{"symbol":"ACME","quantity":10}}'

    # Not at a terminal and no hash: the request is shown, nothing is decided.
    for verb in ("approve", "reject"):
        blind = await asyncio.to_thread(trader.smyth, verb, workflow_id, "--by", "eve")
        assert (blind.code, blind.out) == (2, ""), blind.err
        assert shown in blind.err and request.arguments_sha256 in blind.err
        assert f"to {verb} without --request, pass --sha256" in blind.err.splitlines()[-1]
    # A hash of other arguments than the pending request's: refused by the agent.
    stale = await asyncio.to_thread(
        trader.smyth, "approve", workflow_id, "--by", "eve", "--sha256", "0" * 64
    )
    assert stale.code == 1 and "arguments_sha256 does not match" in stale.err, stale
    assert len((await handle.fetch_history()).events) == before  # not a trace
    assert trader.executed(workflow_id) == []

    pinned = await asyncio.to_thread(
        trader.smyth, "approve", workflow_id, "--by", "eve", "--sha256", request.arguments_sha256
    )
    assert pinned.out == f"approved {request.id} (sell) on {workflow_id} by eve\n", pinned.err
    assert shown in pinned.err


class _Terminal(io.StringIO):
    """Standard input as a person at a terminal, answering what is given."""

    def isatty(self) -> bool:
        return True


async def test_at_a_terminal_the_shown_request_is_decided_only_when_confirmed(
    trader: TraderWorker,
    agents: AgentClient,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    workflow_id = await asyncio.to_thread(trader.start, "sell ACME:10")
    [request] = await pending_requests(agents, workflow_id, 1)
    command = ["approve", workflow_id, "--by", "eve", "--address", trader.address]

    monkeypatch.setattr(sys, "stdin", _Terminal("n\n"))
    assert await asyncio.to_thread(cli.main, command) == 1
    declined = capsys.readouterr()
    assert declined.out == ""
    assert f"pending request {request.id} on {workflow_id}: sell" in declined.err
    assert f"nothing decided: {request.id} is still pending" in declined.err
    assert (await pending_requests(agents, workflow_id, 1)) == [request]

    monkeypatch.setattr(sys, "stdin", _Terminal("y\n"))
    assert await asyncio.to_thread(cli.main, command) == 0
    assert capsys.readouterr().out == f"approved {request.id} (sell) on {workflow_id} by eve\n"
    [decided] = (await agents.state(workflow_id)).approvals
    assert decided.decision is not None
    # Pinned to what was shown: the request by id, its arguments by hash.
    assert (decided.decision.request_id, decided.decision.arguments_sha256) == (
        request.id,
        request.arguments_sha256,
    )


# -- in-process: usage errors, no worker ------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--arguments", "[1]"],
            'argument --arguments: must be a JSON object of tool arguments, like {"symbol": '
            '"ACME"}, got: [1]',
        ),
        (["--arguments", "{nope"], "argument --arguments: not valid JSON (Expecting property"),
        (["--sha256", "abc"], "argument --sha256: not a SHA-256 (64 hex digits): abc"),
        (["--by", " "], "argument --by: must not be empty"),
    ],
)
def test_usage_errors_exit_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Refused before connecting: the address is never used.
    assert cli.main(["approve", "some-run", *args, "--address", "127.0.0.1:1"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines()[-1].startswith(f"smyth approve: error: {message}")


def test_reject_has_no_edit_options(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["reject", "some-run", "--arguments", "{}"]) == 2
    assert "unrecognized arguments: --arguments" in capsys.readouterr().err


async def test_decision_without_a_worker_times_out(
    env: WorkflowEnvironment,
    address: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # No worker polls this queue: the update is never taken.
    agents = AgentClient(env.client, task_queue=new_task_queue("smyth-unserved"))
    handle = await agents.start("Trader", "sell ACME:1")
    monkeypatch.setattr(approvals_command, "DECISION_TIMEOUT", 0.5)
    try:
        started = time.monotonic()
        code = await asyncio.to_thread(
            cli.main,
            ["approve", handle.id, "--request", "apr-1-x", "--by", "x", "--address", address],
        )
        elapsed = time.monotonic() - started
    finally:
        await handle.terminate()
    assert code == 1
    assert elapsed < 5
    assert capsys.readouterr().err.splitlines() == [
        f"smyth: error: no worker took the decision for {handle.id!r} within 0.5s (is a worker "
        "for its agent running?); it may still be applied when one picks the run up: check "
        f"with `smyth state {handle.id}`"
    ]


# -- formatting -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "parts", "expected"),
    [
        (-3, 1, "0s"),
        (0, 1, "0s"),
        (59.9, 1, "59s"),
        (200, 1, "3m"),
        (2 * 3600 + 59 * 60, 1, "2h"),  # rounded down, never up
        (4 * 86_400 + 3600, 1, "4d"),
        (7 * 86_400 - 180, 2, "6d 23h"),
        (2 * 86_400 + 300, 2, "2d"),  # no "2d 5m": that would skip the hours
        (3600 + 61, 2, "1h 1m"),
    ],
)
def test_format_duration(seconds: float, parts: int, expected: str) -> None:
    assert format_duration(seconds, parts=parts) == expected


def test_format_deadline() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert format_deadline(now + timedelta(hours=23, minutes=5), now) == "in 23h 5m"
    assert format_deadline(now - timedelta(minutes=5), now) == "overdue 5m"


def test_format_approvals_cuts_long_arguments() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)

    def pending(workflow_id: str, note: str, age: timedelta) -> PendingApproval:
        request = ApprovalRequest(
            id="apr-2-call_2_0",
            tool="wire",
            call_id="call_2_0",
            step=2,
            arguments={"amount": 5, "note": note},
            arguments_sha256="0" * 64,
            requested_at=now - age,
            deadline=now - age + timedelta(days=1),
        )
        return PendingApproval(agent="Trader", workflow_id=workflow_id, tenant="t", request=request)

    table = format_approvals(
        [
            pending("a-long-workflow-id", "x" * 100, timedelta(days=2)),
            pending("b", "ok", timedelta()),
        ],
        now,
    )
    assert table.splitlines() == [
        "AGENT   WORKFLOW ID         REQUEST         TOOL  ARGUMENTS" + " " * 53 + "AGE  DEADLINE",
        'Trader  a-long-workflow-id  apr-2-call_2_0  wire  {"amount":5,"note":"'
        + "x" * 39
        + "…  2d   overdue 1d",
        'Trader  b                   apr-2-call_2_0  wire  {"amount":5,"note":"ok"}'
        + " " * 38
        + "0s   in 1d",
    ]


def test_approvals_under_a_quorum_show_who_approved_so_far() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    request = ApprovalRequest(
        id="apr-1-call_1_0",
        tool="pay",
        call_id="call_1_0",
        step=1,
        arguments={"amount": 20_000},
        arguments_sha256="0" * 64,
        requested_at=now,
        deadline=now + timedelta(days=1),
        policy=ApprovalRule(quorum=2),
        votes=[ApprovalDecision(approved=True, by="alice", role="approver")],
    )
    plain = request.model_copy(update={"id": "apr-2-call_2_0", "policy": None, "votes": []})
    pending = [
        PendingApproval(agent="Treasurer", workflow_id="T-1", tenant="t", request=r)
        for r in (request, plain)
    ]
    header, first, second = format_approvals(pending, now).splitlines()
    assert header.split()[-1] == "APPROVED"
    assert first.endswith("1 of 2 (alice)") and second.endswith("-")
    assert format_decided("T-1", request) == (
        "counted approval of apr-1-call_1_0 (pay) on T-1 by alice: 1 of 2 approvals, still pending"
    )


def test_format_sent_rejection() -> None:
    decision = ApprovalDecision(approved=False, by="bob", request_id="apr-1-call_1_0")
    assert format_sent("T-1", decision) == (
        "sent rejection for apr-1-call_1_0 on T-1 by bob (signal; not validated)"
    )
