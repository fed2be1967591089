"""``TenantResolver``: which tenant an agent run belongs to, read from its input.

Two bounded caches, both filled by the one describe (``describe_run``) and the run's
first history event:

- a chain's tenant (a chain of runs, linked by continue-as-new, is named by its first
  run id): a fact that never changes, kept as long as it fits;
- which chain a workflow id named at the last describe: a hint only, since an id may
  be used again by a later chain, possibly of another tenant. It is trusted only by
  calls the server itself pins to that chain (an update with ``first_execution_run_id``:
  refused as not found if the id names another chain by then).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import structlog
from temporalio.api.enums.v1 import EventType
from temporalio.api.workflow.v1 import WorkflowExecutionInfo
from temporalio.client import Client, WorkflowHandle

from smyth_temporal.clients._describe import describe_run
from smyth_temporal.exceptions import AgentNotFoundError
from smyth_temporal.types.agent import AgentInput

__all__ = ["TENANT_CACHE_SIZE", "Owner", "TenantResolver"]

log = structlog.get_logger("smyth_temporal.clients")

TENANT_CACHE_SIZE = 10_000
"""Chains (and workflow ids) a resolver remembers, the least recently used dropped first."""


@dataclass(frozen=True)
class Owner:
    """Whose run a workflow id names: its chain and the chain's tenant.

    Added in 0.9.0.
    """

    chain: str
    """The first run id of the chain the workflow id names (continue-as-new keeps it)."""
    tenant: str | None
    """The chain's tenant; ``None``: not an agent run (another workflow)."""
    info: WorkflowExecutionInfo | None = None
    """What the describe said of the run (status, ...); ``None`` when remembered."""


class _Bounded(OrderedDict[str, str]):
    """A mapping that forgets its least recently used entry past ``TENANT_CACHE_SIZE``."""

    def get_fresh(self, key: str) -> str | None:
        if key not in self:
            return None
        self.move_to_end(key)
        return self[key]

    def put(self, key: str, value: str) -> None:
        self[key] = value
        self.move_to_end(key)
        if len(self) > TENANT_CACHE_SIZE:
            self.popitem(last=False)


class TenantResolver:
    """The tenant of agent runs, for interfaces that act for one tenant only.

    The tenant is read from the run's ``AgentInput`` (a describe and one history
    event, no worker needed), once per chain of runs: nothing the agent could change,
    and nothing written to the run's history. One resolver serves a client and every
    view of it (``AgentClient.acting_for``).

    Added in 0.4.0. Changed in 0.9.0: ``current``, ``remembered``, ``started``, ``forget``.
    """

    def __init__(self, client: Client) -> None:
        self.client = client
        self._tenants = _Bounded()
        self._chains = _Bounded()

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
        owner = await self.current(workflow_id)
        return owner.tenant if owner is not None else None

    async def current(self, workflow_id: str) -> Owner | None:
        """The chain ``workflow_id`` names now and its tenant (``None``: no such run).

        One describe; the chain's tenant is read once per chain. Remembers the chain
        for ``remembered``.
        """
        info = await describe_run(self.client, workflow_id)
        if info is None:
            self.forget(workflow_id)
            return None
        run_id = info.execution.run_id
        # A chain of runs (continue-as-new) keeps its first run id; workflow ids may
        # be used again by later chains, possibly of another tenant.
        chain = info.first_run_id or run_id
        tenant = await self.chain_tenant(workflow_id, run_id, chain)
        self._chains.put(workflow_id, chain)
        return Owner(chain, tenant, info)

    def remembered(self, workflow_id: str) -> Owner | None:
        """What the last ``current`` found for ``workflow_id``, without asking the server.

        A hint: the id may name another chain since. Only for calls pinned to
        ``Owner.chain`` (the server refuses them if it no longer is).
        """
        chain = self._chains.get_fresh(workflow_id)
        tenant = self._tenants.get_fresh(chain) if chain is not None else None
        if chain is None or tenant is None:
            return None
        return Owner(chain, tenant)

    def started(self, workflow_id: str, run_id: str, tenant: str) -> None:
        """Remember a chain this process just started: run ``run_id`` of ``workflow_id``.

        The tenant is the one its input names (a fact of the chain, as if read from the
        history), so the next check of the run reads no history. Only for a start that
        began a new chain (not one that joined a running workflow).

        Added in 0.9.0.
        """
        self._tenants.put(run_id, tenant)
        self._chains.put(workflow_id, run_id)

    def forget(self, workflow_id: str) -> None:
        """Drop the hint for ``workflow_id`` (the server said it names another chain now)."""
        self._chains.pop(workflow_id, None)

    async def chain_tenant(self, workflow_id: str, run_id: str, chain: str) -> str | None:
        """The tenant of the run ``run_id`` of ``workflow_id``, whose chain began with ``chain``.

        Read from the run's input once per chain, then remembered (a chain never
        changes tenant). ``None``: not an agent run.
        """
        known = self._tenants.get_fresh(chain)
        if known is not None:
            return known
        tenant = await self._input_tenant(
            self.client.get_workflow_handle(workflow_id, run_id=run_id)
        )
        if tenant is not None:
            self._tenants.put(chain, tenant)
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
