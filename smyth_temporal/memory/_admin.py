"""The memory admin workflow: how clients (the CLI) run one memory operation.

Memory lives on the workers (Qdrant Edge is in-process there), so a client reaches
it the Temporal way: a short workflow that runs one memory activity. It works with
any server, and every administrative change is in history.
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel, Field
from temporalio import workflow
from temporalio.exceptions import ApplicationError

from smyth_temporal.memory._types import (
    MEMORY_ACTIVITY_FORGET,
    MEMORY_ACTIVITY_LIST,
    MEMORY_ACTIVITY_RECALL,
    MEMORY_ACTIVITY_UNDO_RUN,
    ForgetRequest,
    ForgetResult,
    ListRequest,
    MemoryHit,
    MemoryRecord,
    RecallRequest,
    UndoRunRequest,
)

__all__ = ["MEMORY_ADMIN_WORKFLOW", "MemoryAdmin", "MemoryAdminRequest", "MemoryAdminResult"]

MEMORY_ADMIN_WORKFLOW = "smyth.memory.admin"


class MemoryAdminRequest(BaseModel):
    """Exactly one operation."""

    recall: RecallRequest | None = None
    list: ListRequest | None = None
    forget: ForgetRequest | None = None
    undo_run: UndoRunRequest | None = None


class MemoryAdminResult(BaseModel):
    """What the operation returned."""

    hits: list[MemoryHit] = Field(default_factory=list)
    records: list[MemoryRecord] = Field(default_factory=list)
    count: int = 0


@workflow.defn(name=MEMORY_ADMIN_WORKFLOW)
class MemoryAdmin:
    """Runs one memory operation as an activity and returns its result."""

    @workflow.run
    async def run(self, request: MemoryAdminRequest) -> MemoryAdminResult:
        """Run the operation the request names."""
        timeout = timedelta(minutes=1)
        if request.recall is not None:
            hits = await workflow.execute_activity(
                MEMORY_ACTIVITY_RECALL,
                request.recall,
                result_type=list[MemoryHit],
                start_to_close_timeout=timeout,
            )
            return MemoryAdminResult(hits=hits)
        if request.list is not None:
            records = await workflow.execute_activity(
                MEMORY_ACTIVITY_LIST,
                request.list,
                result_type=list[MemoryRecord],
                start_to_close_timeout=timeout,
            )
            return MemoryAdminResult(records=records)
        if request.forget is not None:
            result = await workflow.execute_activity(
                MEMORY_ACTIVITY_FORGET,
                request.forget,
                result_type=ForgetResult,
                start_to_close_timeout=timeout,
            )
            return MemoryAdminResult(count=result.count)
        if request.undo_run is not None:
            result = await workflow.execute_activity(
                MEMORY_ACTIVITY_UNDO_RUN,
                request.undo_run,
                result_type=ForgetResult,
                start_to_close_timeout=timeout,
            )
            return MemoryAdminResult(count=result.count)
        raise ApplicationError("the memory admin request names no operation", non_retryable=True)
