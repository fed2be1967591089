"""What an MCP tool call costs next to the same function as an ``@tool``.

From the repository root::

    .venv/bin/python -m bench.mcp_overhead [--runs 3]

The function returns its argument. As an ``@tool`` it is ``bench._common.echo`` (run by
``StepBench``); as an MCP tool it is served by this module itself, over stdio (a child
process of the worker) and over streamable HTTP (a process on loopback), to
``MCPBench``. Each run is 20 steps of one call each, after an untimed warm-up run per
configuration. Reported, with the ratio to the ``@tool``:

- tool activity: from the server's event times, scheduled to completed, per call;
- step: the time between consecutive model calls (model turn + tool call + the
  workflow tasks in between), as the worker sees them;
- direct: the same call from a bare ``mcp.Client``, with no Temporal at all.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from temporalio import activity, workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHistory
from temporalio.worker import Worker

from bench._common import BENCH_STEPS, StepBench, free_port, summary_ms
from smyth_temporal import AgentClient, AgentConfig, AgentInput, AgentResult, AgentWorkflow

with workflow.unsafe.imports_passed_through():
    from bench._plain_worker import STEP_CALLS, PlainSteps, plain_model
    from bench._results import headline, write_json
    from smyth_temporal import configure_logging
    from smyth_temporal.mcp import HttpServer, MCPServerConfig, StdioServer
    from smyth_temporal.models import ModelRequest, ModelResponse
    from smyth_temporal.testing import (
        ScriptedModel,
        agent_worker,
        new_task_queue,
        reply,
        start_dev_environment,
        tool_call,
    )


@workflow.defn
class MCPBench(AgentWorkflow):
    """``StepBench`` with the echo tool on an MCP server."""

    config = AgentConfig(model="bench-model", mcp_servers=["echo"], max_steps=BENCH_STEPS + 5)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


class TimedModel:
    """A scripted model that notes when each call arrives."""

    def __init__(self) -> None:
        steps = [tool_call("echo", text=f"step {n}") for n in range(1, BENCH_STEPS + 1)]
        self._model = ScriptedModel([*steps, reply("done")])
        self.calls: list[float] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.calls.append(time.perf_counter())
        return await self._model.complete(request)


def tool_activity_seconds(history: WorkflowHistory) -> list[float]:
    """Scheduled-to-completed seconds of every tool activity (not the model's)."""
    scheduled: dict[int, float] = {}
    durations: list[float] = []
    for event in history.events:
        at = event.event_time.ToDatetime().timestamp()
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            name = event.activity_task_scheduled_event_attributes.activity_type.name
            if name != "smyth.model.complete":
                scheduled[event.event_id] = at
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            started = scheduled.get(
                event.activity_task_completed_event_attributes.scheduled_event_id
            )
            if started is not None:
                durations.append(at - started)
    return durations


async def measure(
    client: Client, agent: type[AgentWorkflow], servers: dict[str, MCPServerConfig], runs: int
) -> tuple[list[float], list[float]]:
    """Tool-activity and step seconds over ``runs`` timed runs (after a warm-up)."""
    activities: list[float] = []
    steps: list[float] = []
    for run in range(runs + 1):
        task_queue = new_task_queue("bench-mcp")
        model = TimedModel()
        async with agent_worker(
            client, agent, model=model, task_queue=task_queue, mcp_servers=servers or None
        ):
            agents = AgentClient(client, task_queue=task_queue)
            handle = await agents.start(agent, AgentInput(prompt="echo"))
            await agents.result(handle.id)
            history = await handle.fetch_history()
        if run == 0:
            continue  # warm-up: imports, connections, caches
        activities += tool_activity_seconds(history)
        steps += [b - a for a, b in zip(model.calls, model.calls[1:], strict=False)][:BENCH_STEPS]
    return activities, steps


async def direct(server: MCPServerConfig, calls: int = 200) -> list[float]:
    """Seconds of ``calls`` sequential echo calls from a bare ``mcp.Client``."""
    from smyth_temporal.mcp import MCPConnections

    connections = MCPConnections({"echo": server})
    seconds: list[float] = []
    async with connections.serving():
        for n in range(calls + 10):
            started = time.perf_counter()
            async with connections.session("echo") as session:
                await session.call_tool("echo", {"text": f"call {n}"})
            if n >= 10:
                seconds.append(time.perf_counter() - started)
    return seconds


async def measure_by_hand(client: Client, server: MCPServerConfig, runs: int) -> list[float]:
    """Step seconds of ``PlainSteps``, its tool activity calling ``server`` by hand.

    The hand-written baseline: plain temporalio (no smyth plugin, temporalio's
    converter), the loop of ``bench._plain_worker``, and a tool activity that calls
    the echo tool through a session held by the worker (the same client ``direct``
    times).
    """
    from smyth_temporal.mcp import MCPConnections

    connections = MCPConnections({"echo": server})

    @activity.defn(name="plain_tool")
    async def echo_by_hand(text: str) -> str:
        async with connections.session("echo") as session:
            await session.call_tool("echo", {"text": text})
        return text

    plain_client = Client(client.service_client, namespace=client.namespace)
    steps: list[float] = []
    async with connections.serving():
        for run in range(runs + 1):
            task_queue = new_task_queue("bench-mcp-plain")
            async with Worker(
                plain_client,
                task_queue=task_queue,
                workflows=[PlainSteps],
                activities=[plain_model, echo_by_hand],
            ):
                STEP_CALLS.clear()
                await plain_client.execute_workflow(
                    PlainSteps.run, BENCH_STEPS, id=f"plain-mcp-{task_queue}", task_queue=task_queue
                )
            if run:  # the first is the warm-up
                steps += [b - a for a, b in itertools.pairwise(STEP_CALLS)][:BENCH_STEPS]
    return steps


def ratio(values: Sequence[float], baseline: Sequence[float]) -> str:
    return f"x{statistics.fmean(values) / statistics.fmean(baseline):.2f}"


async def main(runs: int, json_path: Path | None) -> None:
    configure_logging("ERROR")
    os.environ.setdefault("SMYTH_PAYLOAD_STORAGE", "off")
    port = free_port()
    http = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.mcp_overhead",
        "--serve",
        "http",
        "--port",
        str(port),
        stderr=asyncio.subprocess.DEVNULL,
    )
    env = await start_dev_environment()
    try:
        await _wait_listening(port)
        stdio = StdioServer([sys.executable, "-m", "bench.mcp_overhead", "--serve", "stdio"])
        configs: list[tuple[str, type[AgentWorkflow], dict[str, MCPServerConfig]]] = [
            ("@tool", StepBench, {}),
            ("MCP stdio", MCPBench, {"echo": stdio}),
            ("MCP HTTP", MCPBench, {"echo": HttpServer(f"http://127.0.0.1:{port}/mcp")}),
        ]
        print(f"{runs} runs x {BENCH_STEPS} calls per configuration (after a warm-up run)")
        baseline: tuple[list[float], list[float]] | None = None
        rows = []
        for name, agent, servers in configs:
            activities, steps = await measure(env.client, agent, servers, runs)
            baseline = baseline or (activities, steps)
            print(f"\n{name}")
            print(f"  tool activity {summary_ms(activities)}  {ratio(activities, baseline[0])}")
            print(f"  step          {summary_ms(steps)}  {ratio(steps, baseline[1])}")
            if servers:
                print(f"  direct call   {summary_ms(await direct(servers['echo']))}")
                by_hand = await measure_by_hand(env.client, servers["echo"], runs)
                print(
                    f"  by hand, step {summary_ms(by_hand)}  {ratio(steps, by_hand)} (p50 "
                    f"{statistics.median(steps) / statistics.median(by_hand):.2f}x)"
                )
                rows.append(
                    headline(
                        f"agent step with an {name} tool",
                        statistics.median(steps) * 1000,
                        statistics.median(by_hand) * 1000,
                        "ms",
                        "baseline: the loop by hand in plain temporalio, the same MCP server",
                        key=name.lower().replace(" ", "_") + "_step",
                    )
                )
        if json_path:
            write_json(json_path, "mcp_overhead", rows, {})
    finally:
        await env.shutdown()
        http.terminate()
        await http.wait()


def serve(transport: str, port: int) -> None:
    """Run the echo MCP server (the benchmark's own child processes)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations

    server: Any = MCPServer("echo", log_level="ERROR")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def echo(text: str) -> str:
        """Return the text.

        Args:
            text: What to return.
        """
        return text

    if transport == "stdio":
        server.run()
    else:
        server.run("streamable-http", host="127.0.0.1", port=port)


async def _wait_listening(port: int) -> None:
    for _ in range(200):
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.05)
            continue
        writer.close()
        return
    raise RuntimeError(f"the HTTP echo server never listened on {port}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.mcp_overhead", description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", type=Path, help="write the results here (bench.report)")
    parser.add_argument("--serve", choices=["stdio", "http"], help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.serve:
        serve(arguments.serve, arguments.port)
    else:
        asyncio.run(main(arguments.runs, arguments.json))
        sys.stdout.flush()
        os._exit(0)  # temporalio's threads can abort the interpreter's teardown
