"""The ``smyth`` CLI against a real dev server: in-process via ``main``, and as processes."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from temporalio.client import WorkflowExecutionStatus
from temporalio.testing import WorkflowEnvironment

from smyth_temporal import AgentResult, AgentState, ServerUnavailableError
from smyth_temporal.cli.main import main
from smyth_temporal.devserver import ensure_dev_server, is_reachable
from smyth_temporal.testing import new_task_queue
from tests.helpers.cli_support import (
    PROCESS_TIMEOUT,
    ROOT,
    Outcome,
    free_port,
    spawn_worker,
    stop_process,
)

pytestmark = pytest.mark.usefixtures("reset_structlog")


Smyth = Callable[..., Awaitable[Outcome]]


@pytest.fixture
async def smyth(capsys: pytest.CaptureFixture[str]) -> Smyth:
    """Run ``smyth ARGS...`` in-process; returns exit code, stdout and stderr."""

    async def call(*args: str) -> Outcome:
        capsys.readouterr()
        # In a thread: main() runs its own event loop with asyncio.run.
        code = await asyncio.to_thread(main, list(args))
        captured = capsys.readouterr()
        return Outcome(code, captured.out, captured.err)

    return call


def spawn(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    """``python -m smyth_temporal.cli ARGS`` (or another module), stderr to ``log``."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("OPENAI_API_KEY", None)
    with log.open("wb") as stderr:  # the child keeps its own descriptor
        return subprocess.Popen(
            [sys.executable, "-m", *args],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )


def wait_for_text(path: Path, text: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + PROCESS_TIMEOUT
    while text not in path.read_text():
        if process.poll() is not None:
            pytest.fail(f"process exited with {process.returncode}: {path.read_text()}")
        if time.monotonic() > deadline:
            pytest.fail(f"no {text!r} within {PROCESS_TIMEOUT}s: {path.read_text()}")
        time.sleep(0.05)


def stop(process: subprocess.Popen[bytes], signum: signal.Signals) -> int:
    process.send_signal(signum)
    return finish(process)


def finish(process: subprocess.Popen[bytes]) -> int:
    try:
        process.communicate(timeout=PROCESS_TIMEOUT)  # waits, and closes the pipe
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise
    return process.returncode


@dataclass
class WorkerProcess:
    task_queue: str
    process: subprocess.Popen[bytes]
    log: Path


@pytest.fixture(scope="module")
def analyst_worker(
    address: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkerProcess]:
    """``smyth worker tests.helpers.agents:Analyst`` with a scripted model, as a real process."""
    task_queue = new_task_queue("smyth-cli")
    log = tmp_path_factory.mktemp("worker") / "worker.log"
    process = spawn_worker(
        ["tests.helpers.agents:Analyst"],
        model="tests.helpers.cli_models:scripted",
        address=address,
        task_queue=task_queue,
        log=log,
    )
    try:
        yield WorkerProcess(task_queue, process, log)
    finally:
        stop_process(process)


# -- errors ----------------------------------------------------------------------------


async def test_unreachable_address_is_one_line(smyth: Smyth) -> None:
    dead = f"127.0.0.1:{free_port()}"
    for command in (
        ["state", "some-id"],
        ["result", "some-id"],
        ["run", "Analyst", "--prompt", "x"],
    ):
        outcome = await smyth(*command, "--address", dead)
        assert outcome.code == 1, command
        assert outcome.error_lines == [outcome.error_lines[0]], outcome.err
        assert outcome.error_lines[0].startswith(
            f"smyth: error: no Temporal server answers at {dead}"
        )
        assert outcome.out == ""


def test_unreachable_address_as_a_process(tmp_path: Path) -> None:
    """No traceback, exit code 1, and no abort while the interpreter exits."""
    log = tmp_path / "stderr.log"
    process = spawn(
        ["smyth_temporal.cli", "state", "x", "--address", f"127.0.0.1:{free_port()}"], log
    )
    assert finish(process) == 1
    lines = log.read_text().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("smyth: error: no Temporal server answers")


async def test_invalid_address_is_a_configuration_error(smyth: Smyth) -> None:
    outcome = await smyth("state", "x", "--address", "no-port")
    assert outcome.code == 1
    assert outcome.error_lines == [
        "smyth: error: address (TEMPORAL_ADDRESS): expected host:port, got 'no-port'"
    ]


async def test_unknown_workflow_id(smyth: Smyth, address: str) -> None:
    for command in ("state", "result"):
        outcome = await smyth(command, "no-such-run", "--address", address)
        assert outcome.code == 1
        assert outcome.error_lines == ["smyth: error: no agent run with workflow id 'no-such-run'"]


async def test_unknown_agent_module(smyth: Smyth, address: str) -> None:
    worker = await smyth("worker", "no_such_pkg.agents:Agent", "--address", address)
    assert worker.code == 1
    assert worker.error_lines == [
        "smyth: error: cannot import the agent no_such_pkg.agents:Agent: no module named "
        f"'no_such_pkg' (looked in {Path.cwd()} and the installed packages)"
    ]
    run = await smyth("run", "tests.helpers.agents:Nobody", "--prompt", "x", "--address", address)
    assert run.code == 1
    assert (
        "has no attribute 'Nobody' (agents there: Analyst, Counter, Desk, Rater, Summarizer)"
        in run.err
    )


async def test_worker_with_openai_and_no_key(
    smyth: Smyth, address: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    outcome = await smyth(
        "worker", "tests.helpers.agents:Analyst", "--model", "openai", "--address", address
    )
    assert outcome.code == 1
    assert len(outcome.error_lines) == 1
    assert "needs an API key: set OPENAI_API_KEY" in outcome.err


async def test_model_provider_from_the_environment(
    smyth: Smyth, address: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SMYTH_MODEL_PROVIDER", "tests.helpers.cli_models:not_a_provider")
    outcome = await smyth("worker", "tests.helpers.agents:Analyst", "--address", address)
    assert outcome.code == 1
    assert "model provider tests.helpers.cli_models:not_a_provider is a object" in outcome.err


async def test_run_with_no_worker(smyth: Smyth, address: str) -> None:
    task_queue = new_task_queue()
    outcome = await smyth(
        "run", "Analyst", "--prompt", "x", "--address", address, "--task-queue", task_queue
    )
    assert outcome.code == 1
    assert outcome.out == ""  # nothing was started
    assert outcome.error_lines == [
        f"smyth: error: no worker polls task queue {task_queue!r} (namespace 'default' at "
        f"{address}); start one with `smyth worker module:Class`"
    ]


async def test_run_of_an_agent_no_worker_serves(
    smyth: Smyth, address: str, env: WorkflowEnvironment, analyst_worker: WorkerProcess
) -> None:
    started = time.monotonic()
    outcome = await smyth(
        "run",
        "Summarizer",
        "--prompt",
        "x",
        "--id",
        "cli-unserved",
        "--address",
        address,
        "--task-queue",
        analyst_worker.task_queue,
    )
    assert outcome.code == 1
    assert outcome.out.strip() == "cli-unserved"
    assert outcome.error_lines == [
        f"smyth: error: no worker serves agent 'Summarizer' on task queue "
        f"{analyst_worker.task_queue!r}; start one with `smyth worker module:Summarizer` "
        "(run cli-unserved was terminated)"
    ]
    assert time.monotonic() - started < 5
    description = await env.client.get_workflow_handle("cli-unserved").describe()
    assert description.status == WorkflowExecutionStatus.TERMINATED
    result = await smyth("result", "cli-unserved", "--address", address)
    assert result.code == 1
    assert len(result.error_lines) == 1
    assert result.error_lines[0].startswith("smyth: error: agent cli-unserved failed:")


async def test_bad_usage_exits_2(smyth: Smyth) -> None:
    outcome = await smyth("run", "Analyst")
    assert outcome.code == 2
    assert "the following arguments are required: --prompt" in outcome.err


async def test_demo_reports_a_missing_module(smyth: Smyth, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "smyth_temporal.demo", None)  # import fails
    outcome = await smyth("demo")
    assert outcome.code == 1
    assert len(outcome.error_lines) == 1
    assert outcome.error_lines[0].startswith(
        "smyth: error: the demo is not available in this installation"
    )


# -- runs through a worker process -----------------------------------------------------


async def test_run_wait_state_and_result(
    smyth: Smyth, address: str, analyst_worker: WorkerProcess
) -> None:
    common = ("--address", address, "--task-queue", analyst_worker.task_queue)
    run = await smyth(
        "run", "Analyst", "--prompt", "How is ACME?", "--id", "cli-run-1", "--wait", *common
    )
    assert run.code == 0, run.err
    assert run.out.splitlines() == ["cli-run-1", "ACME trades at 101.5."]
    # Progress: one line per change, then the summary.
    assert "step 2/8  acting  (tool: slow_lookup)" in run.err
    assert run.error_lines[-1] == (
        "completed after 3 steps; 3 requests, 60 tokens (30 in, 30 out), 2 tool calls"
    )
    assert len(run.error_lines) == len(set(run.error_lines))

    state = await smyth("state", "cli-run-1", "--json", "--address", address)
    assert state.code == 0
    parsed = AgentState.model_validate_json(state.out)
    assert (parsed.status, parsed.step, parsed.agent) == ("completed", 3, "Analyst")
    assert parsed.output == "ACME trades at 101.5."

    human = await smyth("state", "cli-run-1", "--address", address)
    assert human.code == 0
    assert "status   completed, step 3/8" in human.out
    assert "usage    3 requests, 60 tokens (30 in, 30 out), 2 tool calls" in human.out
    assert '  assistant  -> get_quote({"symbol": "ACME"})' in human.out
    assert "  tool       get_quote: 101.5" in human.out

    result = await smyth("result", "cli-run-1", "--address", address)
    assert (result.code, result.out) == (0, "ACME trades at 101.5.\n")
    as_json = await smyth("result", "cli-run-1", "--json", "--address", address)
    assert AgentResult.model_validate_json(as_json.out).steps == 3


async def test_run_json_then_result_shows_progress(
    smyth: Smyth, address: str, analyst_worker: WorkerProcess
) -> None:
    run = await smyth(
        "run",
        "tests.helpers.agents:Analyst",  # module:Class works too
        "--prompt",
        "How is ACME?",
        "--tenant",
        "acme",
        "--session",
        "s-1",
        "--json",
        "--address",
        address,
        "--task-queue",
        analyst_worker.task_queue,
    )
    assert run.code == 0, run.err
    started = json.loads(run.out)
    assert started["agent"] == "Analyst"
    assert started["task_queue"] == analyst_worker.task_queue

    result = await smyth("result", started["workflow_id"], "--address", address)
    assert result.code == 0
    assert result.out == "ACME trades at 101.5.\n"
    assert "(tool: slow_lookup)" in result.err  # it waited, and said what was going on

    state = await smyth("state", started["workflow_id"], "--json", "--address", address)
    parsed = AgentState.model_validate_json(state.out)
    assert (parsed.tenant, parsed.session_id) == ("acme", "s-1")


def test_worker_entry_point_stops_gracefully_on_sigterm(address: str, tmp_path: Path) -> None:
    log = tmp_path / "worker.log"
    process = spawn(
        [
            "workers.agent_worker",
            "tests.helpers.agents:Analyst",
            "--model",
            "tests.helpers.cli_models:scripted",
            "--address",
            address,
            "--task-queue",
            new_task_queue(),
        ],
        log,
    )
    wait_for_text(log, "worker.ready", process)
    assert stop(process, signal.SIGTERM) == 0
    text = log.read_text()
    assert "signal=SIGTERM" in text
    assert "worker.stopped" in text
    assert "Traceback" not in text


# -- dev -------------------------------------------------------------------------------


async def test_dev_when_a_server_already_answers(smyth: Smyth, address: str) -> None:
    port = int(address.rsplit(":", 1)[1])
    outcome = await smyth("dev", "--address", address)
    assert outcome.code == 0
    assert outcome.out == (
        f"a Temporal server already answers at {address} (Web UI: http://127.0.0.1:{port + 1000})\n"
    )


async def test_dev_starts_and_stops_a_server(tmp_path: Path) -> None:
    port, ui_port = free_port(), free_port()
    db_file = tmp_path / "state" / "temporal.db"
    log = tmp_path / "dev.log"
    process = spawn(
        [
            "smyth_temporal.cli",
            "dev",
            "--port",
            str(port),
            "--ui-port",
            str(ui_port),
            "--db-file",
            str(db_file),
        ],
        log,
    )
    try:
        assert process.stdout is not None
        ready = await asyncio.to_thread(process.stdout.readline)
        assert (
            ready.decode()
            == f"Temporal dev server ready at localhost:{port} (namespaces: default)\n"
        )
        ui = await asyncio.to_thread(process.stdout.readline)
        assert ui.decode() == f"Web UI: http://localhost:{ui_port}\n"
        assert await is_reachable(f"localhost:{port}")
        assert db_file.exists()
        assert (db_file.parent / "temporal.log").exists()
    finally:
        code = stop(process, signal.SIGINT)
        leaked = kill_servers_using(db_file)
    assert code == 130
    assert leaked == []
    assert not await is_reachable(f"localhost:{port}", timeout=1.0)
    assert "stopping the Temporal dev server" in log.read_text()


def kill_servers_using(db_file: Path) -> list[int]:
    """Stop dev servers still running on ``db_file`` (there should be none); their pids.

    The server runs in its own session, so stopping ``smyth dev`` does not reach it;
    if ``smyth dev`` failed to stop it, this keeps the test run from leaking it.
    """
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"start-dev" in cmdline and str(db_file).encode() in cmdline:
            found.append(int(proc.name))
            os.kill(int(proc.name), signal.SIGTERM)
    return found


async def test_dev_on_a_port_something_else_holds(smyth: Smyth, tmp_path: Path) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        outcome = await smyth(
            "dev", "--address", f"127.0.0.1:{port}", "--db-file", str(tmp_path / "t.db")
        )
    assert outcome.code == 1
    assert outcome.error_lines == [
        f"smyth: error: cannot start a Temporal dev server: 127.0.0.1:{port} (gRPC port) is "
        "already in use; choose other ports (--port, --ui-port)"
    ]
    assert not (tmp_path / "t.db").exists()


async def test_ensure_dev_server(address: str, tmp_path: Path) -> None:
    assert await ensure_dev_server(address, state_dir=tmp_path) is None  # one answers already
    with pytest.raises(ServerUnavailableError, match="only be started on this machine"):
        await ensure_dev_server("temporal.invalid:7233", state_dir=tmp_path)
    assert list(tmp_path.iterdir()) == []


def servers_using(db_file: Path) -> list[int]:
    """The pids of dev servers running on ``db_file``."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if b"start-dev" in cmdline and str(db_file).encode() in cmdline and state != "Z":
            found.append(int(proc.name))
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
async def test_dev_server_dies_when_smyth_dev_is_killed(tmp_path: Path) -> None:
    port, ui_port = free_port(), free_port()
    db_file = tmp_path / "state" / "temporal.db"
    process = spawn(
        [
            *("smyth_temporal.cli", "dev", "--port", str(port), "--ui-port", str(ui_port)),
            *("--db-file", str(db_file)),
        ],
        tmp_path / "dev.log",
    )
    try:
        assert process.stdout is not None
        ready = await asyncio.to_thread(process.stdout.readline)
        assert ready.decode().startswith("Temporal dev server ready"), ready
        [server] = servers_using(db_file)
        process.kill()  # SIGKILL: no chance to stop the server itself
        finish(process)
        deadline = time.monotonic() + PROCESS_TIMEOUT
        while server in servers_using(db_file) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert server not in servers_using(db_file)
    finally:
        leaked = kill_servers_using(db_file)
    assert leaked == []
