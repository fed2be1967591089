"""MCP tasks (2025-11-25) from ``smyth mcp serve``, driven by the ``mcp`` SDK's own client.

The server is the real command in a process of its own (stdio, and streamable HTTP
with keys); the agents run on an in-process worker. A task is a run: its id is the
workflow id and every answer is read from Temporal, so it outlives the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    CallToolRequestParams,
    CallToolResult,
    CancelTaskRequest,
    CancelTaskRequestParams,
    CancelTaskResult,
    CreateTaskResult,
    GetTaskPayloadRequest,
    GetTaskPayloadRequestParams,
    GetTaskRequest,
    GetTaskRequestParams,
    GetTaskResult,
    ListTasksRequest,
    ListTasksResult,
    PaginatedRequestParams,
    TaskMetadata,
    TaskStatus,
)
from temporalio.client import Client as TemporalClient

from smyth_temporal.testing import ScriptedModel, agent_worker, tool_call
from tests.helpers.gateway_support import make_keys
from tests.helpers.mcp_servers import REPO_ROOT
from tests.helpers.mcp_tasks_client import listen_to_tasks
from tests.helpers.trader import Trader
from tests.mcp.test_mcp_serve import (
    TIMEOUT,
    echo_tool_results,
    mcp_as,
    serve_command,
    server_environment,
    start_http_server,
)

RELATED_TASK = "io.modelcontextprotocol/related-task"


@pytest.fixture
async def trader(client: TemporalClient, task_queue: str) -> AsyncIterator[None]:
    model = ScriptedModel([tool_call("sell", symbol="ACME", quantity=10), echo_tool_results])
    async with agent_worker(client, Trader, model=model, task_queue=task_queue):
        yield


def stdio_server(address: str, task_queue: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=serve_command(address, task_queue),
        env=server_environment(),
        cwd=str(REPO_ROOT),
    )


@contextlib.asynccontextmanager
async def tasks_client_over_http(url: str, key: str) -> AsyncIterator[Client]:
    """A 2025-11-25 client (the revision with tasks) of ``url`` sending ``key``."""
    async with mcp_as(url, key, mode="legacy") as mcp:
        yield mcp


async def start_task(mcp: Client, agent: str = "Trader", **task: Any) -> CreateTaskResult:
    params = CallToolRequestParams(
        name="start_run",
        arguments={"agent": agent, "prompt": "Sell 10 ACME"},
        task=TaskMetadata(**task),
    )
    answer = await send_raw(mcp, "tools/call", params.model_dump(by_alias=True, mode="json"))
    return CreateTaskResult.model_validate(answer, by_name=False)


async def send_raw(mcp: Client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A request as given, its answer unvalidated.

    mcp 2.3's client validates every ``tools/call`` answer as a ``CallToolResult``
    (it makes no task-augmented calls itself), so a task-augmented call goes through
    the session's dispatcher, as do the malformed requests its types would not build.
    """
    return await mcp.session._dispatcher.send_raw_request(method, params)


async def get_task(mcp: Client, task_id: str) -> GetTaskResult:
    request = GetTaskRequest(params=GetTaskRequestParams(task_id=task_id))
    return await mcp.session.send_request(request, GetTaskResult)


async def task_payload(mcp: Client, task_id: str) -> CallToolResult:
    request = GetTaskPayloadRequest(params=GetTaskPayloadRequestParams(task_id=task_id))
    return await mcp.session.send_request(request, CallToolResult)


async def cancel_task(mcp: Client, task_id: str) -> CancelTaskResult:
    request = CancelTaskRequest(params=CancelTaskRequestParams(task_id=task_id))
    return await mcp.session.send_request(request, CancelTaskResult)


async def listed_ids(mcp: Client) -> list[str]:
    """Every task id ``tasks/list`` shows, following its cursors."""
    ids: list[str] = []
    cursor: str | None = None
    while True:
        request = ListTasksRequest(params=PaginatedRequestParams(cursor=cursor))
        page = await mcp.session.send_request(request, ListTasksResult)
        ids += [task.task_id for task in page.tasks]
        cursor = page.next_cursor
        if cursor is None:
            return ids


async def poll(mcp: Client, task_id: str, status: TaskStatus) -> GetTaskResult:
    """``tasks/get`` until the task has ``status`` (as a client following the task does)."""
    while (task := await get_task(mcp, task_id)).status != status:
        assert task.status in ("working", "input_required"), task
        await asyncio.sleep((task.poll_interval or 100) / 1000)
    return task


async def raw(mcp: Client, method: str, params: dict[str, Any]) -> MCPError:
    """The error a malformed request gets."""
    with pytest.raises(MCPError) as refused:
        await send_raw(mcp, method, params)
    return refused.value


async def runs_started_since(client: TemporalClient, task_queue: str, since: datetime) -> int:
    query = f"TaskQueue = '{task_queue}' AND StartTime >= '{since.isoformat()}'"
    return len([run async for run in client.list_workflows(query)])


async def test_a_run_started_as_a_task_waits_for_approval_then_completes(
    address: str, task_queue: str, trader: None
) -> None:
    async with (
        asyncio.timeout(TIMEOUT),
        Client(stdio_server(address, task_queue), mode="legacy") as mcp,
    ):
        capabilities = mcp.session.initialize_result.capabilities  # type: ignore[union-attr]
        assert capabilities.tasks is not None and capabilities.tasks.requests is not None
        assert capabilities.tasks.requests.tools is not None
        assert (capabilities.tasks.list, capabilities.tasks.cancel) != (None, None)
        tools = {tool.name: tool for tool in (await mcp.list_tools()).tools}
        assert tools["start_run"].execution is not None
        assert tools["start_run"].execution.task_support == "optional"

        created = await start_task(mcp, ttl=60_000)
        task_id = created.task.task_id
        assert task_id.startswith("Trader-")
        assert created.task.status == "working" and created.task.poll_interval

        waiting = await poll(mcp, task_id, "input_required")
        state = await mcp.call_tool("run_state", {"workflow_id": task_id})
        request = state.structured_content["pending_approvals"][0]
        # The status says what waits and how to answer it.
        assert waiting.status_message is not None
        for named in (request["id"], "sell", request["arguments_sha256"], "decide_approval"):
            assert named in waiting.status_message

        decided = await mcp.call_tool(
            "decide_approval",
            {"workflow_id": task_id, "approve": True, "request_id": request["id"]},
        )
        assert not decided.is_error, decided
        done = await poll(mcp, task_id, "completed")
        assert done.task_id == task_id and done.poll_interval is None

        payload = await task_payload(mcp, task_id)
        assert not payload.is_error
        assert payload.structured_content is not None
        assert payload.structured_content["output"] == "sold 10 ACME"
        assert payload.structured_content["status"] == "completed"
        assert payload.meta is not None and payload.meta[RELATED_TASK] == {"taskId": task_id}
        assert task_id in await listed_ids(mcp)


async def test_bad_task_requests_get_a_clear_error_and_start_nothing(
    address: str, task_queue: str, trader: None, client: TemporalClient
) -> None:
    since = datetime.now(UTC)
    async with (
        asyncio.timeout(TIMEOUT),
        Client(stdio_server(address, task_queue), mode="legacy") as mcp,
    ):
        for unknown in ("Trader-nosuchrun", "x" * 1001, ""):
            for ask in (get_task, task_payload, cancel_task):
                with pytest.raises(MCPError) as refused:
                    await ask(mcp, unknown)
                assert refused.value.code == INVALID_PARAMS, refused.value
        with pytest.raises(MCPError, match="no task with id 'Trader-nosuchrun'"):
            await get_task(mcp, "Trader-nosuchrun")

        missing = await raw(mcp, "tasks/get", {})
        assert (missing.code, "taskId" in missing.message) == (INVALID_PARAMS, True), missing
        wrong_type = await raw(mcp, "tasks/cancel", {"taskId": 7})
        assert wrong_type.code == INVALID_PARAMS, wrong_type
        bad_cursor = await raw(mcp, "tasks/list", {"cursor": "not base64!"})
        assert bad_cursor.code == INVALID_PARAMS, bad_cursor
        bad_ttl = await raw(
            mcp,
            "tools/call",
            {
                "name": "start_run",
                "arguments": {"agent": "Trader", "prompt": "hi"},
                "task": {"ttl": "soon"},
            },
        )
        assert bad_ttl.code == INVALID_PARAMS, bad_ttl
        other_tool = await raw(
            mcp,
            "tools/call",
            {"name": "list_agents", "arguments": {}, "task": {}},
        )
        assert other_tool.code == METHOD_NOT_FOUND and "start_run" in other_tool.message
        with pytest.raises(MCPError, match="unknown agent 'Nobody'") as unknown_agent:
            await start_task(mcp, agent="Nobody")
        assert unknown_agent.value.code == INVALID_PARAMS

        # Nothing of that started a run: the one started now is the only one.
        created = await start_task(mcp)
        while await runs_started_since(client, task_queue, since) == 0:
            await asyncio.sleep(0.1)
        assert await runs_started_since(client, task_queue, since) == 1
        await poll(mcp, created.task.task_id, "input_required")


async def test_a_client_without_tasks_keeps_the_tools_as_they_were(
    address: str, task_queue: str, trader: None
) -> None:
    # The 2026-07-28 revision moved tasks into an extension: a client that does not
    # declare it is served the tools exactly as before, and refused the extension's
    # methods as the extension says (tests/mcp/test_mcp_tasks_extension.py).
    async with asyncio.timeout(TIMEOUT), Client(stdio_server(address, task_queue)) as mcp:
        assert mcp.protocol_version == "2026-07-28"
        tools = {tool.name: tool for tool in (await mcp.list_tools()).tools}
        assert tools["start_run"].execution is None
        started = await mcp.call_tool("start_run", {"agent": "Trader", "prompt": "Sell"})
        assert not started.is_error
        assert set(started.structured_content or {}) == {"workflow_id", "agent"}
        workflow_id = started.structured_content["workflow_id"]
        for refused_call in (get_task(mcp, workflow_id), listen_to_tasks(mcp.session, workflow_id)):
            with pytest.raises(MCPError) as refused:
                await refused_call
            assert refused.value.code == MISSING_REQUIRED_CLIENT_CAPABILITY


async def test_a_task_outlives_its_server_and_only_its_tenant_sees_or_cancels_it(
    address: str, task_queue: str, trader: None, tmp_path: Path
) -> None:
    keys = make_keys(tmp_path / "keys.json")
    process, url = await start_http_server(address, task_queue, keys.store.path)
    try:
        async with asyncio.timeout(TIMEOUT):
            async with tasks_client_over_http(url, keys.by_role["operator"]) as operator:
                task_id = (await start_task(operator)).task.task_id
                await poll(operator, task_id, "input_required")
            # The server dies mid-task; a new one answers for the same task.
            process.kill()
            await process.wait()
            process, url = await start_http_server(address, task_queue, keys.store.path)

            async with tasks_client_over_http(url, keys.other) as stranger:
                # Another tenant's admin: the task does not exist for it.
                for ask in (get_task, task_payload, cancel_task):
                    with pytest.raises(MCPError, match=f"no task with id '{task_id}'"):
                        await ask(stranger, task_id)
                assert task_id not in await listed_ids(stranger)
            async with tasks_client_over_http(url, keys.by_role["viewer"]) as viewer:
                assert (await get_task(viewer, task_id)).status == "input_required"
                for refused_to_viewer in (cancel_task(viewer, task_id), start_task(viewer)):
                    with pytest.raises(MCPError, match="may not start runs") as looked:
                        await refused_to_viewer
                    assert looked.value.code == INVALID_REQUEST

            async with tasks_client_over_http(url, keys.by_role["operator"]) as operator:
                assert (await get_task(operator, task_id)).status == "input_required"
                assert task_id in await listed_ids(operator)
                cancelled = await cancel_task(operator, task_id)
                assert (cancelled.task_id, cancelled.status) == (task_id, "cancelled")
                assert (await get_task(operator, task_id)).status == "cancelled"
                with pytest.raises(MCPError, match="has ended") as again:
                    await cancel_task(operator, task_id)
                assert again.value.code == INVALID_PARAMS
                payload = await task_payload(operator, task_id)
                assert payload.structured_content is not None
                assert payload.structured_content["status"] == "interrupted"
    finally:
        process.terminate()
        await process.wait()
