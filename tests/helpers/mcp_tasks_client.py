"""A client side of MCP's tasks extension (2026-07-28, ``io.modelcontextprotocol/tasks``).

Written from the extension's specification, not from the server's code, on the mcp
SDK's own extension surface: ``TasksClient`` declares the extension on every request
and claims the ``resultType: "task"`` result of ``tools/call``. ``Client.call_tool``
then resolves a task as a host would (polls ``tasks/get``, hands each new input request
to the client's elicitation callback, answers with ``tasks/update``, returns the final
``CallToolResult``); ``session.call_tool(..., allow_claimed=True)`` returns the handle
for a test to drive by hand with ``get_task``, ``update_task`` and ``cancel_task``, or to
follow by the ``notifications/tasks`` a ``listen_to_tasks`` brings (``TasksClient.told``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Literal

from mcp.client.extension import ClaimContext, ClientExtension, NotificationBinding, ResultClaim
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INTERNAL_ERROR,
    CallToolResult,
    ElicitRequest,
    ElicitResult,
    ErrorData,
    Request,
    RequestParams,
    Result,
    TextContent,
)

TASKS = "io.modelcontextprotocol/tasks"


class TaskHandle(Result):
    """``CreateTaskResult``: a task in lieu of the tool's result."""

    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None


class DetailedTask(Result):
    """``GetTaskResult``: the task with what its status carries."""

    task_id: str
    status: Literal["working", "input_required", "completed", "failed", "cancelled"]
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None
    input_requests: dict[str, ElicitRequest] | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class Ack(Result):
    """The empty acknowledgement of ``tasks/update`` and ``tasks/cancel``."""

    result_type: str | None = None


class TaskIdParams(RequestParams):
    task_id: str


class UpdateTaskParams(TaskIdParams):
    input_responses: dict[str, ElicitResult]


class GetTask(Request[TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskIdParams
    name_param = "taskId"


class UpdateTask(Request[UpdateTaskParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    params: UpdateTaskParams
    name_param = "taskId"


class CancelTask(Request[TaskIdParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskIdParams
    name_param = "taskId"


async def get_task(session: ClientSession, task_id: str) -> DetailedTask:
    return await session.send_request(GetTask(params=TaskIdParams(task_id=task_id)), DetailedTask)


async def update_task(
    session: ClientSession, task_id: str, answers: dict[str, ElicitResult]
) -> Ack:
    params = UpdateTaskParams(task_id=task_id, input_responses=answers)
    return await session.send_request(UpdateTask(params=params), Ack)


async def cancel_task(session: ClientSession, task_id: str) -> Ack:
    return await session.send_request(CancelTask(params=TaskIdParams(task_id=task_id)), Ack)


async def send_raw(session: ClientSession, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A request as given (stamped with the 2026-07-28 envelope), its answer unvalidated.

    For the malformed requests the types would not build; the session's own stamp and
    dispatcher (private to the SDK) are what every request goes through.
    """
    data: dict[str, Any] = {"method": method, "params": dict(params)}
    options: dict[str, Any] = {}
    session._stamp(data, options)  # type: ignore[arg-type]
    return await session._dispatcher.send_raw_request(method, data["params"], options)  # type: ignore[arg-type]


async def listen_to_tasks(session: ClientSession, *task_ids: str) -> dict[str, Any]:
    """``subscriptions/listen`` for ``task_ids``: its result, once the server ended it."""
    return await send_raw(
        session, "subscriptions/listen", {"notifications": {"taskIds": list(task_ids)}}
    )


async def poll(session: ClientSession, task_id: str, *statuses: str) -> DetailedTask:
    """``tasks/get`` until the task has one of ``statuses``, at the interval it asks for."""
    while (task := await get_task(session, task_id)).status not in statuses:
        assert task.status in ("working", "input_required"), task
        await asyncio.sleep((task.poll_interval_ms or 100) / 1000)
    return task


class TasksClient(ClientExtension):
    """Declares the extension and resolves a task handle into the tool's result.

    ``told`` receives the ``notifications/tasks`` a listen for task ids brings.
    """

    identifier = TASKS

    def __init__(self) -> None:
        self.told: asyncio.Queue[DetailedTask] = asyncio.Queue()

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=TaskHandle, resolve=self._resolve)]

    def notifications(self) -> Sequence[NotificationBinding[Any]]:
        return [
            NotificationBinding(
                method="notifications/tasks", params_type=DetailedTask, handler=self._told
            )
        ]

    async def _told(self, task: DetailedTask) -> None:
        await self.told.put(task)

    async def _resolve(self, handle: TaskHandle, ctx: ClaimContext) -> CallToolResult:
        session, answered = ctx.session, set[str]()
        while True:
            task = await get_task(session, handle.task_id)
            if task.status == "completed":
                return CallToolResult.model_validate(task.result, by_name=False)
            if task.status == "cancelled":
                text = TextContent(type="text", text=task.status_message or "cancelled")
                return CallToolResult(content=[text], is_error=True)
            if task.status == "failed":
                error = task.error or {"code": INTERNAL_ERROR, "message": "failed"}
                raise MCPError.from_error_data(ErrorData.model_validate(error))
            for key, request in (task.input_requests or {}).items():
                if key in answered:  # the spec: never show the same request twice
                    continue
                answered.add(key)
                context = ClientRequestContext(session=session, request_id=key)
                answer = await session.dispatch_input_request(context, request)
                if isinstance(answer, ElicitResult):
                    await update_task(session, task.task_id, {key: answer})
            await asyncio.sleep((task.poll_interval_ms or 100) / 1000)
