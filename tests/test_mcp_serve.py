"""``smyth mcp serve``: agents driven by an MCP client (the ``mcp`` SDK's own ``Client``).

The server is the real command in a process of its own, over stdio (the client starts
it) and over streamable HTTP; the agents run on an in-process worker.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult
from temporalio.client import Client as TemporalClient

from smyth_temporal.models import ModelRequest, ModelResponse
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from tests.mcp_servers import REPO_ROOT
from tests.trader import Trader

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
        "tests.approval_agents:StrictTrader",
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


async def test_smyth_mcp_serve_over_streamable_http(
    address: str, task_queue: str, trader: None
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *serve_command(address, task_queue, "--transport", "http", "--port", str(port)),
        cwd=REPO_ROOT,
        env={**os.environ, **server_environment()},
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stderr is not None
        line = await asyncio.wait_for(process.stderr.readline(), TIMEOUT)
        assert f"at http://127.0.0.1:{port}/mcp" in line.decode()
        async with asyncio.timeout(TIMEOUT):
            while True:  # the line comes just before uvicorn listens
                try:
                    async with Client(f"http://127.0.0.1:{port}/mcp") as mcp:
                        agents = await call(mcp, "list_agents")
                        started = await call(mcp, "start_run", agent="Trader", prompt="Sell")
                        state = await call(mcp, "run_state", workflow_id=started["workflow_id"])
                    break
                except Exception:  # not listening yet
                    await asyncio.sleep(0.1)
        assert agents["agents"] == ["Trader", "StrictTrader"]
        assert state["workflow_id"] == started["workflow_id"]
        assert state["agent"] == "Trader"
    finally:
        process.terminate()
        await process.wait()
