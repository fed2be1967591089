"""The ground every agent call stands on: one run by workflow id, across continue-as-new.

``AgentClient`` is built from this class and the mixins of ``_approvals`` and
``_sessions``, one concern per module.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable
from typing import Any, Self, TypeVar

from temporalio.api.enums.v1 import WorkflowExecutionStatus as RawStatus
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowUpdateFailedError
from temporalio.service import RPCError, RPCStatusCode

from smyth_temporal.clients._base import rpc_error
from smyth_temporal.clients._identity import Identity
from smyth_temporal.exceptions import AccessDeniedError, AgentNotFoundError, ClientError
from smyth_temporal.security import Permission, Principal
from smyth_temporal.settings import Settings
from smyth_temporal.types.agent import INTERRUPT_UPDATE
from smyth_temporal.types.approvals import APPROVAL_SIGNAL, APPROVAL_UPDATE
from smyth_temporal.types.rewind import REWIND_SIGNAL

__all__ = ["RunsClient", "refusal", "translate"]

_T = TypeVar("_T")

_SENT_BY_KEY = frozenset({APPROVAL_SIGNAL, APPROVAL_UPDATE, INTERRUPT_UPDATE, REWIND_SIGNAL})
"""Signals and updates that record who sent them: under a key, only through the client's
own methods, which write the key's name (and role) into them. A rewind's notice also
says what the run forgets and which calls it reconciles: only ``rewind`` sends it, right
after the reset it belongs to."""

_SWITCH_RETRIES = 50
_SWITCH_RETRY_DELAY = 0.05


class RunsClient:
    """Signals, updates and status of agent runs, by workflow id."""

    def __init__(
        self,
        client: Client,
        *,
        task_queue: str | None = None,
        principal: Principal | None = None,
    ) -> None:
        """Wrap a Temporal client that has ``SmythPlugin`` (or the pydantic converter).

        Args:
            client: The connected Temporal client.
            task_queue: Where agents are started (default: ``Settings.load()``'s).
            principal: Act for this API key's principal only (its tenant and role;
                see ``acting_for``); ``None``: trusted, no checks. Added in 0.4.0.
        """
        self.client = client
        self.task_queue = task_queue or Settings.load().task_queue
        self.identity = Identity(client, principal)

    def acting_for(self, principal: Principal | None) -> Self:
        """This client acting for ``principal``: its tenant, its role, its name as who acts.

        The one access check of every interface (the gateway, the MCP server, the CLI):
        the view shares this client's connection, task queue, event readers and tenant
        cache (a chain's tenant is read once per process); its methods act for the
        principal's tenant only, refuse what its role does not permit
        (``AccessDeniedError``), answer another tenant's run exactly as a run that does
        not exist (``AgentNotFoundError``), and record decisions, interrupts and
        messages as sent by the key's name. ``None``: trusted, no checks.

        ```python
        alice = agents.acting_for(Principal(name="alice", tenant="acme", role="approver"))
        await alice.approve(workflow_id, request_id, by="ignored")  # decided by "alice"
        ```

        Added in 0.9.0.
        """
        view = copy.copy(self)
        view.identity = self.identity.acting_for(principal)
        return view

    async def signal(self, workflow_id: str, signal: str, arg: Any = None) -> None:
        """Send a signal to an agent's current run (retried across continue-as-new).

        Raises:
            AgentNotFoundError: No run has that workflow id, or it has ended.
            AccessDeniedError: The principal's role may not operate runs, or the signal
                is a decision (send those with ``decide``).

        Added in 0.2.0. Changed in 0.9.0: with a principal, needs ``operate``, and
        decisions are refused.
        """
        self._refuse_raw_decision("operate", signal)
        await self._signal_checked(workflow_id, "operate", signal, arg)

    async def update(
        self, workflow_id: str, update: str, arg: Any = None, *, result_type: type[_T]
    ) -> _T:
        """Send an update to an agent's current run and return its answer.

        An update that reaches a run as it continues as new is sent again to the next
        run, so agents that switch runs every so often answer like any other.

        Raises:
            AgentNotFoundError: No run has that workflow id, or it has ended.
            AccessDeniedError: The principal's role may not operate runs, or the update
                is a decision or an interrupt (send those with ``decide``/``interrupt``).
            temporalio.client.WorkflowUpdateFailedError: The agent refused the update.

        Added in 0.2.0. Changed in 0.9.0: with a principal, needs ``operate``, and
        decisions and interrupts are refused.
        """
        self._refuse_raw_decision("operate", update)
        return await self._update_checked(workflow_id, "operate", update, arg, result_type)

    def _refuse_raw_decision(self, permission: Permission, name: str) -> None:
        # A decision (or an interrupt) says who made it, and under an approval policy
        # its role decides whether it counts: sent raw, an operator key could approve,
        # or vote as someone else. decide()/interrupt() record the key instead. The
        # role is checked first, so a key that may not operate hears that.
        self.identity.permit(permission)
        if self.identity.principal is not None and name in _SENT_BY_KEY:
            raise AccessDeniedError(
                f"{name!r} says who decided or rewound: send it with decide(), approve(), "
                "reject(), interrupt() or rewind(), which record the key as the one who did"
            )

    async def status(self, workflow_id: str) -> WorkflowExecutionStatus | None:
        """The Temporal status of the run a workflow id names now (``None``: no such run).

        A paused run is ``RUNNING`` here (it is open; ``is_paused`` tells them apart).
        With a principal, another tenant's run is ``None`` too.

        Added in 0.3.0.
        """
        try:
            info = await self.identity.describe(workflow_id)
        except RPCError as exc:
            raise rpc_error(exc, not_found=_not_found(workflow_id)) from exc
        if info is None:
            return None
        if info.status == RawStatus.WORKFLOW_EXECUTION_STATUS_PAUSED:
            return WorkflowExecutionStatus.RUNNING
        return WorkflowExecutionStatus(info.status) if info.status else None

    async def _signal_checked(
        self, workflow_id: str, permission: Permission, signal: str, arg: Any
    ) -> None:
        """Check the caller (``Identity.owns``), then signal the run."""
        await self.identity.owns(workflow_id, permission)
        handle = self.client.get_workflow_handle(workflow_id)
        await self._across_runs(workflow_id, lambda: handle.signal(signal, arg))

    async def _update_checked(
        self,
        workflow_id: str,
        permission: Permission,
        update: str,
        arg: Any,
        result_type: type[_T],
    ) -> _T:
        """Check the caller, then send the update pinned to the chain it checked.

        The pin (``first_execution_run_id``) lets the check use the chain remembered
        from an earlier one without a describe: the server refuses the update as not
        found if the id names another chain by then. Then the id is checked again,
        with a describe, and the update goes to the new chain if it is the caller's.
        """
        chain = await self.identity.owns(workflow_id, permission, pinned=True)
        try:
            return await self._update_chain(workflow_id, chain, update, arg, result_type)
        except AgentNotFoundError:
            if chain is None:
                raise
            self.identity.forget(workflow_id)
            fresh = await self.identity.owns(workflow_id, permission)
            if fresh == chain:
                raise
        return await self._update_chain(workflow_id, fresh, update, arg, result_type)

    async def _update_chain(
        self, workflow_id: str, chain: str | None, update: str, arg: Any, result_type: type[_T]
    ) -> _T:
        handle = self.client.get_workflow_handle(workflow_id, first_execution_run_id=chain)
        return await self._across_runs(
            workflow_id, lambda: handle.execute_update(update, arg, result_type=result_type)
        )

    async def _across_runs(self, workflow_id: str, call: Callable[[], Awaitable[_T]]) -> _T:
        # The server routes a call by workflow id to the run current when it arrives;
        # one that lands as that run continues as new fails with "already completed"
        # although the agent lives on in the next run: send it again, there.
        for _ in range(_SWITCH_RETRIES):
            try:
                return await call()
            except RPCError as exc:
                if not _reached_a_closed_run(exc) or not await self._has_running_run(workflow_id):
                    raise translate(exc, workflow_id) from exc
            await asyncio.sleep(_SWITCH_RETRY_DELAY)
        raise AgentNotFoundError(f"agent {workflow_id} kept switching runs; try again")

    async def _has_running_run(self, workflow_id: str) -> bool:
        try:
            status = await self.status(workflow_id)
        except (ClientError, RPCError):
            return False
        # Just after the switch the id may still resolve to the run that continued.
        return status in (WorkflowExecutionStatus.RUNNING, WorkflowExecutionStatus.CONTINUED_AS_NEW)


def refusal(exc: WorkflowUpdateFailedError) -> str:
    """Why an agent refused an update (its validator's or handler's message)."""
    return exc.cause.message if hasattr(exc.cause, "message") else str(exc.cause)


def _reached_a_closed_run(exc: RPCError) -> bool:
    return exc.status == RPCStatusCode.NOT_FOUND and "already completed" in exc.message


def _not_found(workflow_id: str) -> AgentNotFoundError:
    return AgentNotFoundError(f"no agent run with workflow id {workflow_id!r}")


def translate(exc: RPCError, workflow_id: str) -> Exception:
    if _reached_a_closed_run(exc):
        return AgentNotFoundError(f"agent {workflow_id!r} has finished: it takes no more messages")
    return rpc_error(exc, not_found=_not_found(workflow_id))
