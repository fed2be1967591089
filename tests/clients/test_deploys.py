"""Safe deploys: versioned workers pin agent runs to their build; verify-deploy replays.

Workers run as real ``smyth worker --deployment NAME --build-id ID`` processes on the
session's dev server, and a version is made current with the real ``temporal`` CLI, as
an operator would.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.common import VersioningBehavior

from smyth_temporal import AgentClient, AgentInput, AgentState, AgentWorkflow
from smyth_temporal.clients import verify_deploy
from smyth_temporal.devserver import find_binary
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from smyth_temporal.types.budget import budget_workflow_id
from tests.helpers.cli_support import (
    PROCESS_TIMEOUT,
    Outcome,
    assert_one_error_line,
    free_port,
    run_smyth,
    spawn_worker,
    stop_process,
)
from tests.helpers.deploy_agents import B_MARK, Filer, HastyFiler, RewordedFiler, TerseFiler

MODEL = "tests.helpers.cli_models:trader"


def promote(address: str, deployment: str, build_id: str) -> None:
    """``temporal worker deployment set-current-version``, retried until the server
    knows the version (it registers a version when its first poll arrives)."""
    command = [
        find_binary("temporal"),
        *("worker", "deployment", "set-current-version"),
        *("--deployment-name", deployment, "--build-id", build_id),
        *("--address", address, "--yes"),
    ]
    deadline = time.monotonic() + PROCESS_TIMEOUT
    while True:
        done = subprocess.run(command, capture_output=True, text=True, timeout=PROCESS_TIMEOUT)
        if done.returncode == 0:
            return
        if time.monotonic() > deadline:
            pytest.fail(f"could not promote {deployment}.{build_id}: {done.stderr}")
        time.sleep(0.2)


async def wait_for_pending(agents: AgentClient, workflow_id: str) -> AgentState:
    for _ in range(600):
        state = await agents.state(workflow_id)
        if state.pending_approvals:
            return state
        await asyncio.sleep(0.1)
    raise AssertionError("the agent never asked for approval")


async def test_pinned_run_finishes_on_its_build_new_runs_take_the_new_one(
    client: Client, address: str, task_queue: str, tmp_path: Path
) -> None:
    deployment = f"clerk-{uuid.uuid4().hex[:8]}"
    agents = AgentClient(client, task_queue=task_queue)

    def worker(spec: str, build: str) -> subprocess.Popen[bytes]:
        return spawn_worker(
            [spec],
            model=MODEL,
            address=address,
            task_queue=task_queue,
            log=tmp_path / f"worker-{build}.log",
            args=["--deployment", deployment, "--build-id", build],
        )

    a = worker("tests.helpers.deploy_agents:ClerkA", "A")
    b: subprocess.Popen[bytes] | None = None
    try:
        promote(address, deployment, "A")
        first = await agents.start("DeployClerk", AgentInput(prompt="sell ACME:10"))
        state = await wait_for_pending(agents, first.id)
        assert [v.deployment for v in state.versions] == [f"{deployment}.A"]

        b = worker("tests.helpers.deploy_agents:ClerkB", "B")
        promote(address, deployment, "B")
        second = await agents.start("DeployClerk", AgentInput(prompt="sell GLOBEX:2"))
        await wait_for_pending(agents, second.id)

        await agents.approve(first.id, by="ops")
        await agents.approve(second.id, by="ops")
        first_result = await agents.result(first.id)
        second_result = await agents.result(second.id)

        # A's code ran the pinned run to its end (B's would have failed to replay it,
        # and marks its answers); the run started after the promotion ran on B.
        assert first_result.output == "sold 10 ACME"
        assert second_result.output == "sold 2 GLOBEX" + B_MARK
        first_state = await agents.state(first.id)
        assert {v.deployment for v in first_state.versions} == {f"{deployment}.A"}
        second_state = await agents.state(second.id)
        assert {v.deployment for v in second_state.versions} == {f"{deployment}.B"}
    finally:
        for process in (a, b):
            if process is not None:
                stop_process(process)


async def test_a_pinned_run_moves_to_the_current_build_at_continue_as_new(
    client: Client, address: str, task_queue: str, tmp_path: Path
) -> None:
    deployment = f"relay-{uuid.uuid4().hex[:8]}"
    agents = AgentClient(client, task_queue=task_queue)
    workers: list[subprocess.Popen[bytes]] = []

    def worker(spec: str, build: str) -> None:
        workers.append(
            spawn_worker(
                [spec],
                model=MODEL,
                address=address,
                task_queue=task_queue,
                log=tmp_path / f"worker-{build}.log",
                args=["--deployment", deployment, "--build-id", build],
            )
        )

    try:
        worker("tests.helpers.deploy_agents:RelayA", "A")
        promote(address, deployment, "A")
        handle = await agents.start("DeployRelay", AgentInput(prompt="sell ACME:10"))
        await wait_for_pending(agents, handle.id)
        worker("tests.helpers.deploy_agents:RelayB", "B")
        promote(address, deployment, "B")

        await agents.approve(handle.id, by="ops")
        result = await agents.result(handle.id)

        # Step 1 and its approved sale ran on A; the run continued as new after it and
        # the next run, step 2, started on B (which A's history would not replay).
        assert result.output == "sold 10 ACME" + B_MARK
        state = await agents.state(handle.id)
        assert state.generation == 2
        assert [(v.step, v.deployment) for v in state.versions] == [
            (1, f"{deployment}.A"),
            (2, f"{deployment}.B"),
        ]
    finally:
        for process in workers:
            stop_process(process)


async def test_verify_deploy_catches_a_nondeterministic_change(
    client: Client, address: str, task_queue: str
) -> None:
    model = ScriptedModel([tool_call("get_quote", symbol="ACME"), reply("ACME is 101.5.")])
    agents = AgentClient(client, task_queue=task_queue)
    async with agent_worker(client, Filer, model=model, task_queue=task_queue):
        ids = []
        for _ in range(2):
            handle = await agents.start("DeployFiler", AgentInput(prompt="quote ACME"))
            await agents.result(handle.id)
            ids.append(handle.id)

    def verify(spec: str) -> Outcome:
        return run_smyth(
            "verify-deploy", f"tests.helpers.deploy_agents:{spec}", "--address", address
        )

    same = verify("Filer")
    assert same.code == 0, same.err
    assert same.out == ""

    reworded = verify("RewordedFiler")  # another prompt, the same commands
    assert reworded.code == 0, reworded.err
    assert "all replay" in reworded.err

    throttled = verify("ThrottledFiler")
    assert throttled.code == 1, throttled.err
    lines = throttled.out.splitlines()
    # (Runs of this type by other tests of the session are checked too.)
    assert set(ids) <= {line.partition(":")[0] for line in lines}
    for line in lines:
        assert line.endswith(
            ": step 1: history has activity smyth.model.complete scheduled, "
            "the code now starts a timer"
        ), line
    assert f"{len(lines)} would not replay" in throttled.err

    limited = run_smyth(
        *("verify-deploy", "tests.helpers.deploy_agents:ThrottledFiler"),
        *("--address", address, "--limit", "1", "--since", "1h"),
    )
    assert limited.code == 1, limited.err
    assert len(limited.out.splitlines()) == 1
    assert "replayed 1 run: 1 would not replay" in limited.err


async def test_replay_failures_are_told_in_words(client: Client, task_queue: str) -> None:
    # A type of its own, so that runs of the other tests do not count here.
    model = ScriptedModel([tool_call("get_quote", symbol="ACME"), reply("ACME is 101.5.")])
    agents = AgentClient(client, task_queue=task_queue)
    async with agent_worker(client, Filer, model=model, task_queue=task_queue):
        handle = await agents.start("DeployFiler", AgentInput(prompt="quote ACME"))
        await agents.result(handle.id)

    async def reasons(agent: type[AgentWorkflow]) -> list[str]:
        report = await verify_deploy(client, [agent], since=timedelta(minutes=5))
        assert report.checked >= 1
        return [m.reason for m in report.mismatches if m.workflow_id == handle.id]

    assert await reasons(Filer) == []
    assert await reasons(RewordedFiler) == []
    assert await reasons(TerseFiler) == [
        "step 1: history has activity smyth.tool.get_quote scheduled, the code now completes "
        "the run"
    ]
    assert await reasons(HastyFiler) == [
        "step 1: history has activity smyth.tool.get_quote scheduled, the code now schedules "
        "activity smyth.model.complete"
    ]


def test_verify_deploy_errors(address: str) -> None:
    assert_one_error_line(
        run_smyth("verify-deploy", "tests.helpers.deploy_agents:Nobody", "--address", address),
        "module 'tests.helpers.deploy_agents' has no",
    )
    nowhere = f"127.0.0.1:{free_port()}"
    assert_one_error_line(
        run_smyth("verify-deploy", "tests.helpers.deploy_agents:Filer", "--address", nowhere),
        f"no Temporal server answers at {nowhere}",
    )
    usage = run_smyth("verify-deploy", "tests.helpers.deploy_agents:Filer", "--since", "soon")
    assert usage.code == 2
    assert "argument --since: not a duration" in usage.err


def test_a_versioned_worker_needs_both_names(address: str) -> None:
    outcome = run_smyth(
        *("worker", "tests.helpers.deploy_agents:ClerkA", "--model", MODEL),
        *("--address", address, "--deployment", "clerk"),
    )
    assert_one_error_line(outcome, "needs both a deployment name and a build id")


async def test_a_tenants_budget_follows_the_current_build(
    client: Client, address: str, task_queue: str, tmp_path: Path
) -> None:
    """A budget outlives builds: once A's workers are gone, B's serve it."""
    deployment = f"budget-{uuid.uuid4().hex[:8]}"
    agents = AgentClient(client, task_queue=task_queue)
    tenant = f"acme{uuid.uuid4().hex[:8]}"

    def worker(build: str) -> subprocess.Popen[bytes]:
        return spawn_worker(
            [
                "tests.helpers.deploy_agents:ClerkA"
                if build == "A"
                else "tests.helpers.deploy_agents:ClerkB"
            ],
            model=MODEL,
            address=address,
            task_queue=task_queue,
            log=tmp_path / f"worker-{build}.log",
            args=["--deployment", deployment, "--build-id", build],
        )

    a = worker("A")
    try:
        promote(address, deployment, "A")
        await agents.budgets.set(tenant, daily=5.0)
    finally:
        stop_process(a)
    b = worker("B")
    try:
        promote(address, deployment, "B")
        summary = await agents.budgets.set(tenant, monthly=50.0)  # served by B alone
        assert (summary.limits.daily, summary.limits.monthly) == (5.0, 50.0)
        description = await client.get_workflow_handle(budget_workflow_id(tenant)).describe()
        info = description.raw_description.workflow_execution_info.versioning_info
        assert info.behavior == VersioningBehavior.AUTO_UPGRADE
    finally:
        stop_process(b)
