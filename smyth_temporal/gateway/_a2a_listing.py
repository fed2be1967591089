"""A2A ``ListTasks``: one page of the caller's tasks of an agent, from Temporal's visibility.

The tasks of an agent are its runs started over A2A (their workflow ids begin with
``a2a-{agent}-``, see ``task_id_for``) on the gateway's task queue, of the caller's
tenant, newest first. A page
is one page of Temporal's listing: the server narrows it by the ``SmythTenant`` search
attribute and every run is checked against the caller's tenant (``Identity.sees``),
as ``GET /v1/runs`` does, so another tenant's task is never named. ``page_token`` is
Temporal's own token, URL-safe; a forged one can only move where the page starts.

Filters the visibility store cannot apply (``contextId``, ``status``) are applied to
the page read: a page may hold fewer tasks than asked and still have a
``nextPageToken``; a client follows it until it is empty. ``totalSize`` is the number
of tasks on the page (counting a tenant's tasks would need a count query that the
server cannot narrow to runs without the tenant attribute).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fastapi import HTTPException
from temporalio.client import WorkflowExecution

from smyth_temporal.clients import AgentClient, execution_page
from smyth_temporal.gateway._a2a_tasks import TASK_ID_PREFIX
from smyth_temporal.gateway._listing import decode_token, encode_token, refused_token

try:
    from a2a.types.a2a_pb2 import ListTasksRequest
    from a2a.utils.constants import DEFAULT_LIST_TASKS_PAGE_SIZE
    from a2a.utils.errors import InvalidParamsError
    from a2a.utils.task import validate_history_length, validate_page_size
except ImportError as exc:  # pragma: no cover - the a2a extra brings it
    raise ImportError(
        "the gateway's A2A endpoint needs a2a-sdk: pip install 'smyth-temporal[a2a]'"
    ) from exc

__all__ = ["TaskPage", "task_page"]

_QUOTABLE = re.compile(r"[A-Za-z0-9._:/@-]+")


@dataclass(frozen=True)
class TaskPage:
    """The runs of one page of tasks (the caller's), and where the next page begins."""

    runs: list[WorkflowExecution]
    next_page_token: str
    page_size: int


def _query(agent: str, task_queue: str, params: ListTasksRequest) -> str:
    # Agent names are served names (``Gateway.agent``), workflow type names: no quotes.
    query = (
        f"WorkflowType = '{agent}' AND WorkflowId STARTS_WITH '{TASK_ID_PREFIX}{agent}-' "
        "AND ExecutionStatus != 'ContinuedAsNew'"
    )
    if _QUOTABLE.fullmatch(task_queue):
        # Runs on other queues are not this gateway's workers' (their state would wait
        # for a worker that may not exist).
        query += f" AND TaskQueue = '{task_queue}'"
    if params.HasField("status_timestamp_after"):
        # A task whose status changed since then still runs or ended since then.
        after = params.status_timestamp_after.ToDatetime().strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        query += f" AND (ExecutionStatus = 'Running' OR CloseTime > '{after}')"
    return query


async def task_page(client: AgentClient, agent: str, params: ListTasksRequest) -> TaskPage:
    """The page of ``agent``'s tasks ``params`` asks for, as the caller may see them.

    Raises:
        InvalidParamsError: A page size out of 1..100, a negative history length, or a
            page token this gateway did not give.
    """
    validate_history_length(params)
    size = params.page_size if params.HasField("page_size") else DEFAULT_LIST_TASKS_PAGE_SIZE
    validate_page_size(size)
    tenant = client.identity.tenant(None)
    try:
        token = decode_token(params.page_token)
        async with refused_token(token):
            page, following = await execution_page(
                client.client,
                _query(agent, client.task_queue, params),
                tenant=tenant,
                page_size=size,
                token=token,
            )
    except HTTPException as exc:  # the listing's refusal of a token, in A2A's words
        raise InvalidParamsError(f"invalid pageToken: {exc.detail}") from None
    runs = [execution for execution in page if await _owned(client, execution)]
    return TaskPage(runs=runs, next_page_token=encode_token(following) or "", page_size=size)


async def _owned(client: AgentClient, execution: WorkflowExecution) -> bool:
    chain = execution.raw_info.first_run_id or execution.run_id
    return await client.identity.sees(execution.id, execution.run_id, chain)
