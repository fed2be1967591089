"""What an MCP task adds to a one-step run, next to ``AgentClient`` and the plain tools.

From the repository root::

    .venv/bin/python -m bench.mcp_tasks [--rounds 30] [--json PATH]

One dev server, one worker in a process of its own serving ``StepBench``
(``bench._step_worker``: a scripted model that answers at once, so a run is one step),
and the MCP server of ``smyth mcp serve`` in this process, to a 2025-11-25 client over
the SDK's in-memory transport (what is measured is the server's work, not a transport).
The paths take turns, one run each per round, in an order that rotates, after an
untimed round:

- ``AgentClient``: ``start`` then ``result`` (the baseline);
- plain tools: ``start_run`` then ``run_result`` (which waits for the end);
- task: ``start_run`` as a task, then ``tasks/result`` (which waits for the end);
- task, polled: ``tasks/get`` every 50 ms until ``completed``, then ``tasks/result``;
- task (2026), polled: a 2026-07-28 client that declares the tasks extension
  (``io.modelcontextprotocol/tasks``) calls ``start_run`` and gets the task handle, then
  ``tasks/get`` every 50 ms until ``completed`` (the result comes inlined);
- task (2026), notified: the same handle, then ``subscriptions/listen`` for its id: the
  server notifies each change (``notifications/tasks``, the result inlined in the
  ``completed`` one) and ends the listen once the task ended.

Per path: p50 and p95 of start to result, and the p50's ratio to the baseline. The
guarded rows are the ways a client learns of the end as it happens (``tasks/result``,
the notifications); a polled task's round trip is set by the client's interval (half
of it, on average, comes after the end).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    CreateTaskResult,
    GetTaskPayloadRequest,
    GetTaskPayloadRequestParams,
    GetTaskRequest,
    GetTaskRequestParams,
    GetTaskResult,
    Request,
    RequestParams,
    Result,
    TaskMetadata,
)

from bench._common import percentile
from bench._results import headline, write_json
from bench._served import launch
from bench._step_worker import step_worker_process
from smyth_temporal import AgentClient, configure_logging
from smyth_temporal.mcp_server import agents_mcp_server
from smyth_temporal.testing import new_task_queue, start_dev_environment

GOAL = 1.1
"""A task's round trip over ``AgentClient`` (issue 27)."""

AGENT = "StepBench"
"""``bench._common``'s agent; its model answers at once, so a run is one step."""


Path_ = Callable[[], Awaitable[None]]


class _Handle(Result):
    """The tasks extension's ``CreateTaskResult`` (``resultType: "task"``), as a client reads it."""

    result_type: Literal["task"] = "task"
    task_id: str


class _Task(Result):
    """``tasks/get``'s answer: what the bench needs of it."""

    status: str


class _TaskId(RequestParams):
    task_id: str


class _GetTask(Request[_TaskId, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: _TaskId
    name_param = "taskId"


class _Listen(RequestParams):
    notifications: dict[str, list[str]]


class _ListenRequest(Request[_Listen, Literal["subscriptions/listen"]]):
    method: Literal["subscriptions/listen"] = "subscriptions/listen"
    params: _Listen


class _Listened(Result):
    """The listen's end: the server ended it once every task it followed had ended."""


class _Tasks(ClientExtension):
    """Declares the tasks extension; the bench drives the handle itself."""

    identifier = "io.modelcontextprotocol/tasks"

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=_Handle, resolve=self._unused)]

    async def _unused(self, handle: _Handle, ctx: ClaimContext) -> CallToolResult:
        raise NotImplementedError("the bench polls the task itself")


def paths(agents: AgentClient, mcp: Client, modern: Client) -> dict[str, Path_]:
    async def baseline() -> None:
        handle = await agents.start(AGENT, "Say done.")
        await agents.result(handle.id)

    async def plain() -> None:
        started = await mcp.call_tool("start_run", {"agent": AGENT, "prompt": "Say done."})
        workflow_id = (started.structured_content or {})["workflow_id"]
        await mcp.call_tool("run_result", {"workflow_id": workflow_id})

    async def create() -> str:
        params = CallToolRequestParams(
            name="start_run",
            arguments={"agent": AGENT, "prompt": "Say done."},
            task=TaskMetadata(),
        )
        # mcp 2.3's client validates tools/call answers as CallToolResult: the task's
        # answer goes through the session's dispatcher (see tests/mcp/test_mcp_tasks.py).
        answer: dict[str, Any] = await mcp.session._dispatcher.send_raw_request(
            "tools/call", params.model_dump(by_alias=True, mode="json")
        )
        return CreateTaskResult.model_validate(answer, by_name=False).task.task_id

    async def payload(task_id: str) -> None:
        request = GetTaskPayloadRequest(params=GetTaskPayloadRequestParams(task_id=task_id))
        await mcp.session.send_request(request, CallToolResult)

    async def task() -> None:
        await payload(await create())

    async def task_polled() -> None:
        task_id = await create()
        request = GetTaskRequest(params=GetTaskRequestParams(task_id=task_id))
        while (await mcp.session.send_request(request, GetTaskResult)).status != "completed":
            await asyncio.sleep(0.05)
        await payload(task_id)

    async def extension_polled() -> None:
        arguments = {"agent": AGENT, "prompt": "Say done."}
        handle = await modern.session.call_tool("start_run", arguments, allow_claimed=True)
        assert isinstance(handle, _Handle), handle
        request = _GetTask(params=_TaskId(task_id=handle.task_id))
        while (await modern.session.send_request(request, _Task)).status != "completed":
            await asyncio.sleep(0.05)

    async def extension_notified() -> None:
        arguments = {"agent": AGENT, "prompt": "Say done."}
        handle = await modern.session.call_tool("start_run", arguments, allow_claimed=True)
        assert isinstance(handle, _Handle), handle
        listen = _Listen(notifications={"taskIds": [handle.task_id]})
        await modern.session.send_request(_ListenRequest(params=listen), _Listened)

    return {
        "AgentClient": baseline,
        "plain tools": plain,
        "task": task,
        "task, polled": task_polled,
        "task (2026), polled": extension_polled,
        "task (2026), notified": extension_notified,
    }


async def main(rounds: int, json_path: Path | None) -> None:
    configure_logging("ERROR")
    os.environ.setdefault("SMYTH_PAYLOAD_STORAGE", "off")
    env = await start_dev_environment()
    queue = new_task_queue()
    try:
        agents = AgentClient(env.client, task_queue=queue)
        address = env.client.service_client.config.target_host
        async with (
            step_worker_process(address, queue),
            Client(agents_mcp_server(agents, [AGENT]), mode="legacy") as mcp,
            Client(agents_mcp_server(agents, [AGENT]), extensions=[_Tasks()]) as modern,
        ):
            ways = paths(agents, mcp, modern)
            times: dict[str, list[float]] = {name: [] for name in ways}
            names = list(ways)
            for round_ in range(rounds + 1):
                # Each round in another order: a path is not always the one after the same.
                shift = round_ % len(names)
                for name in names[shift:] + names[:shift]:
                    way = ways[name]
                    began = time.perf_counter()
                    await way()
                    if round_:  # the first round is untimed
                        times[name].append(time.perf_counter() - began)
        base = percentile(times["AgentClient"], 0.5)
        print(f"{rounds} one-step runs per path (after an untimed round), start to result")
        rows = []
        for name, measured in times.items():
            p50, p95 = percentile(measured, 0.5), percentile(measured, 0.95)
            print(
                f"  {name:<19} p50 {p50 * 1000:7.1f} ms  p95 {p95 * 1000:7.1f} ms  "
                f"{p50 / base:.2f}x"
            )
            rows.append(
                headline(
                    f"one-step run, {name}",
                    p50 * 1000,
                    base * 1000,
                    "ms",
                    "baseline: AgentClient.start + result, same dev server and worker",
                    key="mcp_" + re.sub(r"\W+", "_", name).strip("_").lower(),
                )
            )
        print(f"goal: a task's round trip within {GOAL}x of AgentClient's")
        if json_path:
            write_json(json_path, "mcp_tasks", rows, {})
    finally:
        await env.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--json", type=Path, default=None)
    arguments = parser.parse_args()
    launch(lambda: main(arguments.rounds, arguments.json))
