"""What every route shares: the client, the agents served, the options, tenancy checks.

The gateway keeps no state of its own that matters: runs, sessions, approvals and
memories live in Temporal (and the workers' stores), so any number of replicas can
answer any request. The one cache here, which tenant a chain of runs belongs to, is
derived from Temporal and never changes for a chain.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass, field
from typing import Annotated, Any, TypeVar

import structlog
from fastapi import Depends, Request
from starlette.requests import ClientDisconnect
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle
from temporalio.service import RPCError, RPCStatusCode

from smyth_temporal.clients import AgentClient, AgentRef, agent_name
from smyth_temporal.exceptions import AgentNotFoundError, UnknownAgentError
from smyth_temporal.gateway._identity import AuthLimiter, Principal
from smyth_temporal.gateway._keys import KeyStore
from smyth_temporal.types.agent import AgentInput

__all__ = ["Gateway", "GatewayDep", "GatewayOptions", "gateway_of", "while_connected"]

log = structlog.get_logger("smyth_temporal.gateway")

T = TypeVar("T")

_TENANT_CACHE_SIZE = 10_000


@dataclass(frozen=True)
class GatewayOptions:
    """Limits and timings of a gateway.

    Added in 0.3.0.
    """

    max_body_bytes: int = 1024 * 1024
    """Larger request bodies are refused with 413."""
    ping_interval: float = 15.0
    """Seconds without an event before an event stream sends a keep-alive comment."""
    stream_grace: float = 5.0
    """Seconds a streamed reply waits for its first piece before the response begins,
    so a message refused at once still gets an HTTP error status."""
    worker_timeout: float = 30.0
    """Seconds to wait for a worker to answer a state query or take a decision."""
    auth_burst: int = 10
    """Failed authentications a client address may make in a row."""
    auth_refill_per_second: float = 0.2
    """How fast a client address earns back a failed attempt (one every 5 s)."""
    console: bool = True
    """Serve the web console under ``/console/`` (its pages hold no data)."""


@dataclass
class Gateway:
    """The shared part of a gateway app (``app.state.gateway``).

    Args:
        agents: The client every route calls.
        served: The agents the gateway serves (classes or workflow type names).
        keys: The API keys; ``None`` with ``insecure_dev`` only.
        insecure_dev: Requests without a key act as tenant ``default``, admin.
        options: Limits and timings.
    """

    agents: AgentClient
    served: Iterable[AgentRef]
    keys: KeyStore | None = None
    insecure_dev: bool = False
    options: GatewayOptions = field(default_factory=GatewayOptions)
    limiter: AuthLimiter = field(init=False)
    _names: tuple[str, ...] = field(init=False)
    _tenants: OrderedDict[str, str] = field(init=False, default_factory=OrderedDict)

    def __post_init__(self) -> None:
        self._names = tuple(dict.fromkeys(agent_name(a) for a in self.served))
        self.limiter = AuthLimiter(self.options.auth_burst, self.options.auth_refill_per_second)

    @property
    def agent_names(self) -> tuple[str, ...]:
        """The workflow type names of the agents served, in the order given."""
        return self._names

    def agent(self, name: str) -> str:
        """``name`` if the gateway serves that agent.

        Raises:
            UnknownAgentError: It does not.
        """
        if name not in self._names:
            served = ", ".join(self._names) or "none"
            raise UnknownAgentError(f"unknown agent {name!r}; this gateway serves: {served}")
        return name

    async def check_owner(self, principal: Principal, workflow_id: str) -> None:
        """Make sure the run ``workflow_id`` is an agent run of the caller's tenant.

        Another tenant's run is answered exactly like a run that does not exist, so a
        key can never confirm that it exists. Nothing is written to the run's history:
        the tenant is read from the input of the run (a describe and one history event,
        no worker needed), once per chain of runs.

        Raises:
            AgentNotFoundError: No such agent run for this tenant.
        """
        if await self._tenant(workflow_id) != principal.tenant:
            raise AgentNotFoundError(f"no agent run with workflow id {workflow_id!r}")

    async def _tenant(self, workflow_id: str) -> str | None:
        handle = self.agents.client.get_workflow_handle(workflow_id)
        try:
            description = await handle.describe()
        except RPCError as exc:
            if exc.status in (RPCStatusCode.NOT_FOUND, RPCStatusCode.INVALID_ARGUMENT):
                return None
            raise
        info = description.raw_description.workflow_execution_info
        # A chain of runs (continue-as-new) keeps its first run id; workflow ids may
        # be used again by later chains, possibly of another tenant.
        return await self.chain_tenant(
            workflow_id, description.run_id, info.first_run_id or description.run_id
        )

    async def chain_tenant(self, workflow_id: str, run_id: str, chain: str) -> str | None:
        """The tenant of the run ``run_id`` of ``workflow_id``, whose chain began with ``chain``.

        Read from the run's input once per chain, then remembered (a chain never
        changes tenant). ``None``: not an agent run.
        """
        if chain in self._tenants:
            self._tenants.move_to_end(chain)
            return self._tenants[chain]
        tenant = await self._input_tenant(
            self.agents.client.get_workflow_handle(workflow_id, run_id=run_id)
        )
        if tenant is not None:
            self._tenants[chain] = tenant
            if len(self._tenants) > _TENANT_CACHE_SIZE:
                self._tenants.popitem(last=False)
        return tenant

    async def _input_tenant(self, handle: WorkflowHandle[Any, Any]) -> str | None:
        """The tenant of a run's ``AgentInput`` (``None``: not an agent run)."""
        async for event in handle.fetch_history_events(page_size=1):
            if event.event_type != EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
                return None
            payloads = event.workflow_execution_started_event_attributes.input.payloads
            try:
                [started] = await self.agents.client.data_converter.decode(payloads, [AgentInput])
            except Exception as exc:  # not an agent's input (another workflow), or unreadable
                log.info("gateway.not_an_agent_run", workflow_id=handle.id, error=str(exc))
                return None
            return started.tenant if isinstance(started, AgentInput) else None
        return None


def gateway_of(request: Request) -> Gateway:
    """The ``Gateway`` of the app serving ``request``."""
    gateway: Gateway = request.app.state.gateway
    return gateway


GatewayDep = Annotated[Gateway, Depends(gateway_of)]


async def while_connected(request: Request, awaitable: Awaitable[T]) -> T:
    """Await ``awaitable`` unless the client leaves first (then it is cancelled).

    Starlette goes on running a handler whose client has gone; a handler that waits
    for a run's end would hold its long poll on Temporal for nothing.

    Raises:
        ClientDisconnect: The client left; nobody reads the answer.
    """
    work = asyncio.ensure_future(awaitable)

    async def gone() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass

    watcher = asyncio.ensure_future(gone())
    try:
        await asyncio.wait({work, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (work, watcher):
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
    if not work.done() or work.cancelled():
        raise ClientDisconnect()
    return work.result()
