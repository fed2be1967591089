"""``describe_run``: the one raw ``DescribeWorkflowExecution`` by workflow id.

The SDK's ``WorkflowHandle.describe`` cannot describe a paused run (temporalio 1.35
predates status 8, ``PAUSED``), so the clients read runs through the raw workflow
service, here.
"""

from __future__ import annotations

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflow.v1 import WorkflowExecutionInfo
from temporalio.api.workflowservice.v1 import DescribeWorkflowExecutionRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

__all__ = ["describe_run"]

# What the server answers for an id that names no run: NOT_FOUND, or INVALID_ARGUMENT
# for an id it cannot even look up (empty, too long).
_NO_RUN = frozenset({RPCStatusCode.NOT_FOUND, RPCStatusCode.INVALID_ARGUMENT})


async def describe_run(client: Client, workflow_id: str) -> WorkflowExecutionInfo | None:
    """What the server knows of the run ``workflow_id`` names now (``None``: no such run).

    Raises:
        temporalio.service.RPCError: The server failed otherwise (unavailable, ...).
    """
    try:
        response = await client.workflow_service.describe_workflow_execution(
            DescribeWorkflowExecutionRequest(
                namespace=client.namespace, execution=WorkflowExecution(workflow_id=workflow_id)
            )
        )
    except RPCError as exc:
        if exc.status in _NO_RUN:
            return None
        raise
    return response.workflow_execution_info
