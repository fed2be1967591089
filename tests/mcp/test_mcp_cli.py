"""``smyth worker --mcp NAME=COMMAND|URL``: a worker process with its MCP servers."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path

from smyth_temporal import AgentClient
from tests.helpers.mcp_agents import Clock
from tests.helpers.mcp_servers import REPO_ROOT, time_server

WORKER_TIMEOUT = 60.0


async def smyth_worker(address: str, task_queue: str, *args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "smyth_temporal.cli",
        "worker",
        "tests.helpers.mcp_agents:Clock",
        "--address",
        address,
        "--task-queue",
        task_queue,
        "--model",
        "tests.helpers.mcp_servers:clock_model",
        *args,
        cwd=REPO_ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def wait_for_line(stream: asyncio.StreamReader, text: str) -> list[str]:
    lines: list[str] = []
    async with asyncio.timeout(WORKER_TIMEOUT):
        while not any(text in line for line in lines):
            line = (await stream.readline()).decode()
            if not line:
                raise AssertionError(f"no {text!r} before the end of output: {lines}")
            lines.append(line)
    return lines


async def test_smyth_worker_serves_agents_with_their_mcp_servers(
    address: str, agents: AgentClient, task_queue: str
) -> None:
    command = " ".join(time_server().command)
    worker = await smyth_worker(address, task_queue, "--mcp", f"time={command}")
    try:
        assert worker.stderr is not None
        await wait_for_line(worker.stderr, "worker.ready")
        result = await agents.run(Clock, "What time is it in Tokyo?")
        assert json.loads(result.output)["timezone"] == "Asia/Tokyo"
    finally:
        worker.send_signal(signal.SIGTERM)
        await worker.wait()


async def test_smyth_worker_names_a_server_it_cannot_reach(
    address: str, task_queue: str, tmp_path: Path
) -> None:
    command = " ".join(time_server().command)
    missing = tmp_path / "mcp-server-nowhere"
    worker = await smyth_worker(
        address, task_queue, "--mcp", f"time={command}", "--mcp", f"search={missing} --stdio"
    )
    _, stderr = await asyncio.wait_for(worker.communicate(), WORKER_TIMEOUT)
    assert worker.returncode == 1
    last = stderr.decode().strip().splitlines()[-1]
    assert last.startswith(f"smyth: error: MCP server 'search' ({missing} --stdio) cannot be")
