"""MCP tools from real servers on PyPI (stdio): ``mcp-server-time`` and ``mcp-server-git``.

A real dev server, a real worker, the real server processes; the model is scripted.
The contracts come from the servers' own annotations: the time tools are read-only
(concurrent), ``git_status`` is read-only, ``git_reset`` is destructive (approval),
``git_commit`` is neither read-only nor idempotent (a tool error is final).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHistory

from smyth_temporal import AgentClient, AgentState, ConfigurationError
from smyth_temporal.agent.tooling import idempotency_key
from smyth_temporal.mcp import StdioServer
from smyth_temporal.models import ModelRequest, ModelResponse
from smyth_temporal.testing import ScriptedModel, agent_worker, raw_tool_call, reply, tool_call
from tests.helpers.agents import read_ledger
from tests.helpers.mcp_agents import Clock, RepoKeeper, Scribe, Typo
from tests.helpers.mcp_servers import (
    git_server,
    ledger_server,
    make_repository,
    staged,
    time_server,
)


def tool_results(request: ModelRequest) -> ModelResponse:
    return reply(" | ".join(m.content or "" for m in request.messages if m.role == "tool"))


def activity_events(history: WorkflowHistory, activity_type: str) -> list[tuple[str, Any]]:
    """(kind, attributes) of the scheduled/started/completed/failed events of a type."""
    scheduled: dict[int, str] = {}
    events: list[tuple[str, Any]] = []
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attributes = event.activity_task_scheduled_event_attributes
            scheduled[event.event_id] = attributes.activity_type.name
            if attributes.activity_type.name == activity_type:
                events.append(("scheduled", attributes))
            continue
        for kind, name in (
            ("started", "activity_task_started_event_attributes"),
            ("completed", "activity_task_completed_event_attributes"),
            ("failed", "activity_task_failed_event_attributes"),
        ):
            if event.HasField(name):
                attributes = getattr(event, name)
                if scheduled.get(attributes.scheduled_event_id) == activity_type:
                    events.append((kind, attributes))
    return events


async def wait_for_approvals(agents: AgentClient, workflow_id: str) -> AgentState:
    for _ in range(400):
        state = await agents.state(workflow_id)
        if state.pending_approvals:
            return state
        await asyncio.sleep(0.05)
    raise AssertionError(f"no approval request: {state}")


# -- mcp-server-time ----------------------------------------------------------------------


async def test_read_only_tools_run_concurrently(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    offered: list[list[str]] = []

    def both(request: ModelRequest) -> ModelResponse:
        offered.append([t["function"]["name"] for t in request.tools])
        turn = [
            tool_call("get_current_time", timezone="Europe/Paris"),
            tool_call(
                "convert_time", source_timezone="UTC", time="12:00", target_timezone="Asia/Tokyo"
            ),
        ]
        calls = [c for t in turn for c in t.message.tool_calls]
        return turn[0].model_copy(
            update={"message": turn[0].message.model_copy(update={"tool_calls": calls})}
        )

    model = ScriptedModel([both, tool_results])
    async with agent_worker(
        client, Clock, model=model, task_queue=task_queue, mcp_servers={"time": time_server()}
    ):
        handle = await agents.start(Clock, "What time is it in Paris, and noon UTC in Tokyo?")
        result = await agents.result(handle.id)
    assert offered == [["get_current_time", "convert_time"]]
    paris, tokyo = result.output.split(" | ")
    assert json.loads(paris)["timezone"] == "Europe/Paris"
    assert json.loads(tokyo)["target"]["datetime"].endswith("T21:00:00+09:00")

    history = await handle.fetch_history()
    calls = [kind for kind, _ in activity_events(history, "smyth.mcp.time.call_tool")]
    # Both read-only calls were scheduled in one workflow task, before either finished.
    assert calls[:2] == ["scheduled", "scheduled"]
    assert sorted(calls) == [
        "completed",
        "completed",
        "scheduled",
        "scheduled",
        "started",
        "started",
    ]


# -- mcp-server-git -----------------------------------------------------------------------


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    return make_repository(tmp_path / "repo")


async def test_read_only_git_status_runs_without_approval(
    client: Client, agents: AgentClient, task_queue: str, repository: Path
) -> None:
    seen: list[list[str]] = []

    def status(request: ModelRequest) -> ModelResponse:
        seen.append(sorted(t["function"]["name"] for t in request.tools))
        return tool_call("git_status", repo_path=str(repository))

    model = ScriptedModel([status, tool_results])
    servers = {"git": git_server(repository)}
    async with agent_worker(
        client, RepoKeeper, model=model, task_queue=task_queue, mcp_servers=servers
    ):
        handle = await agents.start(RepoKeeper, "What is staged?")
        result = await agents.result(handle.id)
        state = await agents.state(handle.id)
    assert "notes.txt" in result.output
    assert state.approvals == []
    # The ordinary tool sits next to the server's; the denied tools are not offered.
    assert "summarize" in seen[0] and "git_status" in seen[0]
    assert "git_checkout" not in seen[0] and "git_create_branch" not in seen[0]


async def test_destructive_git_reset_waits_for_approval(
    client: Client, agents: AgentClient, task_queue: str, repository: Path
) -> None:
    model = ScriptedModel([tool_call("git_reset", repo_path=str(repository)), tool_results])
    servers = {"git": git_server(repository)}
    async with agent_worker(
        client, RepoKeeper, model=model, task_queue=task_queue, mcp_servers=servers
    ):
        handle = await agents.start(RepoKeeper, "Unstage everything.")
        state = await wait_for_approvals(agents, handle.id)
        [request] = state.pending_approvals
        assert (request.tool, request.arguments) == ("git_reset", {"repo_path": str(repository)})
        assert staged(repository) == ["notes.txt"]  # nothing ran before the decision

        listed = [p for p in await agents.pending_approvals() if p.workflow_id == handle.id]
        assert [p.request.tool for p in listed] == ["git_reset"]  # as `smyth approvals` shows it

        await agents.approve(handle.id, by="alice", comment="go")
        result = await agents.result(handle.id)
        final = await agents.state(handle.id)
    assert result.output == "All staged changes reset"
    assert staged(repository) == []
    assert final.approvals[0].decision is not None and final.approvals[0].decision.by == "alice"


async def test_git_commit_tool_error_is_not_retried(
    client: Client, agents: AgentClient, task_queue: str, repository: Path
) -> None:
    # Nothing staged: the server answers isError, which the model sees.
    subprocess.run(["git", "reset", "-q"], cwd=repository, check=True)
    model = ScriptedModel(
        [tool_call("git_commit", repo_path=str(repository), message="nothing"), tool_results]
    )
    servers = {"git": git_server(repository)}
    async with agent_worker(
        client, RepoKeeper, model=model, task_queue=task_queue, mcp_servers=servers
    ):
        handle = await agents.start(RepoKeeper, "Commit.")
        result = await agents.result(handle.id)
    assert result.output.startswith("Error: Error executing tool git_commit: No changes staged")
    history = await handle.fetch_history()
    events = activity_events(history, "smyth.mcp.git.call_tool")
    assert [kind for kind, _ in events] == ["scheduled", "started", "completed"]
    [started] = [attributes for kind, attributes in events if kind == "started"]
    assert started.attempt == 1
    [scheduled] = [attributes for kind, attributes in events if kind == "scheduled"]
    assert scheduled.retry_policy.maximum_attempts == 5  # retries exist, an isError is final


# -- bad input ----------------------------------------------------------------------------


async def test_arguments_that_violate_the_input_schema_never_reach_the_server(
    client: Client, agents: AgentClient, task_queue: str, repository: Path
) -> None:
    model = ScriptedModel(
        [
            tool_call("git_status", path=str(repository)),
            raw_tool_call("git_log", '{"repo_path": 3'),
            tool_call("git_log", repo_path=str(repository), max_count="ten"),
            tool_results,
        ]
    )
    servers = {"git": git_server(repository)}
    async with agent_worker(
        client, RepoKeeper, model=model, task_queue=task_queue, mcp_servers=servers
    ):
        handle = await agents.start(RepoKeeper, "Look around.")
        result = await agents.result(handle.id)
    missing, malformed, wrong_type = result.output.split(" | ")
    assert missing.startswith("Error: Invalid arguments for tool 'git_status': repo_path: field")
    assert "path: extra field not permitted" not in missing  # the schema allows extras
    assert '"required": ["repo_path"]' in missing  # the schema, for the model to correct
    assert "invalid JSON" in malformed
    assert "max_count: expected integer, got string" in wrong_type
    history = await handle.fetch_history()
    assert activity_events(history, "smyth.mcp.git.call_tool") == []


async def test_a_server_that_is_down_at_worker_start_is_named(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    broken = StdioServer([str(tmp_path / "no-such-server"), "--stdio"])
    model = ScriptedModel([reply("never")])
    servers = {"time": time_server(), "search": broken}
    with pytest.raises(ConfigurationError) as caught:
        async with agent_worker(
            client, Clock, model=model, task_queue=task_queue, mcp_servers=servers
        ):
            await asyncio.sleep(30)  # the worker fails before it polls
    message = str(caught.value)
    assert "MCP server 'search'" in message and "no-such-server" in message
    assert "cannot be reached" in message


async def test_an_unknown_server_name_in_the_config_is_refused(
    client: Client, task_queue: str
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        agent_worker(
            client,
            Typo,
            model=ScriptedModel([reply("never")]),
            task_queue=task_queue,
            mcp_servers={"time": time_server()},
        )
    assert str(caught.value).startswith(
        "Typo names MCP servers ['tiem'] that this worker does not have (it has: time)"
    )


# -- a stdio server that dies ---------------------------------------------------------------


async def test_a_stdio_server_that_dies_is_started_again(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    pids: list[int] = []

    def kill_it(request: ModelRequest) -> ModelResponse:
        pid = int(next(m.content or "" for m in request.messages if m.role == "tool"))
        pids.append(pid)
        os.kill(pid, signal.SIGKILL)  # between two calls, as a crash would
        return tool_call("write", text="after the crash")

    model = ScriptedModel([tool_call("pid"), kill_it, tool_call("pid"), tool_results])
    servers = {"ledger": ledger_server(ledger)}
    async with agent_worker(
        client, Scribe, model=model, task_queue=task_queue, mcp_servers=servers
    ):
        handle = await agents.start(Scribe, "Write after a crash.")
        result = await agents.result(handle.id)
    first, written, second = result.output.split(" | ")
    assert written == "wrote after the crash"
    assert int(second) != int(first) == pids[0]
    # The call that met the dead connection never reached a server; its retry did, once.
    [entry] = [e for e in read_ledger(ledger) if e["tool"] == "write"]
    assert entry["key"] == idempotency_key(
        handle.id, handle.first_execution_run_id or "", 2, "call_2_0"
    )
    history = await handle.fetch_history()
    attempts = [
        a.attempt
        for kind, a in activity_events(history, "smyth.mcp.ledger.call_tool")
        if kind == "started"
    ]
    assert attempts == [1, 2, 1]  # the write's first attempt failed on the dead connection


def test_an_mcp_tool_whose_schema_could_wedge_the_run_is_left_out() -> None:
    # A server's schema enters the agent's history and is decoded by workflow code:
    # nested past the decoder's limit (about 200) it would fail every workflow task.
    from mcp.types import Tool as ServerTool

    from smyth_temporal.mcp._activities import MAX_SCHEMA_DEPTH, _offerable

    def nested(levels: int) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "string"}
        for _ in range(levels):
            schema = {"type": "object", "properties": {"x": schema}}
        return schema

    fine = ServerTool(name="fine", input_schema=nested(MAX_SCHEMA_DEPTH // 2 - 1))
    deep = ServerTool(name="deep", input_schema=nested(300))
    huge = ServerTool(
        name="huge",
        input_schema={"type": "object", "description": "x" * (300 * 1024)},
    )
    with capture_logs() as logs:
        assert [_offerable("s", t) for t in (fine, deep, huge)] == [True, False, False]
    assert [e["tool"] for e in logs if e["event"] == "mcp.tool_left_out"] == ["deep", "huge"]
