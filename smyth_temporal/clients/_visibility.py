"""Listing workflow executions, paused ones included.

temporalio 1.35's ``Client.list_workflows`` cannot convert the ``PAUSED`` execution
status (Workflow Pause is newer than the SDK): one paused run anywhere in the
namespace makes the whole listing raise ``ValueError: 8 is not a valid
WorkflowExecutionStatus``. ``executions`` pages through the raw visibility API
instead and shows a paused run as running (which it is, to everything but the task
dispatcher); ``is_paused`` reads the real status from ``raw_info``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator

from temporalio.api.enums.v1 import WorkflowExecutionStatus as RawStatus
from temporalio.api.workflow.v1 import WorkflowExecutionInfo
from temporalio.api.workflowservice.v1 import ListWorkflowExecutionsRequest
from temporalio.client import Client, WorkflowExecution, WorkflowExecutionStatus

__all__ = ["PAUSED", "executions", "is_paused_execution"]

PAUSED = RawStatus.WORKFLOW_EXECUTION_STATUS_PAUSED
"""The raw status of a paused run (not in the SDK's ``WorkflowExecutionStatus``)."""

_PAGE = 500
_KNOWN = frozenset(int(status) for status in WorkflowExecutionStatus)


async def executions(
    client: Client, query: str = "", *, limit: int | None = None
) -> AsyncIterator[WorkflowExecution]:
    """The executions ``query`` matches (a visibility query), as ``list_workflows`` gives them.

    Args:
        client: A client of the namespace.
        query: A visibility query (``""``: every execution).
        limit: At most this many (``None``: all).

    Added in 0.5.0.
    """
    token = b""
    given = 0
    while True:
        response = await client.workflow_service.list_workflow_executions(
            ListWorkflowExecutionsRequest(
                namespace=client.namespace, query=query, page_size=_PAGE, next_page_token=token
            ),
            retry=True,
        )
        for info in response.executions:
            if limit is not None and given >= limit:
                return
            given += 1
            yield _execution(client, info)
        token = response.next_page_token
        if not token:
            return


def is_paused_execution(execution: WorkflowExecution) -> bool:
    """Whether a listed execution was paused when it was listed."""
    return execution.raw_info.status == PAUSED


def _execution(client: Client, info: WorkflowExecutionInfo) -> WorkflowExecution:
    if info.status in _KNOWN:
        return WorkflowExecution._from_raw_info(info, client.namespace, client.data_converter)
    readable = WorkflowExecutionInfo()
    readable.CopyFrom(info)
    readable.status = RawStatus.WORKFLOW_EXECUTION_STATUS_RUNNING
    execution = WorkflowExecution._from_raw_info(readable, client.namespace, client.data_converter)
    # The real status stays readable (``is_paused_execution``).
    return dataclasses.replace(execution, raw_info=info)
