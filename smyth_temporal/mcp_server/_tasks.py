"""MCP tasks (protocol revision 2025-11-25): a run started as a task, polled by its id.

A client that negotiated 2025-11-25 and calls ``start_run`` with task metadata
(``params.task``) gets a ``CreateTaskResult`` instead of the tool's answer: the task
whose id is the run's workflow id. It then polls ``tasks/get`` (``working``,
``input_required`` while an approval waits, then ``completed``, ``failed`` or
``cancelled``), reads the run's result with ``tasks/result`` (what ``run_result``
returns, once the run ended), lists its tenant's tasks with ``tasks/list`` and stops a
run with ``tasks/cancel`` (an interrupt: running tool calls finish, a pending approval
is withdrawn).

Nothing is kept in this process: every answer is read from Temporal through the
client acting for the caller's key, so a task outlives the server that created it,
and another tenant's task, like an unknown one, is "no task" (-32602).

An approval is decided with the ``decide_approval`` tool (``workflow_id`` = the task
id): the ``input_required`` status message names the request, its tool, arguments and
``arguments_sha256``. The protocol's own input channel (an elicitation sent while
``tasks/result`` waits) is not used: a decision is a key's, recorded under its name
and refused to a role that may not decide, which an elicitation answered by whoever
runs the client could not be.

The SDK (mcp 2.3) keeps the 2025-11-25 task types but dispatches none of their
methods and validates ``tools/call`` results as ``CallToolResult``; so this is a
``ServerMiddleware``, the tier above both. Other protocol versions pass through:
on them ``start_run`` answers as before, and ``tasks/*`` are "method not found".
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final, TypeVar

import structlog
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    CallToolResult,
    CancelTaskRequestParams,
    CancelTaskResult,
    CreateTaskResult,
    GetTaskPayloadRequestParams,
    GetTaskRequestParams,
    GetTaskResult,
    ListTasksResult,
    PaginatedRequestParams,
    ServerTasksCapability,
    ServerTasksRequestsCapability,
    Task,
    TaskMetadata,
    TasksCallCapability,
    TasksCancelCapability,
    TasksListCapability,
    TaskStatus,
    TasksToolsCapability,
    TextContent,
)
from pydantic import BaseModel, ValidationError
from temporalio.client import WorkflowExecution, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from smyth_temporal.clients import AgentClient, execution_page
from smyth_temporal.exceptions import (
    AccessDeniedError,
    AgentFailedError,
    AgentNotFoundError,
    SmythError,
)
from smyth_temporal.mcp_server._auth import Callers
from smyth_temporal.types.agent import AgentResult, AgentStatus
from smyth_temporal.types.visibility import PENDING_APPROVALS_ATTRIBUTE, STATUS_ATTRIBUTE

__all__ = [
    "POLL_INTERVAL_MS",
    "RELATED_TASK",
    "TASK_PROTOCOL_VERSIONS",
    "TASK_TOOL",
    "RunTasks",
    "TaskMiddleware",
    "checked_task_id",
    "iso",
    "parse_params",
    "protocol_errors",
    "task_status",
]

log = structlog.get_logger("smyth_temporal.mcp_server")

TASK_PROTOCOL_VERSIONS: Final = frozenset({"2025-11-25"})
"""The protocol versions whose tasks this server serves (2026-07-28 moved tasks into
an extension, ``io.modelcontextprotocol/tasks``, with another wire shape)."""

TASK_TOOL: Final = "start_run"
"""The tool a client may call as a task (``execution.taskSupport`` ``optional``)."""

RELATED_TASK: Final = "io.modelcontextprotocol/related-task"

POLL_INTERVAL_MS = 1000
"""How often a client is asked to poll a task that has not ended (milliseconds)."""
_MAX_TASK_ID = 1000
"""Temporal's longest workflow id (the server's default limit)."""
_LIST_PAGE = 50
_STATE_TIMEOUT = 5.0
"""Seconds a ``tasks/get`` of a waiting run waits for a worker to name the request."""
_CANCEL_WAIT = 30.0
"""Seconds ``tasks/cancel`` waits for the interrupted run to end before answering."""

_ENDED: Final[frozenset[TaskStatus]] = frozenset({"completed", "failed", "cancelled"})
_CAPABILITY = ServerTasksCapability(
    list=TasksListCapability(),
    cancel=TasksCancelCapability(),
    requests=ServerTasksRequestsCapability(tools=TasksToolsCapability(call=TasksCallCapability())),
).model_dump(by_alias=True, mode="json", exclude_none=True)
_TASK_PARAMS: Final[
    dict[str, type[GetTaskRequestParams | GetTaskPayloadRequestParams | CancelTaskRequestParams]]
] = {
    "tasks/get": GetTaskRequestParams,
    "tasks/result": GetTaskPayloadRequestParams,
    "tasks/cancel": CancelTaskRequestParams,
}
_METHODS: Final = frozenset({"tasks/list", *_TASK_PARAMS})


def task_status(status: AgentStatus | str | None, pending_approvals: int = 0) -> TaskStatus:
    """The task status of an agent status (``None``: not published yet, so working).

    Added in 0.9.0.
    """
    if status == "completed":
        return "completed"
    if status == "interrupted":
        return "cancelled"
    if status in ("failed", "max_steps", "invalid_output", "over_budget"):
        return "failed"
    if status == "awaiting_approval" or pending_approvals > 0:
        return "input_required"
    return "working"


class RunTasks:
    """Tasks read from Temporal: a task is a run of an agent served here, seen by a key.

    Shared by both revisions' tasks (2025-11-25 here, the 2026-07-28 extension in
    ``_tasks_extension``): nothing is kept in this process.

    Args:
        callers: Whom each request acts as (its key's client, or the server's).
        served: The agents' workflow type names: a run of another agent is no task here.
    """

    def __init__(self, callers: Callers, served: Sequence[str]) -> None:
        self.callers = callers
        self.served = list(dict.fromkeys(served))

    def client(self, ctx: ServerRequestContext[Any, Any]) -> AgentClient:
        """The client acting as the request's key (a revoked key: the protocol's refusal)."""
        headers: Mapping[str, str] | None = getattr(ctx.request, "headers", None)
        with protocol_errors(None):
            return self.callers.client(headers)

    async def execution(self, client: AgentClient, task_id: str) -> WorkflowExecution:
        """The run a task id names, if the caller sees it and it is an agent served here."""
        await client.identity.owns(task_id)  # another tenant's: AgentNotFoundError
        try:
            described = await client.client.get_workflow_handle(task_id).describe()
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                raise AgentNotFoundError(_no_task(task_id)) from exc
            raise
        if described.workflow_type not in self.served:
            raise AgentNotFoundError(_no_task(task_id))
        return described

    async def task(self, client: AgentClient, task_id: str, *, explain: bool = True) -> Task:
        """The task as its run stands now.

        ``explain``: a waiting task's status message names its requests (a query).
        """
        task, _ = await self.task_and_payload(client, task_id, explain=explain, failed=False)
        return task

    async def task_and_payload(
        self, client: AgentClient, task_id: str, *, explain: bool = True, failed: bool = True
    ) -> tuple[Task, CallToolResult | None]:
        """The task as its run stands now, and its result once it ended (else ``None``).

        One describe and one read of the end serve both (a task's notification carries
        its result: reading each twice added 5 ms to every notified end). ``failed``:
        read the end of a run that failed, was cancelled or timed out too (else its
        result is ``None``).
        """
        execution = await self.execution(client, task_id)
        task = _task_of(execution)
        if execution.status == WorkflowExecutionStatus.COMPLETED:
            # The agent's own end (an interrupt or a step limit also completes the run).
            end = await _end(client, task_id)
            if isinstance(end, AgentResult):
                status = task_status(end.status)
                message = end.output if status == "failed" else None
                task = task.model_copy(update={"status": status, "status_message": message})
            return task, _payload(task_id, end)
        if task.status == "input_required" and explain:
            task = task.model_copy(update={"status_message": await _waiting(client, task_id)})
        if failed and task.status in _ENDED:
            return task, _payload(task_id, await _end(client, task_id))
        return task, None

    async def payload(self, client: AgentClient, task_id: str) -> CallToolResult:
        """The run's result, once it ended (what ``run_result`` answers), as a tool's."""
        await self.execution(client, task_id)
        return _payload(task_id, await _end(client, task_id))

    async def list(self, client: AgentClient, params: PaginatedRequestParams) -> ListTasksResult:
        """One page of the caller's tenant's runs of the agents served, newest first."""
        client.identity.permit("read")
        token = _page_token(params.cursor)
        names = ", ".join(f"'{name}'" for name in self.served)
        query = f"WorkflowType IN ({names}) AND ExecutionStatus != 'ContinuedAsNew'"
        tenant = client.identity.tenant(None) if client.identity.principal else None
        try:
            page, following = await execution_page(
                client.client, query, tenant=tenant, page_size=_LIST_PAGE, token=token
            )
        except RPCError as exc:
            if not token:
                raise
            raise MCPError(INVALID_PARAMS, "the cursor is not one this server gave") from exc
        tasks = [_task_of(run) for run in page if await _sees(client, run)]
        cursor = base64.urlsafe_b64encode(following).decode() if following else None
        return ListTasksResult(tasks=tasks, next_cursor=cursor)

    async def cancel(self, client: AgentClient, task_id: str, *, wait: bool = True) -> Task:
        """Interrupt the run; its task once it ended (``wait``), or as it stands now.

        Raises:
            MCPError: The task has ended: nothing to cancel.
        """
        task = await self.task(client, task_id)
        if task.status in _ENDED:
            raise MCPError(
                INVALID_PARAMS, f"task {task_id!r} has ended ({task.status}): nothing to cancel"
            )
        await client.interrupt(task_id, reason="cancelled over MCP")
        log.info("mcp.task_cancelled", task_id=task_id)
        if not wait:
            return task
        with contextlib.suppress(TimeoutError, AgentFailedError):
            async with asyncio.timeout(_CANCEL_WAIT):
                await client.result(task_id)
        return await self.task(client, task_id)


class TaskMiddleware(ServerMiddleware[Any]):
    """Serves MCP tasks (2025-11-25) over the server's tools, from what Temporal holds.

    Args:
        runs: The tasks, read from Temporal.
    """

    def __init__(self, runs: RunTasks) -> None:
        self.runs = runs

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        method, params = ctx.method, ctx.params or {}
        if method == "initialize":
            # Negotiated by this very request: the answer says which version it is.
            return _advertised(method, await call_next(ctx))
        if ctx.protocol_version not in TASK_PROTOCOL_VERSIONS or ctx.request_id is None:
            return await call_next(ctx)
        if method == "tools/call" and params.get("task") is not None:
            return await self._create(ctx, call_next)
        if method not in _METHODS:
            return _advertised(method, await call_next(ctx))
        if method == "tasks/list":
            page = parse_params(PaginatedRequestParams, params)
            client = self.runs.client(ctx)
            with protocol_errors(None):
                return _dump(await self.runs.list(client, page))
        task_id = checked_task_id(parse_params(_TASK_PARAMS[method], params).task_id)
        client = self.runs.client(ctx)
        with protocol_errors(task_id):
            if method == "tasks/get":
                return _dump(GetTaskResult(**_fields(await self.runs.task(client, task_id))))
            if method == "tasks/result":
                return _dump(await self.runs.payload(client, task_id))
            return _dump(CancelTaskResult(**_fields(await self.runs.cancel(client, task_id))))

    async def _create(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """``start_run`` as a task: the tool starts the run; the answer is its task."""
        params = ctx.params or {}
        if params.get("name") != TASK_TOOL:
            raise MCPError(
                METHOD_NOT_FOUND,
                f"tool {params.get('name')!r} does not run as a task; {TASK_TOOL} does",
            )
        parse_params(TaskMetadata, params["task"])
        # Refused as tasks/cancel refuses it (-32600), not in the tool's words.
        client = self.runs.client(ctx)
        with protocol_errors(None):
            client.identity.permit("operate")
        answer = await call_next(ctx)  # the tool's checks, identity and refusals
        if not isinstance(answer, Mapping):
            return answer
        if answer.get("isError"):
            # Refused before anything started: no task to poll, so the protocol's error
            # (a client awaiting a CreateTaskResult reads no tool result), in its words.
            raise MCPError(INVALID_PARAMS, _text(answer))
        workflow_id = str(_structured(answer)["workflow_id"])
        now = iso(datetime.now(UTC))
        log.info("mcp.task_created", task_id=workflow_id)
        task = Task(
            task_id=workflow_id,
            status="working",
            created_at=now,
            last_updated_at=now,
            ttl=None,
            poll_interval=POLL_INTERVAL_MS,
        )
        return _dump(CreateTaskResult(task=task))


async def _end(client: AgentClient, task_id: str) -> AgentResult | AgentFailedError:
    """The run's result, or why it has none; waits for its end."""
    try:
        return await client.result(task_id)
    except AgentFailedError as exc:
        return exc


def _payload(task_id: str, end: AgentResult | AgentFailedError) -> CallToolResult:
    """A run's end as ``run_result`` answers it, as a tool's result."""
    meta = {RELATED_TASK: {"taskId": task_id}}
    if isinstance(end, AgentFailedError):
        return CallToolResult(
            content=[TextContent(type="text", text=str(end))], is_error=True, _meta=meta
        )
    body = {"finished": True, **end.model_dump(mode="json")}
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(body))],
        structured_content=body,
        is_error=task_status(end.status) == "failed",
        _meta=meta,
    )


def checked_task_id(task_id: str) -> str:
    """``task_id`` if Temporal could hold it; else the protocol's "invalid params"."""
    if not 0 < len(task_id) <= _MAX_TASK_ID:
        raise MCPError(INVALID_PARAMS, f"taskId must be 1 to {_MAX_TASK_ID} characters")
    return task_id


def _advertised(method: str, answer: HandlerResult) -> HandlerResult:
    """``initialize`` with the tasks capability; ``tools/list`` with ``start_run`` as optional."""
    if not isinstance(answer, dict):
        return answer
    if method == "initialize":
        answer.setdefault("capabilities", {})["tasks"] = _CAPABILITY
    elif method == "tools/list":
        for tool in answer.get("tools", []):
            if tool.get("name") == TASK_TOOL:
                tool["execution"] = {"taskSupport": "optional"}
    return answer


def _task_of(run: WorkflowExecution) -> Task:
    """A task from what the server lists of a run (its search attributes, no query)."""
    attributes = run.typed_search_attributes
    status = run.status or WorkflowExecutionStatus.RUNNING
    if status == WorkflowExecutionStatus.RUNNING:
        pending = attributes.get(PENDING_APPROVALS_ATTRIBUTE) or 0
        agent_status = attributes.get(STATUS_ATTRIBUTE)
        task: TaskStatus = "input_required" if pending else "working"
        message = agent_status
    elif status == WorkflowExecutionStatus.COMPLETED:
        task = task_status(attributes.get(STATUS_ATTRIBUTE) or "completed")
        message = None
    elif status == WorkflowExecutionStatus.CANCELED:
        task, message = "cancelled", None
    else:  # failed, terminated, timed out
        task, message = "failed", f"the run ended: {status.name.lower()}"
    created = run.start_time or datetime.now(UTC)
    return Task(
        task_id=run.id,
        status=task,
        status_message=message,
        created_at=iso(created),
        last_updated_at=iso(run.close_time or datetime.now(UTC)),
        ttl=None,
        poll_interval=None if task in _ENDED else POLL_INTERVAL_MS,
    )


async def _waiting(client: AgentClient, task_id: str) -> str:
    """What an ``input_required`` task waits for, and how to answer it."""
    try:
        state = await client.state(task_id, timeout=_STATE_TIMEOUT)
    except SmythError:
        return "waiting for approval (no worker answered to name the request)"
    requests = [
        f"request {r.id}: {r.tool} with {json.dumps(r.arguments, sort_keys=True)} "
        f"(arguments_sha256 {r.arguments_sha256})"
        for r in state.pending_approvals
    ]
    return (
        "waiting for approval of "
        + "; ".join(requests)
        + f". Decide with decide_approval (workflow_id {task_id!r}, the request_id)."
    )


async def _sees(client: AgentClient, run: WorkflowExecution) -> bool:
    chain = run.raw_info.first_run_id or run.run_id
    return await client.identity.sees(run.id, run.run_id, chain)


def _structured(answer: Mapping[str, Any]) -> Mapping[str, Any]:
    """The tool's JSON answer (structured, else its text)."""
    structured = answer.get("structuredContent")
    if isinstance(structured, Mapping):
        return structured
    loaded: Mapping[str, Any] = json.loads(_text(answer))
    return loaded


def _text(answer: Mapping[str, Any]) -> str:
    return "".join(block.get("text", "") for block in answer.get("content", []))


_M = TypeVar("_M", bound=BaseModel)


def parse_params(model: type[_M], params: Any) -> _M:
    """``params`` as ``model``, or the protocol's "invalid params" naming what is wrong."""
    try:
        return model.model_validate(params if params is not None else {}, by_name=False)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'params'}: {e['msg']}" for e in exc.errors()
        )
        raise MCPError(INVALID_PARAMS, f"invalid params: {problems}") from None


def _page_token(cursor: str | None) -> bytes:
    if not cursor:
        return b""
    try:
        return base64.urlsafe_b64decode(cursor.encode("ascii"))
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise MCPError(INVALID_PARAMS, "the cursor is not one this server gave") from None


def _fields(task: Task) -> dict[str, Any]:
    return {name: getattr(task, name) for name in Task.model_fields}


def _dump(result: BaseModel) -> dict[str, Any]:
    # ``ttl`` is required and may be null: only unset fields are left out.
    return result.model_dump(by_alias=True, mode="json", exclude_unset=True)


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _no_task(task_id: str) -> str:
    return f"no task with id {task_id!r}"


@contextlib.contextmanager
def protocol_errors(task_id: str | None) -> Iterator[None]:
    """What the client library refuses, as the protocol's errors, in its words.

    An unknown run and another tenant's are the same "no task" (-32602).
    """
    try:
        yield
    except AgentNotFoundError as exc:
        raise MCPError(INVALID_PARAMS, _no_task(task_id) if task_id else str(exc)) from exc
    except AccessDeniedError as exc:
        raise MCPError(INVALID_REQUEST, str(exc)) from exc
    except SmythError as exc:
        raise MCPError(INVALID_PARAMS, str(exc)) from exc
    except RPCError as exc:
        log.warning("mcp.task_server_error", error=str(exc))
        raise MCPError(INTERNAL_ERROR, f"Temporal refused: {exc.message}") from exc
