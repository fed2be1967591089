"""``smyth memory search/list/forget/undo-run`` against a real dev server.

A worker process serves ``tests.helpers.memory_agents:Researcher`` and ``Reviewer`` (memory
namespace ``research``) with the scripted model ``tests.helpers.cli_models:researcher``: it
stores the prompt's ``Remember: ...`` fact with the built-in ``remember`` tool, then
answers; every finished run also leaves an episode. Its memory is Qdrant Edge in a
temporary directory. Runs are started by ``smyth run`` processes and memory is read
and changed by ``smyth memory`` processes, so nothing is shared with the test but the
server. Tests share that worker's store; each uses a tenant of its own.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio import workflow
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker as TemporalWorker

from smyth_temporal.agent.memory_admin import MEMORY_ADMIN_WORKFLOW
from smyth_temporal.cli import main as cli
from smyth_temporal.cli._output import format_hits, format_memories
from smyth_temporal.clients import PICKUP_TIMEOUT
from smyth_temporal.clients import memory as memory_client
from smyth_temporal.testing import new_task_queue
from smyth_temporal.types.memory import MemoryHit, MemoryRecord, MemoryScope, Provenance, memory_id
from tests.helpers.cli_support import (
    Outcome,
    assert_one_error_line,
    run_smyth,
    spawn_worker,
    stop_process,
)

pytestmark = pytest.mark.usefixtures("reset_structlog")

VISIBILITY_TIMEOUT = 10.0  # list queries are eventually consistent
FACT = "ACME reports earnings on May 3"
MEMORY = ("-m", "research")


@dataclass
class Worker:
    address: str
    task_queue: str
    log: Path

    def smyth(self, *args: str) -> Outcome:
        """``smyth ARGS --address ... --task-queue ...`` as a process."""
        return run_smyth(*args, "--address", self.address, "--task-queue", self.task_queue)

    def learn(self, fact: str, tenant: str) -> dict[str, Any]:
        """``smyth run Researcher --prompt 'Remember: FACT' --wait --json``: the summary."""
        workflow_id = f"cli-memory-{uuid.uuid4().hex[:8]}"
        outcome = self.smyth(
            *("run", "Researcher", "--prompt", f"Remember: {fact}", "--wait", "--json"),
            *("--tenant", tenant, "--id", workflow_id),
        )
        summary: dict[str, Any] = outcome.json()
        assert summary["workflow_id"] == workflow_id
        assert summary["result"]["output"] == f"Noted: {fact}", summary
        return summary

    def records(self, tenant: str, *args: str) -> list[MemoryRecord]:
        """``smyth memory list --json``, parsed."""
        listed = self.smyth("memory", "list", *MEMORY, "--tenant", tenant, "--json", *args)
        return [MemoryRecord.model_validate(r) for r in listed.json()]


def start_worker(
    address: str, directory: Path, agents: list[str], model: str, env: dict[str, str]
) -> tuple[subprocess.Popen[bytes], Worker]:
    """``smyth worker AGENTS --model MODEL`` on a new task queue; returns once it polls."""
    task_queue = new_task_queue("smyth-cli-memory")
    log = directory / "worker.log"
    process = spawn_worker(
        agents, model=model, address=address, task_queue=task_queue, log=log, env=env
    )
    return process, Worker(address, task_queue, log)


@pytest.fixture(scope="module")
def researcher(address: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Worker]:
    """A worker of the memory agents, memory in Qdrant Edge under a temporary directory."""
    directory = tmp_path_factory.mktemp("memory-worker")
    process, worker = start_worker(
        address,
        directory,
        [
            "tests.helpers.memory_agents:Researcher",
            "tests.helpers.memory_agents:Reviewer",
            "tests.helpers.memory_agents:Archivist",
        ],
        "tests.helpers.cli_models:researcher",
        {"SMYTH_MEMORY_PATH": str(directory / "memory")},
    )
    try:
        yield worker
    finally:
        stop_process(process)


@pytest.fixture
def tenant() -> str:
    return f"t-{uuid.uuid4().hex[:8]}"


def table(text: str) -> tuple[list[str], list[str]]:
    """A table's header cells and its rows (as lines)."""
    header, *rows = text.splitlines()
    return header.split(), rows


# -- through the worker process ------------------------------------------------------


def test_a_fact_a_run_remembered_is_found_and_listed_with_the_episode(
    researcher: Worker, tenant: str
) -> None:
    run = researcher.learn(FACT, tenant)
    workflow_id = run["workflow_id"]

    found = researcher.smyth(
        "memory", "search", "when does ACME report earnings", *MEMORY, "--tenant", tenant, "--json"
    )
    hits = [MemoryHit.model_validate(h) for h in found.json()]
    best = hits[0].record  # the fact, then the episode that mentions it
    assert (best.text, best.kind) == (FACT, "fact")
    assert best.scope == MemoryScope(tenant=tenant, namespace="research")
    assert (best.provenance.agent, best.provenance.workflow_id) == ("Researcher", workflow_id)
    assert best.provenance.run_id == run["run_id"]
    assert hits[0].score >= hits[-1].score
    assert {h.record.kind for h in hits} == {"fact", "episode"}

    # -k and --kind narrow the search.
    [only] = researcher.smyth(
        "memory", "search", "ACME", *MEMORY, "--tenant", tenant, "-k", "1", "--json"
    ).json()
    assert only["record"]["kind"] == "fact"
    episodes = researcher.smyth(
        "memory", "search", "ACME", *MEMORY, "--tenant", tenant, "--kind", "episode", "--json"
    ).json()
    assert [e["record"]["kind"] for e in episodes] == ["episode"]

    # The table: score, short id, kind, created, agent, workflow, text.
    shown = researcher.smyth("memory", "search", "ACME earnings", *MEMORY, "--tenant", tenant)
    assert shown.code == 0, shown.err
    header, rows = table(shown.out)
    assert header == ["SCORE", "ID", "KIND", "CREATED", "AGENT", "WORKFLOW", "TEXT"]
    assert len(rows) == 2
    fact_row = next(r for r in rows if r.split()[2] == "fact")
    score, short, kind, created, agent, workflow, *text = fact_row.split()
    assert short == best.id[:8]
    assert 0 < float(score) <= 1 and len(score) == 5, score  # cosine, 3 decimals
    assert (kind, agent, workflow, " ".join(text)) == ("fact", "Researcher", workflow_id, FACT)
    assert created == best.created_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%MZ")
    assert shown.out.splitlines()[0].index("TEXT") == fact_row.index(FACT)  # aligned

    # list: the fact and the run's episode, newest first.
    records = researcher.records(tenant)
    assert [r.kind for r in records] == ["episode", "fact"]
    episode = records[0]
    assert episode.text.startswith(f"Task: Remember: {FACT}\nOutcome (completed, 2 steps)")
    assert {r.provenance.workflow_id for r in records} == {workflow_id}
    assert [r.kind for r in researcher.records(tenant, "--kind", "fact")] == ["fact"]
    assert len(researcher.records(tenant, "--workflow", workflow_id, "--limit", "1")) == 1
    assert researcher.records(tenant, "--workflow", "some-other-run") == []

    listed = researcher.smyth("memory", "list", *MEMORY, "--tenant", tenant)
    assert listed.code == 0, listed.err
    header, rows = table(listed.out)
    assert header == ["ID", "KIND", "CREATED", "AGENT", "WORKFLOW", "TEXT"]
    assert [row.split()[:2] for row in rows] == [[episode.id[:8], "episode"], [best.id[:8], "fact"]]
    # Texts are on one line and cut.
    assert rows[0].endswith("…") and f"Task: Remember: {FACT} Outcome" in rows[0]
    assert listed.err == ""


def test_forget_removes_a_memory_given_its_short_id(researcher: Worker, tenant: str) -> None:
    researcher.learn(FACT, tenant)
    fact = next(r for r in researcher.records(tenant) if r.kind == "fact")

    forgot = researcher.smyth("memory", "forget", fact.id[:8], *MEMORY, "--tenant", tenant)
    assert (forgot.code, forgot.out) == (
        0,
        f"forgot 1 memory (tenant {tenant}, memory namespace research)\n",
    ), forgot.err
    assert [r.kind for r in researcher.records(tenant)] == ["episode"]
    hits = researcher.smyth(
        "memory", "search", "ACME earnings", *MEMORY, "--tenant", tenant, "--json"
    ).json()
    assert FACT not in [h["record"]["text"] for h in hits]

    # A full id that is gone already: nothing to do, and said so.
    again = researcher.smyth("memory", "forget", fact.id, *MEMORY, "--tenant", tenant, "--json")
    assert again.json() == {"count": 0, "ids": [fact.id]}
    assert again.err == "note: 1 of the 1 ids named no memory there\n"
    # A short id that names no memory is an error, not a silent no-op.
    unknown = researcher.smyth("memory", "forget", fact.id[:8], *MEMORY, "--tenant", tenant)
    assert_one_error_line(
        unknown,
        f"no memory id starts with '{fact.id[:8]}' (tenant {tenant}, memory namespace research)",
    )


def test_forget_refuses_an_ambiguous_short_id(researcher: Worker, tenant: str) -> None:
    # Ids are derived from scope, kind and text: of 17 facts, two share a first digit.
    scope = MemoryScope(tenant=tenant, namespace="research")
    by_digit: dict[str, list[str]] = {}
    for n in range(17):
        fact = f"ACME fact number {n}"
        by_digit.setdefault(memory_id(scope, "fact", fact)[0], []).append(fact)
    digit, (one, two, *_) = next((d, f) for d, f in by_digit.items() if len(f) > 1)
    researcher.learn(one, tenant)
    researcher.learn(two, tenant)

    outcome = researcher.smyth("memory", "forget", digit, *MEMORY, "--tenant", tenant)
    assert_one_error_line(outcome, f"memory ids start with '{digit}' (")
    assert outcome.error_lines[0].endswith("give more of the id"), outcome.err
    assert len(researcher.records(tenant)) == 4  # nothing was forgotten


def test_undo_run_removes_what_one_run_wrote(researcher: Worker, tenant: str) -> None:
    first = researcher.learn(FACT, tenant)
    second = researcher.learn("GLOBEX makes gadgets", tenant)
    assert len(researcher.records(tenant)) == 4

    # Another run id of the same workflow: nothing of the second run goes.
    bogus = str(uuid.uuid4())
    other_run = researcher.smyth(
        "memory", "undo-run", second["workflow_id"], "--tenant", tenant, "--run", bogus
    )
    assert other_run.out == (
        f"removed 0 memories written by {second['workflow_id']} (run {bogus}) "
        f"(tenant {tenant}, every memory namespace)\n"
    ), other_run.err
    assert len(researcher.records(tenant)) == 4

    undone = researcher.smyth("memory", "undo-run", first["workflow_id"], "--tenant", tenant)
    assert (undone.code, undone.out) == (
        0,
        f"removed 2 memories written by {first['workflow_id']} "
        f"(tenant {tenant}, every memory namespace)\n",
    ), undone.err
    left = researcher.records(tenant)
    assert sorted(r.kind for r in left) == ["episode", "fact"]
    assert {r.provenance.workflow_id for r in left} == {second["workflow_id"]}

    # The run id from `smyth run --json`, and only in the one memory namespace.
    by_run = researcher.smyth(
        *("memory", "undo-run", second["workflow_id"], "--tenant", tenant),
        *("--run", second["run_id"], *MEMORY, "--json"),
    )
    assert by_run.json() == {"count": 2}
    assert researcher.records(tenant) == []


def test_another_tenant_sees_and_changes_nothing(researcher: Worker, tenant: str) -> None:
    run = researcher.learn(FACT, tenant)
    fact = next(r for r in researcher.records(tenant) if r.kind == "fact")
    other = f"{tenant}-other"

    search = researcher.smyth("memory", "search", FACT, *MEMORY, "--tenant", other)
    assert (search.code, search.out) == (
        0,
        f"no memories match (tenant {other}, memory namespace research)\n",
    ), search.err
    assert (
        researcher.smyth("memory", "search", FACT, *MEMORY, "--tenant", other, "--json").json()
        == []
    )
    listed = researcher.smyth("memory", "list", *MEMORY, "--tenant", other)
    assert listed.out == f"no memories (tenant {other}, memory namespace research)\n"
    assert researcher.records(other) == []
    # Its id and its run, named with the wrong tenant, are out of reach.
    forgot = researcher.smyth("memory", "forget", fact.id, *MEMORY, "--tenant", other, "--json")
    assert forgot.json()["count"] == 0
    short = researcher.smyth("memory", "forget", fact.id[:8], *MEMORY, "--tenant", other)
    assert_one_error_line(short, f"no memory id starts with '{fact.id[:8]}' (tenant {other},")
    undone = researcher.smyth("memory", "undo-run", run["workflow_id"], "--tenant", other, "--json")
    assert undone.json() == {"count": 0}
    # The default tenant is another tenant too.
    assert FACT not in researcher.smyth("memory", "list", *MEMORY).out
    # Another memory namespace of the same tenant is another body of knowledge.
    assert researcher.records(tenant, "-m", "archive") == []

    assert len(researcher.records(tenant)) == 2  # all still there


def test_search_without_a_memory_namespace_searches_them_all(
    researcher: Worker, tenant: str
) -> None:
    researcher.learn(FACT, tenant)
    archived = researcher.smyth(
        *("run", "Archivist", "--prompt", "ACME earnings are archived", "--wait", "--json"),
        *("--tenant", tenant),
    )
    assert archived.code == 0, archived.err

    hits = researcher.smyth("memory", "search", "ACME earnings", "--tenant", tenant, "--json")
    found = {(h["record"]["scope"]["namespace"], h["record"]["kind"]) for h in hits.json()}
    assert ("research", "fact") in found
    assert ("archive", "note") in found
    assert {h["record"]["scope"]["tenant"] for h in hits.json()} == {tenant}

    # The table says which namespace each memory is in.
    shown = researcher.smyth("memory", "search", "ACME earnings", "--tenant", tenant)
    assert shown.code == 0, shown.err
    header, rows = table(shown.out)
    assert header[:3] == ["SCORE", "NAMESPACE", "ID"]
    assert {row.split()[1] for row in rows} >= {"research", "archive"}
    # Another tenant's namespaces are out of reach.
    other = researcher.smyth("memory", "search", "ACME", "--tenant", f"{tenant}-other")
    assert other.out == f"no memories match (tenant {tenant}-other, every memory namespace)\n"


# -- errors ----------------------------------------------------------------------------


def test_no_worker_on_the_task_queue(address: str, tmp_path: Path) -> None:
    nobody = Worker(address, new_task_queue("smyth-cli-memory-nobody"), tmp_path / "none.log")
    for command in (
        ("memory", "search", "x", *MEMORY),
        ("memory", "list", *MEMORY),
        ("memory", "forget", str(uuid.uuid4()), *MEMORY),
        ("memory", "undo-run", "some-run"),
    ):
        outcome = nobody.smyth(*command)
        assert_one_error_line(
            outcome,
            f"no worker polls task queue '{nobody.task_queue}' (namespace 'default' at "
            f"{address}); memory lives on the workers: start a smyth worker on it",
        )


@workflow.defn(name="tests.NotSmyth", sandboxed=False)
class NotSmyth:
    """A workflow of some other program that shares the agents' task queue."""

    @workflow.run
    async def run(self) -> None:
        return None


async def test_a_worker_without_memory_is_named_and_nothing_is_left_running(
    env: WorkflowEnvironment, address: str, tmp_path: Path
) -> None:
    # Every smyth worker serves memory; the worker that lacks it is another program's
    # (or one of an older smyth release), polling the same queue without the plugin.
    plain = await Client.connect(address)
    queue = new_task_queue("smyth-cli-memory-plain")
    nobody = Worker(address, queue, tmp_path / "plain.log")
    async with TemporalWorker(plain, task_queue=queue, workflows=[NotSmyth]):
        started = time.monotonic()
        outcome = await asyncio.to_thread(nobody.smyth, "memory", "list", *MEMORY)
        elapsed = time.monotonic() - started
    assert_one_error_line(
        outcome,
        f"no worker on task queue '{queue}' has memory; start a smyth worker on it",
    )
    # The only worker failing the task is final: no waiting for PICKUP_TIMEOUT.
    assert elapsed < PICKUP_TIMEOUT, elapsed
    # The admin workflow was terminated, not left for Temporal to retry forever.
    await assert_admin_runs_terminated(env, queue, count=1)


async def test_a_worker_that_cannot_reach_its_store_times_out_with_the_error(
    env: WorkflowEnvironment,
    address: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with socket.socket() as sock:  # a port where nothing listens
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process, broken = start_worker(
        address,
        tmp_path,
        ["tests.helpers.memory_agents:Researcher"],
        "tests.helpers.cli_models:researcher",
        {"QDRANT_URL": f"http://127.0.0.1:{port}"},
    )
    monkeypatch.setattr(memory_client, "MEMORY_TIMEOUT", 3.0)
    try:
        code = await asyncio.to_thread(
            cli.main,
            [
                *("memory", "search", "x", *MEMORY),
                *("--address", address, "--task-queue", broken.task_queue),
            ],
        )
    finally:
        stop_process(process)
    captured = capsys.readouterr()
    outcome = Outcome(code, captured.out, captured.err)
    assert_one_error_line(outcome, "the memory operation did not finish within 3s (last error: ")
    assert outcome.error_lines[0].endswith("; see the worker's log")
    await assert_admin_runs_terminated(env, broken.task_queue, count=1)


async def assert_admin_runs_terminated(
    env: WorkflowEnvironment, task_queue: str, count: int
) -> None:
    query = f"WorkflowType = '{MEMORY_ADMIN_WORKFLOW}' AND TaskQueue = '{task_queue}'"
    deadline = time.monotonic() + VISIBILITY_TIMEOUT
    while True:
        statuses = [w.status async for w in env.client.list_workflows(query)]
        if statuses == [WorkflowExecutionStatus.TERMINATED] * count:
            return
        assert time.monotonic() < deadline, statuses
        await asyncio.sleep(0.2)


def test_unreachable_server(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{sock.getsockname()[1]}"
    outcome = Worker(dead, "q", tmp_path / "x.log").smyth("memory", "list", *MEMORY)
    assert_one_error_line(outcome, f"no Temporal server answers at {dead}")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["search", *MEMORY], "the following arguments are required: QUERY"),
        (["list"], "the following arguments are required: -m/--memory-namespace"),
        (["forget", "abc"], "the following arguments are required: -m/--memory-namespace"),
        (["search", "x", *MEMORY, "-k", "0"], "argument -k: must be from 1 to 100: 0"),
        (["search", "x", *MEMORY, "-k", "101"], "argument -k: must be from 1 to 100: 101"),
        (["list", *MEMORY, "--limit", "x"], "argument --limit: not a number: x"),
        (["list", *MEMORY, "--tenant", " "], "argument --tenant: must not be empty"),
        (["forget", *MEMORY], "the following arguments are required: ID"),
        (["forget", "", *MEMORY], "argument ID: must not be empty"),
        (["undo-run"], "the following arguments are required: WORKFLOW_ID"),
        ([], "the following arguments are required: COMMAND"),
    ],
)
def test_bad_usage_exits_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["memory", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines()[-1].endswith(f"error: {message}"), captured.err


def test_help_tells_the_two_namespaces_apart(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["memory", "list", "--help"]) == 0
    # Rich draws the help in boxes, wrapped: compare the words only.
    words = capsys.readouterr().out.replace("│", " ").split()
    text = " ".join(words)
    assert "--memory-namespace -m NAME the memory namespace: the agents'" in text
    assert "(not --namespace, which is the Temporal namespace)" in text
    assert "--namespace NAMESPACE the Temporal namespace" in text
    assert "smyth memory forget 1a2b3c4d -m research" in text  # the examples


# -- tables ----------------------------------------------------------------------------


def record(text: str, **changes: Any) -> MemoryRecord:
    base = MemoryRecord(
        id="0123456789abcdef",
        text=text,
        scope=MemoryScope(tenant="t", namespace="n"),
        provenance=Provenance(agent="Researcher", workflow_id="wf-1", run_id="r", step=1),
        created_at=datetime(2025, 5, 3, 16, 2, 59, tzinfo=UTC),
    )
    return base.model_copy(update=changes)


def test_memory_table_marks_superseded_and_expired_and_cuts_text() -> None:
    now = datetime(2025, 6, 1, tzinfo=UTC)
    records = [
        record("old\nfact", superseded_by="fedcba9876543210"),
        record("x" * 200, id="abc", kind="episode", expires_at=now - timedelta(days=1)),
        record("fresh", kind="note", expires_at=now + timedelta(days=1), provenance=Provenance()),
    ]
    lines = format_memories(records, now).splitlines()
    assert lines[0].split() == ["ID", "KIND", "CREATED", "AGENT", "WORKFLOW", "TEXT"]
    assert lines[1].split() == [
        *("01234567", "fact", "2025-05-03T16:02Z", "Researcher", "wf-1"),
        *("[superseded", "by", "fedcba98]", "old", "fact"),
    ]
    assert lines[2].split()[:2] == ["abc", "episode"]
    # Marked, on one line, and cut to 80 characters.
    assert lines[2].endswith("  [expired] " + "x" * 69 + "…")
    assert lines[3].split() == ["01234567", "note", "2025-05-03T16:02Z", "-", "-", "fresh"]
    # Aligned: every column starts where its header does.
    for name in ("KIND", "CREATED", "AGENT", "WORKFLOW", "TEXT"):
        at = lines[0].index(name)
        assert all(line[at - 2 : at] == "  " for line in lines[1:]), name


def test_hits_table_shows_scores_first() -> None:
    hits = [MemoryHit(record=record("a"), score=0.91234), MemoryHit(record=record("b"), score=0.5)]
    lines = format_hits(hits, datetime(2025, 6, 1, tzinfo=UTC)).splitlines()
    assert lines[0].split()[:2] == ["SCORE", "ID"]
    assert [line.split()[0] for line in lines[1:]] == ["0.912", "0.500"]
