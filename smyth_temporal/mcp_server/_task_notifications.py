"""Task status notifications of the tasks extension: ``subscriptions/listen`` with ``taskIds``.

A 2026-07-28 client that declared ``io.modelcontextprotocol/tasks`` may listen for
``notifications/tasks`` of the tasks it names instead of polling ``tasks/get``. The
acknowledgement lists the ids this server agreed to follow: the caller's tasks (another
tenant's, or an unknown id, is left out, as a poll would find no task). Each
notification carries what ``tasks/get`` would answer at that moment (``inputRequests``
while an approval waits, ``result`` once completed), sent when that answer changes; the
stream ends, gracefully, once every task it follows has ended.

Nothing is kept in this process: each task is followed by a long poll on its run's
history (one request open per task, answered when the run records anything), and its
state read again from Temporal then. A listen without ``taskIds`` is the SDK's own.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final, Literal, cast

import structlog
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.server.mcpserver import require_client_extension
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY
from mcp.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    SubscriptionFilter,
    SubscriptionsAcknowledgedNotification,
    SubscriptionsAcknowledgedNotificationParams,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryRequest
from temporalio.service import RPCError

from smyth_temporal.clients import AgentClient
from smyth_temporal.exceptions import SmythError
from smyth_temporal.mcp_server._tasks import checked_task_id
from smyth_temporal.mcp_server._tasks_extension import TASKS_EXTENSION, TasksExtension

__all__ = ["MAX_FOLLOWED_TASKS", "MAX_LISTENED_TASKS", "TaskNotifications"]

log = structlog.get_logger("smyth_temporal.mcp_server")

MAX_LISTENED_TASKS: Final = 100
"""The most task ids one ``subscriptions/listen`` may name (each holds a long poll)."""

MAX_FOLLOWED_TASKS: Final = 1_000
"""The most tasks one server follows for its listeners at once (as the SDK caps its own
listen streams): a listen beyond it is refused before its acknowledgement."""

_ENDED: Final = frozenset({"completed", "failed", "cancelled"})


class _TaskNotification(BaseModel):
    """``notifications/tasks``: the task's wire form as is (``ttlMs`` null included)."""

    method: Literal["notifications/tasks"] = "notifications/tasks"
    params: dict[str, Any]

    def model_dump(self, **_: Any) -> dict[str, Any]:
        # The session dumps notifications without nulls; a task's ``ttlMs`` is one.
        return {"method": self.method, "params": self.params}


class TaskNotifications(ServerMiddleware[Any]):
    """Serves ``subscriptions/listen`` requests that name ``taskIds``.

    Args:
        tasks: The extension whose ``tasks/get`` answers the notifications carry.
    """

    def __init__(self, tasks: TasksExtension) -> None:
        self.tasks = tasks
        self.following = 0
        """The tasks followed now, for every listener."""

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        params = ctx.params or {}
        wanted = params.get("notifications")
        if (
            ctx.method != "subscriptions/listen"
            or ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS
            or not isinstance(wanted, dict)
            or "taskIds" not in wanted
        ):
            return await call_next(ctx)
        require_client_extension(ctx, TASKS_EXTENSION)
        ids = _task_ids(wanted["taskIds"])
        client = self.tasks.runs.client(ctx)
        followed = [task_id for task_id in ids if await self._sees(client, task_id)]
        if self.following + len(followed) > MAX_FOLLOWED_TASKS:
            raise MCPError(INTERNAL_ERROR, "Subscription limit reached")
        self.following += len(followed)  # counted before the first await: no race past it
        try:
            meta = await self._serve(ctx, followed, client)
        finally:
            self.following -= len(followed)
        log.info("mcp.tasks_listen_ended", asked=len(ids), followed=len(followed))
        return {"_meta": meta, "resultType": "complete"}

    async def _serve(
        self, ctx: ServerRequestContext[Any, Any], followed: list[str], client: AgentClient
    ) -> dict[str, Any]:
        """Acknowledge ``followed``, then tell each change of each until all ended."""
        meta = {SUBSCRIPTION_ID_META_KEY: ctx.request_id}
        # Only the tasks are honored: the SDK's own kinds are another listen's.
        ack = SubscriptionsAcknowledgedNotificationParams(
            notifications=SubscriptionFilter.model_validate({"taskIds": followed}), _meta=meta
        )
        await ctx.session.send_notification(
            SubscriptionsAcknowledgedNotification(params=ack), related_request_id=ctx.request_id
        )
        sending = asyncio.Lock()

        async def send(task: dict[str, Any]) -> None:
            notification = _TaskNotification(params={**task, "_meta": meta})
            async with sending:
                await ctx.session.send_notification(
                    cast(Any, notification), related_request_id=ctx.request_id
                )

        async with asyncio.TaskGroup() as group:
            for task_id in followed:
                group.create_task(self._follow(client, task_id, send))
        return meta

    async def _sees(self, client: AgentClient, task_id: str) -> bool:
        try:
            await self.tasks.runs.execution(client, task_id)
        except SmythError:
            return False
        return True

    async def _follow(self, client: AgentClient, task_id: str, send: Any) -> None:
        """Notify each change of the task's answer, until it ended (or cannot be read)."""
        told: tuple[Any, ...] | None = None
        token = b""
        while True:
            try:
                task = await self.tasks.detailed(client, task_id)
            except (SmythError, RPCError, MCPError) as exc:
                log.warning("mcp.task_unfollowed", task_id=task_id, error=str(exc))
                return
            news = (
                task["status"],
                task.get("statusMessage"),
                sorted(task.get("inputRequests", {})),
            )
            if news != told:
                await send(task)
                told = news
            if task["status"] in _ENDED:
                return
            token = await _next_events(client, task_id, token)


async def _next_events(client: AgentClient, workflow_id: str, token: bytes) -> bytes:
    """Wait until the run records something after ``token`` (a long poll); the next token.

    An empty token reads the current run from its start (at once); a run that closed
    (continued as new, or ended) gives none, so the next call reads its successor.
    """
    temporal = client.client
    response = await temporal.workflow_service.get_workflow_execution_history(
        GetWorkflowExecutionHistoryRequest(
            namespace=temporal.namespace,
            execution=WorkflowExecution(workflow_id=workflow_id),
            next_page_token=token,
            wait_new_event=True,
            skip_archival=True,
        ),
        retry=True,
    )
    return response.next_page_token


def _task_ids(value: Any) -> list[str]:
    """The ids a listen names: strings, at most ``MAX_LISTENED_TASKS``, each a possible id."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise MCPError(INVALID_PARAMS, "notifications.taskIds must be a list of task ids")
    if len(value) > MAX_LISTENED_TASKS:
        raise MCPError(
            INVALID_PARAMS, f"notifications.taskIds names at most {MAX_LISTENED_TASKS} tasks"
        )
    return [checked_task_id(task_id) for task_id in dict.fromkeys(value)]
