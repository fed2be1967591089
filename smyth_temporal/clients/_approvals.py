"""Approval decisions and the list of pending requests: ``AgentClient``'s approval methods."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from temporalio.client import (
    WorkflowExecutionStatus,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)

from smyth_temporal.clients._runs import RunsClient, refusal
from smyth_temporal.clients._visibility import execution_page
from smyth_temporal.exceptions import AgentNotFoundError, ClientError, InvalidDecisionError
from smyth_temporal.types.approvals import (
    APPROVAL_SIGNAL,
    APPROVAL_UPDATE,
    ApprovalDecision,
    ApprovalOutcome,
    ApprovalRequest,
)
from smyth_temporal.types.visibility import PENDING_APPROVALS_ATTRIBUTE, PENDING_APPROVALS_MEMO

__all__ = ["ApprovalPage", "ApprovalsClient", "PendingApproval", "ended_refusal"]

_LIST_PAGE = 500


class PendingApproval(BaseModel):
    """An approval request waiting for a decision, with the agent run it belongs to.

    Added in 0.1.0.
    """

    agent: str
    """The agent's workflow type name."""
    workflow_id: str
    """The agent's workflow id."""
    tenant: str
    """Whose agent it is."""
    request: ApprovalRequest
    """The request."""


def ended_refusal(workflow_id: str, status: WorkflowExecutionStatus) -> InvalidDecisionError:
    """The refusal of a decision for a run that has ended (how it ended in the message)."""
    ended = status.name.lower().replace("_", " ")
    return InvalidDecisionError(
        f"agent run {workflow_id!r} has already ended ({ended}); there is nothing left to decide"
    )


@dataclass(frozen=True)
class ApprovalPage:
    """One page of pending approval requests (``pending_approvals_page``).

    Added in 0.8.0.
    """

    approvals: list[PendingApproval]
    """The page's requests, oldest first."""
    next_page_token: bytes
    """Where the next page starts; empty: this was the last."""


class ApprovalsClient(RunsClient):
    """Decide agents' approval requests and find the pending ones."""

    async def decide(
        self,
        workflow_id: str,
        decision: ApprovalDecision,
        *,
        wait: bool = True,
        timeout: float | None = None,
    ) -> ApprovalOutcome | None:
        """Send an approval decision to an agent.

        Args:
            workflow_id: The agent's workflow id.
            decision: The decision.
            wait: Send it as an update and wait for the agent to accept it (default);
                ``False`` sends a signal and returns at once (an invalid decision is
                then only logged by the agent).
            timeout: Seconds to wait for a worker to take the decision (an update
                needs one); default: no limit.

        Returns:
            The decided request (``None`` when ``wait`` is false).

        Raises:
            InvalidDecisionError: The agent refused the decision, or its run has ended;
                the message says why.
            AgentNotFoundError: No run has that workflow id.
            ClientError: No worker took the decision within ``timeout``.

        Changed in 0.3.0: ``timeout``. Changed in 0.4.0: with a principal, its role must
        allow deciding and ``by`` is the key's name. Changed in 0.8.0: a run that has
        ended raises ``InvalidDecisionError`` (was ``AgentNotFoundError``).
        """
        # The role first: a key that may not decide learns nothing about the run.
        self.identity.permit("approve")
        principal = self.identity.principal
        decision = decision.model_copy(
            update={
                "by": self.identity.by(decision.by) or decision.by,
                # The key's role, never the caller's claim: it decides who counts.
                "role": principal.role if principal is not None else decision.role,
            }
        )
        try:
            async with asyncio.timeout(timeout):
                if not wait:
                    await self._signal_checked(workflow_id, "approve", APPROVAL_SIGNAL, decision)
                    return None
                return await self._update_checked(
                    workflow_id, "approve", APPROVAL_UPDATE, decision, ApprovalOutcome
                )
        except WorkflowUpdateFailedError as exc:
            raise InvalidDecisionError(refusal(exc)) from exc
        except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError):
            # temporalio reports a cancelled wait for an update (our deadline, the
            # server's deadline on the call, or Ctrl-C) as its own error.
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise asyncio.CancelledError from None
            within = f" within {timeout:g}s" if timeout is not None else ""
            raise ClientError(
                f"no worker took the decision for {workflow_id!r}{within} (is a worker for its "
                "agent running?); it may still be applied when one picks the run up: check "
                f"with `smyth state {workflow_id}`"
            ) from None
        except AgentNotFoundError as exc:
            # "Not found" means unknown ids and runs that are over alike; the latter
            # deserves its own message, or the user goes looking for a typo. (``status``
            # sees only the caller's runs: another tenant's stays unknown.)
            # It is a refused decision like any other (409 at the gateway, as an
            # interrupt of a finished run is), not a missing run.
            status = await self.status(workflow_id)
            if status in (None, WorkflowExecutionStatus.RUNNING):
                raise
            raise ended_refusal(workflow_id, status) from exc

    async def approve(
        self,
        workflow_id: str,
        request_id: str | None = None,
        *,
        by: str,
        comment: str | None = None,
        arguments: dict[str, Any] | None = None,
        arguments_sha256: str | None = None,
        wait: bool = True,
    ) -> ApprovalOutcome | None:
        """Approve a pending request (the only one, when ``request_id`` is left out).

        ``arguments`` replaces the model's arguments (validated by the agent);
        ``arguments_sha256`` pins the arguments the approver saw. See ``decide``.
        """
        return await self.decide(
            workflow_id,
            ApprovalDecision(
                request_id=request_id,
                approved=True,
                by=by,
                comment=comment,
                arguments=arguments,
                arguments_sha256=arguments_sha256,
            ),
            wait=wait,
        )

    async def reject(
        self,
        workflow_id: str,
        request_id: str | None = None,
        *,
        by: str,
        comment: str | None = None,
        wait: bool = True,
    ) -> ApprovalOutcome | None:
        """Reject a pending request; the model is told who rejected it and why. See ``decide``."""
        return await self.decide(
            workflow_id,
            ApprovalDecision(request_id=request_id, approved=False, by=by, comment=comment),
            wait=wait,
        )

    async def pending_approvals(self, *, tenant: str | None = None) -> list[PendingApproval]:
        """Every pending approval request of every running agent, oldest first.

        Found through the ``SmythPendingApprovals`` search attribute and read from the
        runs' memos, so no workflow id needs to be known and no worker needs to run.

        Args:
            tenant: Only this tenant's agents.
        """
        found: list[PendingApproval] = []
        token = b""
        while True:
            page = await self.pending_approvals_page(
                tenant=tenant, page_size=_LIST_PAGE, page_token=token
            )
            found += page.approvals
            token = page.next_page_token
            if not token:
                return sorted(found, key=lambda p: p.request.requested_at)

    async def pending_approvals_page(
        self, *, tenant: str | None = None, page_size: int = 100, page_token: bytes = b""
    ) -> ApprovalPage:
        """The pending requests of one page of running agents (see ``pending_approvals``).

        The server filters by the ``SmythTenant`` search attribute where runs carry it;
        the tenant the run published with its requests decides. A page may hold fewer
        runs than ``page_size`` (or none) and still have a next one.

        Args:
            tenant: Only this tenant's agents.
            page_size: Look at this many runs at most.
            page_token: Where to go on (``ApprovalPage.next_page_token``).

        Raises:
            temporalio.service.RPCError: The server refused the page token.

        Added in 0.8.0.
        """
        self.identity.permit("read")
        if self.identity.principal is not None:
            tenant = self.identity.tenant(tenant)
        query = f"{PENDING_APPROVALS_ATTRIBUTE.name} > 0 AND ExecutionStatus = 'Running'"
        runs, token = await execution_page(
            self.client, query, tenant=tenant, page_size=page_size, token=page_token
        )
        found: list[PendingApproval] = []
        for execution in runs:
            published = (await execution.memo()).get(PENDING_APPROVALS_MEMO) or {}
            owner = str(published.get("tenant", "default"))
            if tenant is not None and owner != tenant:
                continue
            found += [
                PendingApproval(
                    agent=execution.workflow_type,
                    workflow_id=execution.id,
                    tenant=owner,
                    request=ApprovalRequest.model_validate(request),
                )
                for request in published.get("requests", [])
            ]
        found.sort(key=lambda p: p.request.requested_at)
        return ApprovalPage(approvals=found, next_page_token=token)
