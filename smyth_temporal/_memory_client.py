"""``MemoryClient``: search, list, forget and undo runs from scripts and the CLI."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from temporalio.client import WorkflowFailureError

from smyth_temporal.exceptions import ClientError
from smyth_temporal.memory._admin import (
    MEMORY_ADMIN_WORKFLOW,
    MemoryAdminRequest,
    MemoryAdminResult,
)
from smyth_temporal.types.memory import (
    ForgetRequest,
    ListRequest,
    MemoryHit,
    MemoryRecord,
    MemoryScope,
    RecallRequest,
    UndoRunRequest,
)

if TYPE_CHECKING:
    from smyth_temporal.client import AgentClient

__all__ = ["MemoryClient"]


class MemoryClient:
    """Memory operations for people and scripts, run on the agents' workers.

    Get one from ``AgentClient.memory``. Each call runs one short workflow on the
    agents' task queue, so it needs a worker of an agent with memory, and it leaves an
    audit record in history.

    Added in 0.1.0.
    """

    def __init__(self, agents: AgentClient, *, timeout: timedelta = timedelta(minutes=2)) -> None:
        self._agents = agents
        self.timeout = timeout
        """How long one operation may take, waiting for a worker included."""

    async def search(
        self,
        query: str,
        *,
        tenant: str = "default",
        namespace: str,
        k: int = 5,
        kinds: list[str] | None = None,
        include_expired: bool = False,
        include_superseded: bool = False,
    ) -> list[MemoryHit]:
        """The memories of a tenant's namespace closest to ``query``."""
        request = RecallRequest(
            scope=MemoryScope(tenant=tenant, namespace=namespace),
            query=query,
            k=k,
            kinds=kinds,
            include_expired=include_expired,
            include_superseded=include_superseded,
            now=datetime.now(UTC),
        )
        return (await self._run(MemoryAdminRequest(recall=request))).hits

    async def list_memories(
        self,
        *,
        tenant: str = "default",
        namespace: str,
        kinds: list[str] | None = None,
        workflow_id: str | None = None,
        limit: int = 50,
    ) -> list[MemoryRecord]:
        """A tenant's namespace's memories, newest first."""
        request = ListRequest(
            scope=MemoryScope(tenant=tenant, namespace=namespace),
            kinds=kinds,
            workflow_id=workflow_id,
            limit=limit,
        )
        return (await self._run(MemoryAdminRequest(list=request))).records

    async def forget(self, ids: list[str], *, tenant: str = "default", namespace: str) -> int:
        """Delete memories by id (only within the tenant's namespace); returns how many."""
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
        request = UndoRunRequest(
            scope=MemoryScope(tenant=tenant, namespace=namespace) if namespace else None,
            tenant=tenant,
            workflow_id=workflow_id,
            run_id=run_id,
        )
        return (await self._run(MemoryAdminRequest(undo_run=request))).count

    async def _run(self, request: MemoryAdminRequest) -> MemoryAdminResult:
        agents = self._agents
        try:
            result: MemoryAdminResult = await agents.client.execute_workflow(
                MEMORY_ADMIN_WORKFLOW,
                request,
                id=f"smyth-memory-{uuid.uuid4().hex[:12]}",
                task_queue=agents.task_queue,
                result_type=MemoryAdminResult,
                # Without a worker that has memory the run would wait forever.
                execution_timeout=self.timeout,
            )
        except WorkflowFailureError as exc:
            raise ClientError(
                f"memory operation failed: {exc.cause or exc} (a worker of an agent with "
                f"memory must poll task queue {agents.task_queue!r})"
            ) from exc
        return result
