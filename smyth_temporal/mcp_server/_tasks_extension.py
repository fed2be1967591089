"""MCP tasks of the 2026-07-28 revision: the ``io.modelcontextprotocol/tasks`` extension.

A client that declares the extension in a request's capabilities and calls
``start_run`` gets a task handle (``resultType: "task"``) instead of the tool's answer:
the task whose id is the run's workflow id. It then polls ``tasks/get``: ``working``;
``input_required`` while an approval waits, with one form elicitation per pending
request in ``inputRequests``; ``completed`` with the tool result inlined (what
``run_result`` answers; a run that failed is a result with ``isError``, as the
extension wants it, not a protocol error); ``cancelled`` after an interrupt. It answers
an approval with ``tasks/update`` (``inputResponses``: accept with ``approve`` true or
false, decline to reject, cancel to leave it pending) and stops a run with
``tasks/cancel`` (an empty acknowledgement; the interrupt ends it soon after).

As for 2025-11-25 tasks (``_tasks``), nothing is kept in this process: every answer is
read from Temporal through the client acting for the request's key, so another tenant's
task, like an unknown one, is "no task" (-32602), and a decision sent with
``tasks/update`` is the key's, recorded under its name and refused to a role that may
not decide, exactly as ``decide_approval`` does it.

An elicitation's key names the request, the votes it had and the hash of the arguments
shown (``<request id>/<votes>/<arguments_sha256>``): a key is never asked twice (a
request still short of its quorum after a vote is asked again under a new key), and an
approval applies only to the arguments the person saw. Answers to keys that are not
outstanding are ignored, as the extension asks.

A client that did not declare the extension gets the plain tools; its ``tasks/*``
requests are refused with -32021 (missing required client capability). Instead of
polling, a client may listen for its tasks' status notifications (``_task_notifications``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final, Literal

import structlog
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import require_client_extension
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    RequestParams,
    Result,
    TaskStatus,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel

from smyth_temporal.clients import AgentClient
from smyth_temporal.exceptions import SmythError
from smyth_temporal.mcp_server._tasks import (
    POLL_INTERVAL_MS,
    TASK_TOOL,
    RunTasks,
    checked_task_id,
    iso,
    protocol_errors,
)
from smyth_temporal.types.approvals import ApprovalRequest

__all__ = ["TASKS_EXTENSION", "TasksExtension"]

log = structlog.get_logger("smyth_temporal.mcp_server")

TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
"""The extension's identifier, in the client's and the server's capabilities."""

_VERSIONS: Final = frozenset(MODERN_PROTOCOL_VERSIONS)
_STATE_TIMEOUT = 5.0
"""Seconds a read of a waiting run waits for a worker to name its requests."""
_ENDED: Final[frozenset[TaskStatus]] = frozenset({"completed", "failed", "cancelled"})
_DECISION_SCHEMA: Final = {
    "type": "object",
    "properties": {
        "approve": {
            "type": "boolean",
            "title": "Approve",
            "description": "True lets the call run; false refuses it (the agent is told).",
        },
        "comment": {
            "type": "string",
            "title": "Comment",
            "description": "Why (kept in the audit trail; the agent sees it on a refusal).",
        },
    },
    "required": ["approve"],
}


class ExtensionTask(BaseModel):
    """A task as the extension words it (``ttlMs``, ``pollIntervalMs``)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    task_id: str
    """The run's workflow id."""
    status: TaskStatus
    """Where the run is."""
    status_message: str | None = None
    """What it waits for, or how it ended."""
    created_at: str
    """When the run started (ISO 8601)."""
    last_updated_at: str
    """When it ended, or now (ISO 8601)."""
    ttl_ms: int | None = None
    """``None``: kept as long as Temporal keeps the run."""
    poll_interval_ms: int | None = None
    """How often to poll a task that has not ended."""


class CreateTaskResult(Result, ExtensionTask):
    """The handle ``start_run`` answers with instead of its result."""

    result_type: Literal["task"] = "task"
    """The extension's discriminator."""


class TaskIdParams(RequestParams):
    """``tasks/get`` and ``tasks/cancel``: the task named."""

    task_id: str
    """The task's id (the run's workflow id)."""


class UpdateTaskParams(TaskIdParams):
    """``tasks/update``: answers to the elicitations a task's ``inputRequests`` showed."""

    input_responses: dict[str, Any]
    """By elicitation key; read as ``ElicitResult`` for the keys still outstanding."""


class TasksExtension(Extension):
    """Serves the tasks extension over ``start_run``, from what Temporal holds.

    Args:
        runs: The tasks, read from Temporal (shared with the 2025-11-25 tasks).
    """

    identifier = TASKS_EXTENSION

    def __init__(self, runs: RunTasks) -> None:
        self.runs = runs

    def methods(self) -> Sequence[MethodBinding]:
        """``tasks/get``, ``tasks/update`` and ``tasks/cancel``, on 2026-07-28 only."""
        return (
            MethodBinding("tasks/get", TaskIdParams, self._get, _VERSIONS),
            MethodBinding("tasks/update", UpdateTaskParams, self._update, _VERSIONS),
            MethodBinding("tasks/cancel", TaskIdParams, self._cancel, _VERSIONS),
        )

    async def intercept_tool_call(
        self,
        params: CallToolRequestParams,
        ctx: ServerRequestContext[Any, Any],
        call_next: CallNext,
    ) -> HandlerResult:
        """``start_run`` from a client that declared the extension: the task, not the answer.

        A refusal (an unknown agent, a key that may not start runs) stays the tool's
        error: nothing started, so there is no task to poll.
        """
        if params.name != TASK_TOOL or ctx.protocol_version not in _VERSIONS or not _declared(ctx):
            return await call_next(ctx)
        answer = await call_next(ctx)
        if not isinstance(answer, CallToolResult) or answer.is_error:
            return answer
        workflow_id = str((answer.structured_content or {})["workflow_id"])
        now = iso(datetime.now(UTC))
        log.info("mcp.task_created", task_id=workflow_id, revision="2026-07-28")
        return _wire(
            CreateTaskResult(
                task_id=workflow_id,
                status="working",
                created_at=now,
                last_updated_at=now,
                ttl_ms=None,
                poll_interval_ms=POLL_INTERVAL_MS,
            )
        )

    async def _get(
        self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams
    ) -> HandlerResult:
        task_id, client = self._open(ctx, params)
        with protocol_errors(task_id):
            return await self.detailed(client, task_id)

    async def _update(
        self, ctx: ServerRequestContext[Any, Any], params: UpdateTaskParams
    ) -> HandlerResult:
        task_id, client = self._open(ctx, params)
        with protocol_errors(task_id):
            await self.runs.execution(client, task_id)  # another tenant's: no task
            client.identity.permit("approve")
            outstanding = await _outstanding(client, task_id)
            # Every answer is read before any is applied: a malformed one decides nothing.
            decisions = [
                (outstanding[key], _decision(key, answer))
                for key, answer in params.input_responses.items()
                if key in outstanding
            ]
            for request, decision in decisions:
                if decision is not None:
                    await _apply(client, task_id, request, decision)
        log.info(
            "mcp.task_updated",
            task_id=task_id,
            answered=len(params.input_responses),
            decided=sum(decision is not None for _, decision in decisions),
        )
        return {"resultType": "complete"}

    async def _cancel(
        self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams
    ) -> HandlerResult:
        task_id, client = self._open(ctx, params)
        with protocol_errors(task_id):
            # Acknowledged once asked: the interrupt ends the run soon after.
            await self.runs.cancel(client, task_id, wait=False)
        return {"resultType": "complete"}

    def _open(
        self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams
    ) -> tuple[str, AgentClient]:
        """The task id asked about and the client acting as the request's key.

        Raises:
            MCPError: The client did not declare the extension (-32021), or the id
                could name no run (-32602).
        """
        require_client_extension(ctx, TASKS_EXTENSION)
        return checked_task_id(params.task_id), self.runs.client(ctx)

    async def detailed(self, client: AgentClient, task_id: str) -> dict[str, Any]:
        """The task with what its status carries: its input requests, or its result."""
        task, payload = await self.runs.task_and_payload(client, task_id, explain=False)
        wire = ExtensionTask(
            task_id=task.task_id,
            status=task.status,
            status_message=task.status_message,
            created_at=task.created_at,
            last_updated_at=task.last_updated_at,
            ttl_ms=None,
            poll_interval_ms=None if task.status in _ENDED else POLL_INTERVAL_MS,
        )
        extra: dict[str, Any] = {}
        if task.status == "input_required":
            try:
                outstanding = await _outstanding(client, task_id)
            except SmythError:
                outstanding = {}
                wire.status_message = "waiting for approval (no worker answered to name it)"
            if outstanding:
                extra["inputRequests"] = {
                    key: _elicitation(request).model_dump(by_alias=True, mode="json")
                    for key, request in outstanding.items()
                }
                wire.status_message = f"waiting for approval of {len(outstanding)} tool call(s)"
            else:  # decided meanwhile, or not named: nothing to answer yet
                wire.status = "working"
        elif task.status in ("completed", "failed"):
            # The extension's "failed" is a JSON-RPC error; a run's end is a tool result.
            assert payload is not None  # read with the task
            wire.status = "completed"
            extra["result"] = payload.model_dump(by_alias=True, mode="json", exclude_none=True)
        return {**_wire(wire), **extra}


def _declared(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether this request's client declared the extension."""
    capabilities = ctx.session.client_capabilities
    return bool(
        capabilities and capabilities.extensions and TASKS_EXTENSION in capabilities.extensions
    )


async def _outstanding(client: AgentClient, task_id: str) -> dict[str, ApprovalRequest]:
    """The run's pending approval requests, by the elicitation key each is asked under."""
    state = await client.state(task_id, timeout=_STATE_TIMEOUT)
    return {_key(request): request for request in state.pending_approvals}


def _key(request: ApprovalRequest) -> str:
    return f"{request.id}/{len(request.votes)}/{request.arguments_sha256}"


def _elicitation(request: ApprovalRequest) -> ElicitRequest:
    """The form asking a person to decide ``request``, naming what would run."""
    arguments = json.dumps(request.arguments, sort_keys=True)
    message = (
        f"Approve {request.tool} with {arguments}? (request {request.id}, step "
        f"{request.step}, arguments_sha256 {request.arguments_sha256})"
    )
    if request.reason:
        message += f" The agent said: {request.reason}"
    return ElicitRequest(
        params=ElicitRequestFormParams(message=message, requested_schema=_DECISION_SCHEMA)
    )


def _decision(key: str, answer: Any) -> tuple[bool, str | None] | None:
    """``(approve, comment)`` from an answer; ``None`` for a dismissed form.

    Raises:
        MCPError: The answer is not an elicitation result, or accepts without saying
            whether to approve (-32602).
    """
    try:
        result = ElicitResult.model_validate(answer, by_name=False)
    except ValidationError:
        raise MCPError(
            INVALID_PARAMS, f"inputResponses[{key!r}] is not an elicitation result"
        ) from None
    content: Mapping[str, Any] = result.content or {}
    comment = content.get("comment")
    comment = comment if isinstance(comment, str) and comment else None
    if result.action == "cancel":
        return None
    if result.action == "decline":
        return False, comment
    approve = content.get("approve")
    if not isinstance(approve, bool):
        raise MCPError(
            INVALID_PARAMS,
            f"inputResponses[{key!r}] accepts without content.approve true or false",
        )
    return approve, comment


async def _apply(
    client: AgentClient,
    task_id: str,
    request: ApprovalRequest,
    decision: tuple[bool, str | None],
) -> None:
    """Decide ``request`` as the key (its name is recorded, whatever ``by`` says)."""
    approve, comment = decision
    if approve:
        await client.approve(
            task_id,
            request.id,
            by="mcp",
            comment=comment,
            arguments_sha256=request.arguments_sha256,
        )
    else:
        await client.reject(task_id, request.id, by="mcp", comment=comment)


def _wire(task: ExtensionTask) -> dict[str, Any]:
    """The task's wire form: ``ttlMs`` always (null: unlimited), ``resultType`` set."""
    dumped = task.model_dump(by_alias=True, mode="json", exclude_none=True)
    dumped["ttlMs"] = task.ttl_ms
    dumped["resultType"] = getattr(task, "result_type", "complete")
    return dumped
