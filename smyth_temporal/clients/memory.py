"""``MemoryClient``: search, list, forget and undo runs, from scripts and the CLI.

Memory lives on the workers, so each operation runs one short admin workflow on the
agents' task queue. This client makes sure such a run never waits forever: it checks
that a worker polls the queue, watches for one to take the run (a worker without
memory fails it, and Temporal would retry that forever), and terminates the run when
no worker does it in time, so an operation the caller gave up on never applies later.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import FailureError
from temporalio.service import RPCError, RPCStatusCode

from smyth_temporal.agent.memory_admin import (
    MEMORY_ADMIN_WORKFLOW,
    MemoryAdminRequest,
    MemoryAdminResult,
)
from smyth_temporal.clients._base import (
    PICKUP_TIMEOUT,
    count_pollers,
    last_activity_failure,
    terminate_quietly,
    watch_pickup,
)
from smyth_temporal.clients._identity import Identity
from smyth_temporal.exceptions import AgentNotFoundError, ClientError
from smyth_temporal.types.agent import AgentInput
from smyth_temporal.types.memory import (
    ForgetRequest,
    ListRequest,
    MemoryHit,
    MemoryRecord,
    MemoryScope,
    MemoryView,
    RecallRequest,
    UndoRunRequest,
)

__all__ = ["MEMORY_TIMEOUT", "START_MEMORY_WORKER", "MemoryClient"]

MEMORY_TIMEOUT = 30.0
"""Seconds an operation may take once a worker has taken it (then it is terminated)."""

START_MEMORY_WORKER = "start a smyth worker on it, e.g. `smyth worker module:Class`"
"""What to do when no worker can do a memory operation."""


class MemoryClient:
    """Memory operations for people and scripts, run on the agents' workers.

    Get one from ``AgentClient.memory``. Each call runs one short workflow on the
    agents' task queue, which any smyth worker of the queue serves (whatever agents it
    hosts), and it leaves an audit record in history. A call ends with a
    ``ClientError`` that says why when no such worker does the operation.

    Added in 0.1.0; changed in 0.3.0: built from a Temporal client and a task queue,
    and it ends operations no worker does. Changed in 0.9.0: any smyth worker serves
    it, not only one that hosts an agent with memory.
    """

    def __init__(
        self,
        client: Client,
        *,
        task_queue: str,
        timeout: float | None = None,
        pickup_timeout: float = PICKUP_TIMEOUT,
        identity: Identity | None = None,
    ) -> None:
        """Run memory operations on the workers of ``task_queue``.

        Args:
            client: The Temporal client (with ``SmythPlugin`` or the pydantic converter).
            task_queue: Where the agents' workers poll.
            timeout: Seconds an operation may take once taken (default:
                ``MEMORY_TIMEOUT``).
            pickup_timeout: Seconds for a worker to take it, when several poll the
                queue and some may lack memory (another program's, an older release's).
            identity: Whose memory: with an API key's principal, its tenant only (a
                tenant argument naming another is refused) and its role (forgetting
                needs admin). Added in 0.4.0.
        """
        self.client = client
        self.task_queue = task_queue
        self.timeout = MEMORY_TIMEOUT if timeout is None else timeout
        self.pickup_timeout = pickup_timeout
        self.identity = identity if identity is not None else Identity(client, None)

    async def search(
        self,
        query: str,
        *,
        tenant: str = "default",
        namespace: str | None = None,
        k: int = 5,
        kinds: list[str] | None = None,
        include_expired: bool = False,
        include_superseded: bool = False,
        branch: str | None = None,
    ) -> list[MemoryHit]:
        """The memories closest to ``query``, best first.

        Without ``branch``, what an ordinary run sees: no fork's memories. With a
        fork's workflow id, what that fork sees (``MemoryView``): its ancestors'
        memories up to where it branched off and its own, never the original's later ones.

        Args:
            query: What to look for.
            tenant: Whose memory.
            namespace: The memory namespace; ``None``: every namespace of the tenant
                (each hit's ``record.scope.namespace`` says where it was found).
            k: How many memories at most.
            kinds: Only these kinds.
            include_expired: Also memories past their expiry.
            include_superseded: Also memories replaced by a newer one.
            branch: Search as this run (a workflow id) sees memory: a fork's branch.

        Raises:
            AgentNotFoundError: ``branch`` names no run (of the caller's tenant).

        Changed in 0.3.0: ``namespace`` may be left out. Changed in 0.10.0: ``branch``.
        """
        self.identity.permit("read")
        tenant = self.identity.tenant(tenant)
        view = await self._view_of(branch) if branch is not None else None
        request = RecallRequest(
            **_read_scope(tenant, namespace),
            query=query,
            k=k,
            kinds=kinds,
            include_expired=include_expired,
            include_superseded=include_superseded,
            now=datetime.now(UTC),
            view=view,
        )
        return (await self._run(MemoryAdminRequest(recall=request))).hits

    async def _view_of(self, workflow_id: str) -> MemoryView | None:
        """The memory view of the run ``workflow_id`` (``None``: an ordinary run's).

        Read from its current run's input, as the run itself reads it: a fork's
        ``fork_of`` travels into every run of its chain.
        """
        await self.identity.owns(workflow_id)
        handle = self.client.get_workflow_handle(workflow_id)
        try:
            async for event in handle.fetch_history_events(page_size=1):
                started = event.workflow_execution_started_event_attributes
                break
            else:  # pragma: no cover - a run's history always starts with its start
                raise AgentNotFoundError(f"no agent run with workflow id {workflow_id!r}")
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                raise AgentNotFoundError(f"no agent run with workflow id {workflow_id!r}") from None
            raise
        payloads = list(started.input.payloads)
        [input] = await self.client.data_converter.decode(payloads[:1], [AgentInput])
        if not isinstance(input, AgentInput) or input.fork_of is None:
            return None
        return MemoryView.of_fork(workflow_id, input.fork_of)

    async def list_memories(
        self,
        *,
        tenant: str = "default",
        namespace: str | None = None,
        kinds: list[str] | None = None,
        workflow_id: str | None = None,
        limit: int = 50,
    ) -> list[MemoryRecord]:
        """A tenant's memories, newest first: of one namespace, or (``None``) of all."""
        self.identity.permit("read")
        tenant = self.identity.tenant(tenant)
        request = ListRequest(
            **_read_scope(tenant, namespace), kinds=kinds, workflow_id=workflow_id, limit=limit
        )
        return (await self._run(MemoryAdminRequest(list=request))).records

    async def forget(self, ids: list[str], *, tenant: str = "default", namespace: str) -> int:
        """Delete memories by id (only within the tenant's namespace); returns how many."""
        self.identity.permit("admin")
        tenant = self.identity.tenant(tenant)
        request = ForgetRequest(scope=MemoryScope(tenant=tenant, namespace=namespace), ids=ids)
        return (await self._run(MemoryAdminRequest(forget=request))).count

    async def undo_run(
        self,
        workflow_id: str,
        *,
        tenant: str = "default",
        namespace: str | None = None,
        run_id: str | None = None,
    ) -> int:
        """Delete every memory a workflow (or one run of it) wrote; returns how many."""
        self.identity.permit("admin")
        tenant = self.identity.tenant(tenant)
        request = UndoRunRequest(
            scope=MemoryScope(tenant=tenant, namespace=namespace) if namespace else None,
            tenant=tenant,
            workflow_id=workflow_id,
            run_id=run_id,
        )
        return (await self._run(MemoryAdminRequest(undo_run=request))).count

    async def _run(self, request: MemoryAdminRequest) -> MemoryAdminResult:
        """Run one admin workflow, terminating it if no worker does it in time.

        A worker without memory fails its workflow task ("not registered") and Temporal
        would retry it forever; a worker that takes it but cannot reach its store
        retries the activity. Either way the run is terminated, so nothing applies
        later, and the server's execution timeout ends it should this process die first.

        Raises:
            ClientError: No worker with memory did the operation, or it failed.
        """
        queue = self.task_queue
        polling = await count_pollers(self.client, queue)
        if polling == 0:
            raise ClientError(
                f"no worker polls task queue {queue!r} (namespace {self.client.namespace!r} "
                f"at {self.client.service_client.config.target_host}); memory lives on the "
                f"workers: {START_MEMORY_WORKER}"
            )
        handle: WorkflowHandle[Any, MemoryAdminResult] = await self.client.start_workflow(
            MEMORY_ADMIN_WORKFLOW,
            request,
            id=f"smyth-memory-{uuid.uuid4().hex[:12]}",
            task_queue=queue,
            result_type=MemoryAdminResult,
            execution_timeout=timedelta(seconds=self.pickup_timeout + 2 * self.timeout),
        )
        # With one worker its "not registered" failure is final; with several, another
        # worker (one with memory) may take the retried task.
        pickup = await watch_pickup(
            handle,
            timeout=self.pickup_timeout,
            final_if_unregistered=polling is not None and polling <= 1,
        )
        if not pickup.taken:
            if pickup.unregistered:
                reason = f"no worker on task queue {queue!r} has memory; {START_MEMORY_WORKER}"
            elif pickup.failures:
                reason = f"the worker failed the memory operation: {pickup.failures[-1]}"
            else:
                reason = (
                    f"no worker took the memory operation within {self.pickup_timeout:g}s on "
                    f"task queue {queue!r}; is a smyth worker running?"
                )
            await terminate_quietly(handle, reason)
            raise ClientError(reason)
        try:
            async with asyncio.timeout(self.timeout):
                return await handle.result()
        except TimeoutError:
            last = await last_activity_failure(handle)
            reason = (
                f"the memory operation did not finish within {self.timeout:g}s"
                + (f" (last error: {last})" if last else "")
                + "; see the worker's log"
            )
            await terminate_quietly(handle, reason)
            raise ClientError(reason) from None
        except WorkflowFailureError as exc:
            cause = exc.cause or exc
            while isinstance(cause, FailureError) and cause.cause is not None:
                cause = cause.cause  # the activity's error, under "Activity task failed"
            raise ClientError(f"the memory operation failed: {cause}") from exc


def _read_scope(tenant: str, namespace: str | None) -> dict[str, Any]:
    """One namespace of a tenant, or (``namespace=None``) all of them."""
    if namespace is None:
        return {"tenant": tenant}
    return {"scope": MemoryScope(tenant=tenant, namespace=namespace)}
