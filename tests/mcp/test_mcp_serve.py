"""``smyth mcp serve``: agents driven by an MCP client (the ``mcp`` SDK's own ``Client``).

The server is the real command in a process of its own, over stdio (the client starts
it) and over streamable HTTP; the agents run on an in-process worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult
from temporalio.client import Client as TemporalClient

from smyth_temporal.models import ModelRequest, ModelResponse
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from tests.helpers.cli_support import assert_one_error_line, run_smyth
from tests.helpers.gateway_support import TENANT, bearer, make_keys
from tests.helpers.mcp_servers import REPO_ROOT
from tests.helpers.trader import Trader

TIMEOUT = 60.0


def echo_tool_results(request: ModelRequest) -> ModelResponse:
    return reply(" | ".join(m.content or "" for m in request.messages if m.role == "tool"))


def serve_command(address: str, task_queue: str, *extra: str) -> list[str]:
    return [
        "-m",
        "smyth_temporal.cli",
        "mcp",
        "serve",
        "Trader",
        "tests.helpers.approval_agents:StrictTrader",
        "--address",
        address,
        "--task-queue",
        task_queue,
        *extra,
    ]


def server_environment() -> dict[str, str]:
    # The server must read the payloads the workers store (the test session's store),
    # with their keys when the suite runs encrypted.
    names = ("SMYTH_PAYLOAD_PATH", "SMYTH_ENCRYPTION_KEYS")
    return {name: os.environ[name] for name in names if name in os.environ}


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, text_of(result)
    return json.loads(text_of(result))


def text_of(result: CallToolResult) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


@pytest.fixture
async def trader(client: TemporalClient, task_queue: str) -> AsyncIterator[None]:
    model = ScriptedModel([tool_call("sell", symbol="ACME", quantity=10), echo_tool_results])
    async with agent_worker(client, Trader, model=model, task_queue=task_queue):
        yield


async def test_an_mcp_client_starts_a_run_approves_it_and_reads_the_result(
    address: str, task_queue: str, trader: None
) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=serve_command(address, task_queue),
        env=server_environment(),
        cwd=str(REPO_ROOT),
    )
    async with asyncio.timeout(TIMEOUT), Client(params) as mcp:
        listed = sorted(t.name for t in (await mcp.list_tools()).tools)
        assert listed == [
            "decide_approval",
            "list_agents",
            "list_approvals",
            "run_result",
            "run_state",
            "send_message",
            "start_run",
        ]
        agents = await call(mcp, "list_agents")
        assert agents == {
            "agents": ["Trader", "StrictTrader"],
            "task_queue": task_queue,
            "workers_polling": 1,
        }

        started = await call(mcp, "start_run", agent="Trader", prompt="Sell 10 ACME")
        workflow_id = started["workflow_id"]
        pending: list[dict[str, Any]] = []
        while not pending:
            listed_approvals = await call(mcp, "list_approvals")
            pending = [p for p in listed_approvals["pending"] if p["workflow_id"] == workflow_id]
            await asyncio.sleep(0.1)
        [approval] = pending
        assert approval["request"]["tool"] == "sell"
        assert approval["request"]["arguments"] == {"symbol": "ACME", "quantity": 10}

        waiting = await call(mcp, "run_result", workflow_id=workflow_id, wait_seconds=0.2)
        assert waiting == {"finished": False, "status": "awaiting_approval", "step": 1}

        # Without the request's id or hash, the only pending request is shown, not
        # decided: it may not be the one the person looked at.
        for unnamed in ({}, {"arguments_sha256": "0" * 64}):
            blind = await mcp.call_tool(
                "decide_approval", {"workflow_id": workflow_id, "approve": True, **unnamed}
            )
            assert blind.is_error, blind
            assert approval["request"]["id"] in text_of(blind)
            assert approval["request"]["arguments_sha256"] in text_of(blind)
        waiting = await call(mcp, "run_result", workflow_id=workflow_id, wait_seconds=0.2)
        assert waiting["status"] == "awaiting_approval"

        decided = await call(
            mcp,
            "decide_approval",
            workflow_id=workflow_id,
            approve=True,
            by="carol",
            arguments_sha256=approval["request"]["arguments_sha256"],
        )
        assert decided["decided"]["status"] == "approved"

        result = await call(mcp, "run_result", workflow_id=workflow_id)
        assert (result["finished"], result["status"], result["output"]) == (
            True,
            "completed",
            "sold 10 ACME",
        )
        state = await call(mcp, "run_state", workflow_id=workflow_id)
        assert state["approvals"][0]["decision"]["by"] == "carol"

        # Refusals come back as tool errors, worded as the client library words them.
        unknown = await mcp.call_tool("start_run", {"agent": "Nobody", "prompt": "hi"})
        assert unknown.is_error
        assert "unknown agent 'Nobody'; this server serves: Trader, StrictTrader" in text_of(
            unknown
        )
        again = await mcp.call_tool(
            "decide_approval", {"workflow_id": workflow_id, "approve": False}
        )
        assert again.is_error and "already ended" in text_of(again)


async def start_http_server(
    address: str, task_queue: str, keys_file: Path, *extra: str
) -> tuple[asyncio.subprocess.Process, str]:
    """``smyth mcp serve --transport http`` in a process; its URL once it announced it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *serve_command(address, task_queue, "--transport", "http", "--port", str(port), *extra),
        cwd=REPO_ROOT,
        env={**os.environ, **server_environment(), "SMYTH_KEYS_FILE": str(keys_file)},
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stderr is not None
    line = await asyncio.wait_for(process.stderr.readline(), TIMEOUT)
    url = f"http://127.0.0.1:{port}/mcp"
    assert f"at {url}" in line.decode(), line
    return process, url


@contextlib.asynccontextmanager
async def mcp_as(url: str, key: str | None, **options: Any) -> AsyncIterator[Client]:
    """An MCP client of ``url`` sending ``key``, once the server listens.

    Args:
        url: The server's streamable HTTP endpoint.
        key: The bearer key to send (none when ``None``).
        **options: More for the SDK's ``Client`` (``mode="legacy"``, ``extensions=[...]``).
    """
    headers = {} if key is None else {"Authorization": f"Bearer {key}"}
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    async with asyncio.timeout(TIMEOUT):
        while True:  # the announcement comes just before uvicorn listens
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                await asyncio.sleep(0.1)
                continue
            writer.close()
            break
    async with (
        httpx2.AsyncClient(headers=headers, timeout=TIMEOUT) as http,
        Client(streamable_http_client(url, http_client=http), **options) as mcp,
    ):
        yield mcp


async def test_smyth_mcp_serve_over_streamable_http(
    address: str, task_queue: str, trader: None, tmp_path: Path
) -> None:
    # No key file: keyless, which loopback allows.
    process, url = await start_http_server(address, task_queue, tmp_path / "none.json")
    try:
        async with mcp_as(url, None) as mcp:
            agents = await call(mcp, "list_agents")
            started = await call(mcp, "start_run", agent="Trader", prompt="Sell")
            state = await call(mcp, "run_state", workflow_id=started["workflow_id"])
        assert agents["agents"] == ["Trader", "StrictTrader"]
        assert state["workflow_id"] == started["workflow_id"]
        assert state["agent"] == "Trader"
    finally:
        process.terminate()
        await process.wait()


async def test_mcp_over_http_needs_a_key_and_decides_as_the_key(
    address: str, task_queue: str, trader: None, tmp_path: Path
) -> None:
    keys = make_keys(tmp_path / "keys.json")
    process, url = await start_http_server(address, task_queue, keys.store.path)
    try:
        async with mcp_as(url, keys.by_role["operator"]) as operator:
            tools = {t.name: t for t in (await operator.list_tools()).tools}
            started = await call(operator, "start_run", agent="Trader", prompt="Sell 10 ACME")
        workflow_id = started["workflow_id"]

        # Deciding is consequential: no client may take it for harmless or repeatable.
        hints = tools["decide_approval"].annotations
        assert hints is not None
        assert (hints.destructive_hint, hints.idempotent_hint) == (True, False)
        assert hints.read_only_hint is False

        # Without a key, or with a wrong or revoked one: 401 before MCP sees anything.
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        accept = {"Accept": "application/json, text/event-stream"}
        async with httpx.AsyncClient(timeout=TIMEOUT) as http:
            for headers in ({}, bearer("smyth_wrong-key"), {"Authorization": "Basic eDp5"}):
                answer = await http.post(url, json=ping, headers={**accept, **headers})
                assert answer.status_code == 401, answer.text
                assert answer.headers["www-authenticate"] == "Bearer"

        async with mcp_as(url, keys.by_role["approver"]) as approver:
            pending: list[dict[str, Any]] = []
            while not pending:
                listed = await call(approver, "list_approvals")
                pending = [p for p in listed["pending"] if p["workflow_id"] == workflow_id]
                await asyncio.sleep(0.1)
            request = pending[0]["request"]
            decide = {
                "workflow_id": workflow_id,
                "approve": True,
                "arguments_sha256": request["arguments_sha256"],
            }

            async with mcp_as(url, keys.by_role["viewer"]) as viewer:
                looked = await viewer.call_tool("decide_approval", decide)
                assert looked.is_error and "may not decide approvals" in text_of(looked)
            async with mcp_as(url, keys.other) as stranger:  # another tenant's admin
                elsewhere = await stranger.call_tool("decide_approval", decide)
                assert elsewhere.is_error and workflow_id in text_of(elsewhere)
                # (Other tests' runs of that tenant may wait on the shared server.)
                seen = (await call(stranger, "list_approvals"))["pending"]
                assert workflow_id not in [p["workflow_id"] for p in seen]

            # Signed "carol", recorded as the key that decided.
            decided = await call(approver, "decide_approval", **decide, by="carol")
            assert decided["decided"]["status"] == "approved"
            result = await call(approver, "run_result", workflow_id=workflow_id)
            state = await call(approver, "run_state", workflow_id=workflow_id)
        assert result["output"] == "sold 10 ACME"
        assert state["approvals"][0]["decision"]["by"] == f"{TENANT}-approver"
    finally:
        process.terminate()
        await process.wait()


@pytest.mark.parametrize("host", ["0.0.0.0", "127.0.0.2"])
def test_mcp_over_http_refuses_other_machines_without_keys(
    address: str, task_queue: str, tmp_path: Path, host: str
) -> None:
    # 127.0.0.2 is loopback, but not one the mcp SDK guards against DNS rebinding.
    outcome = run_smyth(
        *serve_command(address, task_queue, "--transport", "http", "--host", host)[2:],
        env={"SMYTH_KEYS_FILE": str(tmp_path / "none.json")},
    )
    assert_one_error_line(outcome, f"on {host} without API keys would let anyone")
