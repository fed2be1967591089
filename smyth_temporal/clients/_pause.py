"""Pause and resume agent runs with Temporal's Workflow Pause: ``AgentClient``'s pause methods.

A paused run gets no workflow or activity tasks from the server: the agent makes no
model or tool call (one already running finishes and its result waits), and resumed,
it goes on where it was, with every signal sent meanwhile. Nothing is written to the
run's history but the server's own pause record, so running code needs no change.

The Python SDK of temporalio 1.35 predates the ``PAUSED`` execution status (it cannot
describe, list or query a paused run), so this module reads runs through the raw
workflow service.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import structlog
from temporalio.api.enums.v1 import WorkflowExecutionStatus as RawStatus
from temporalio.api.workflowservice.v1 import (
    PauseWorkflowExecutionRequest,
    UnpauseWorkflowExecutionRequest,
)
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from smyth_temporal.agent.memory_admin import MEMORY_ADMIN_WORKFLOW
from smyth_temporal.clients._base import AgentRef, agent_name, rpc_error
from smyth_temporal.clients._describe import describe_run
from smyth_temporal.clients._runs import RunsClient
from smyth_temporal.clients._visibility import PAUSED, executions
from smyth_temporal.exceptions import AgentNotFoundError, ClientError, PauseUnavailableError
from smyth_temporal.settings import WORKFLOW_PAUSE_SETTING
from smyth_temporal.types.budget import BUDGET_WORKFLOW
from smyth_temporal.types.live import LIVE_WORKFLOW

__all__ = ["PauseClient", "Paused", "is_paused"]

_INTERNAL_WORKFLOWS = (BUDGET_WORKFLOW, LIVE_WORKFLOW, MEMORY_ADMIN_WORKFLOW)

log = structlog.get_logger("smyth_temporal.clients")

_PAUSED = PAUSED
_RUNNING = RawStatus.WORKFLOW_EXECUTION_STATUS_RUNNING

_Act = Callable[[str], Awaitable[bool]]


@dataclass(frozen=True)
class Paused:
    """What ``pause_agents`` or ``resume_agents`` did.

    Added in 0.5.0.
    """

    changed: list[str]
    """Workflow ids paused (or resumed) now."""
    unchanged: list[str]
    """Workflow ids that matched but had ended (or changed state) meanwhile."""


async def is_paused(client: Client, workflow_id: str) -> bool:
    """Whether the run ``workflow_id`` names now is paused (``False``: not, or no such run)."""
    info = await describe_run(client, workflow_id)
    return info is not None and info.status == _PAUSED


class PauseClient(RunsClient):
    """Pause and resume agent runs, one by workflow id or all of a tenant or agent type."""

    async def pause(self, workflow_id: str, *, reason: str | None = None) -> bool:
        """Pause an agent run: it makes no model or tool call until it is resumed.

        A model or tool call already running finishes; its result waits for the resume.
        Signals and messages sent meanwhile are kept and handled on resume; a query
        (``state``) is refused while paused.

        Args:
            workflow_id: The agent's workflow id.
            reason: Why, recorded by the server with who paused it.

        Returns:
            ``True`` if paused now, ``False`` if it was paused already.

        Raises:
            AgentNotFoundError: No running agent run has that workflow id.
            PauseUnavailableError: The server does not support Workflow Pause, or has it off.

        Added in 0.5.0.
        """
        await self.identity.owns(workflow_id, "operate")
        request = PauseWorkflowExecutionRequest(
            namespace=self.client.namespace,
            workflow_id=workflow_id,
            identity=self._who(),
            reason=reason or "paused with smyth",
            request_id=str(uuid.uuid4()),
        )
        try:
            await self.client.workflow_service.pause_workflow_execution(request)
        except RPCError as exc:
            if _already(exc, "already paused"):
                return False
            raise _pause_error(exc, workflow_id) from exc
        log.info("agent.paused", workflow_id=workflow_id, reason=reason)
        return True

    async def resume(self, workflow_id: str, *, reason: str | None = None) -> bool:
        """Resume a paused agent run where it was.

        Returns:
            ``True`` if resumed now, ``False`` if it was not paused.

        Raises:
            AgentNotFoundError: No running agent run has that workflow id.
            PauseUnavailableError: The server does not support Workflow Pause, or has it off.

        Added in 0.5.0.
        """
        await self.identity.owns(workflow_id, "operate")
        if not await is_paused(self.client, workflow_id):
            await self._must_run(workflow_id)
            return False
        request = UnpauseWorkflowExecutionRequest(
            namespace=self.client.namespace,
            workflow_id=workflow_id,
            identity=self._who(),
            reason=reason or "resumed with smyth",
            request_id=str(uuid.uuid4()),
        )
        try:
            await self.client.workflow_service.unpause_workflow_execution(request)
        except RPCError as exc:
            if _already(exc, "not paused"):
                return False
            raise _pause_error(exc, workflow_id) from exc
        log.info("agent.resumed", workflow_id=workflow_id)
        return True

    async def pause_agents(
        self, *, tenant: str | None = None, agent: AgentRef | None = None, reason: str | None = None
    ) -> Paused:
        """Pause every running agent run of ``tenant`` and/or of the agent type ``agent``.

        Args:
            tenant: Only this tenant's runs (under an API key: the key's tenant, always).
            agent: Only runs of this agent class or workflow type name.
            reason: Why, recorded by the server.

        Raises:
            ClientError: Neither ``tenant`` nor ``agent`` given (and no API key).
            PauseUnavailableError: The server does not support Workflow Pause.

        Added in 0.5.0.
        """
        return await self._each(_RUNNING, tenant, agent, lambda w: self.pause(w, reason=reason))

    async def resume_agents(
        self, *, tenant: str | None = None, agent: AgentRef | None = None, reason: str | None = None
    ) -> Paused:
        """Resume every paused agent run of ``tenant`` and/or of the agent type ``agent``.

        Added in 0.5.0.
        """
        return await self._each(_PAUSED, tenant, agent, lambda w: self.resume(w, reason=reason))

    async def _each(
        self,
        status: RawStatus.ValueType,
        tenant: str | None,
        agent: AgentRef | None,
        act: _Act,
    ) -> Paused:
        self.identity.permit("operate")
        if tenant is None and agent is None and self.identity.principal is None:
            raise ClientError("name a tenant or an agent type (or a workflow id)")
        wanted = self.identity.tenant(tenant) if tenant or self.identity.principal else None
        done = Paused(changed=[], unchanged=[])
        tenancy = self.identity.tenancy  # the client's one tenant cache
        async for workflow_id, run_id in self._matching(status, agent):
            if (
                wanted is not None
                and await tenancy.chain_tenant(workflow_id, run_id, run_id) != wanted
            ):
                continue
            try:
                changed = await act(workflow_id)
            except AgentNotFoundError:
                changed = False  # it ended after the listing
            (done.changed if changed else done.unchanged).append(workflow_id)
        return done

    async def _matching(
        self, status: RawStatus.ValueType, agent: AgentRef | None
    ) -> AsyncIterator[tuple[str, str]]:
        name = "Paused" if status == _PAUSED else "Running"
        # Never the SDK's own workflows: a tenant's budget paused would stall all its
        # agents' model calls.
        internal = ", ".join(f"'{each}'" for each in _INTERNAL_WORKFLOWS)
        query = f"ExecutionStatus = '{name}' AND WorkflowType NOT IN ({internal})"
        if agent is not None:
            query += f" AND WorkflowType = '{agent_name(agent)}'"
        async for execution in executions(self.client, query):
            # Visibility lags a little: skip what is no longer in the state sought.
            if execution.raw_info.status == status:
                yield execution.id, execution.run_id

    async def _must_run(self, workflow_id: str) -> None:
        try:
            info = await describe_run(self.client, workflow_id)
        except RPCError as exc:
            raise _pause_error(exc, workflow_id) from exc
        if info is None:
            raise _not_found(workflow_id)
        if info.status != _RUNNING:
            raise AgentNotFoundError(f"agent {workflow_id!r} has finished: nothing to resume")

    def _who(self) -> str:
        principal = self.identity.principal
        return f"smyth:{principal.name}" if principal is not None else "smyth"


def _already(exc: RPCError, state: str) -> bool:
    return exc.status == RPCStatusCode.FAILED_PRECONDITION and state in exc.message


def _pause_error(exc: RPCError, workflow_id: str) -> Exception:
    if exc.status == RPCStatusCode.UNIMPLEMENTED:
        return PauseUnavailableError(
            f"this Temporal server cannot pause workflows ({exc.message}); a self-hosted "
            f"server 1.30+ needs --dynamic-config-value {WORKFLOW_PAUSE_SETTING} "
            "(`smyth dev` passes it)"
        )
    if exc.status == RPCStatusCode.NOT_FOUND and "completed" in exc.message:
        return AgentNotFoundError(f"agent {workflow_id!r} has finished: nothing to pause or resume")
    return rpc_error(exc, not_found=_not_found(workflow_id))


def _not_found(workflow_id: str) -> AgentNotFoundError:
    return AgentNotFoundError(f"no agent run with workflow id {workflow_id!r}")
