"""``TenantResolver``: which tenant an agent run belongs to, read from its input."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import structlog
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType
from temporalio.api.workflowservice.v1 import DescribeWorkflowExecutionRequest
from temporalio.client import Client, WorkflowHandle
from temporalio.service import RPCError, RPCStatusCode

from smyth_temporal.exceptions import AgentNotFoundError
from smyth_temporal.types.agent import AgentInput

__all__ = ["TenantResolver"]

log = structlog.get_logger("smyth_temporal.clients")

_TENANT_CACHE_SIZE = 10_000


class TenantResolver:
    """The tenant of agent runs, for interfaces that act for one tenant only.

    The tenant is read from the run's ``AgentInput`` (a describe and one history
    event, no worker needed), once per chain of runs: nothing the agent could change,
    and nothing written to the run's history.

    Added in 0.4.0.
    """

    def __init__(self, client: Client) -> None:
        self.client = client
        self._tenants: OrderedDict[str, str] = OrderedDict()

    async def check(self, tenant: str, workflow_id: str) -> None:
        """Make sure ``workflow_id`` is an agent run of ``tenant``.

        Another tenant's run is answered exactly like a run that does not exist, so a
        caller can never learn that it exists.

        Raises:
            AgentNotFoundError: No such agent run for this tenant.
        """
        if await self.tenant_of(workflow_id) != tenant:
            raise AgentNotFoundError(f"no agent run with workflow id {workflow_id!r}")

    async def tenant_of(self, workflow_id: str) -> str | None:
        """The tenant of the run ``workflow_id`` names now (``None``: no agent run)."""
        # The raw describe: the SDK's cannot describe a paused run (status 8 is newer).
        try:
            description = await self.client.workflow_service.describe_workflow_execution(
                DescribeWorkflowExecutionRequest(
                    namespace=self.client.namespace,
                    execution=WorkflowExecution(workflow_id=workflow_id),
                )
            )
        except RPCError as exc:
            if exc.status in (RPCStatusCode.NOT_FOUND, RPCStatusCode.INVALID_ARGUMENT):
                return None
            raise
        info = description.workflow_execution_info
        run_id = info.execution.run_id
        # A chain of runs (continue-as-new) keeps its first run id; workflow ids may
        # be used again by later chains, possibly of another tenant.
        return await self.chain_tenant(workflow_id, run_id, info.first_run_id or run_id)

    async def chain_tenant(self, workflow_id: str, run_id: str, chain: str) -> str | None:
        """The tenant of the run ``run_id`` of ``workflow_id``, whose chain began with ``chain``.

        Read from the run's input once per chain, then remembered (a chain never
        changes tenant). ``None``: not an agent run.
        """
        if chain in self._tenants:
            self._tenants.move_to_end(chain)
            return self._tenants[chain]
        tenant = await self._input_tenant(
            self.client.get_workflow_handle(workflow_id, run_id=run_id)
        )
        if tenant is not None:
            self._tenants[chain] = tenant
            if len(self._tenants) > _TENANT_CACHE_SIZE:
                self._tenants.popitem(last=False)
        return tenant

    async def _input_tenant(self, handle: WorkflowHandle[Any, Any]) -> str | None:
        async for event in handle.fetch_history_events(page_size=1):
            if event.event_type != EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
                return None
            payloads = event.workflow_execution_started_event_attributes.input.payloads
            try:
                [started] = await self.client.data_converter.decode(payloads, [AgentInput])
            except Exception as exc:  # not an agent's input (another workflow), or unreadable
                log.info("tenancy.not_an_agent_run", workflow_id=handle.id, error=str(exc))
                return None
            return started.tenant if isinstance(started, AgentInput) else None
        return None
