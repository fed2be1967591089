"""The memory admin workflow (workflow code): how clients run one memory operation.

Memory lives on the workers (Qdrant Edge is in-process there), so a client reaches
it the Temporal way: a short workflow that runs one memory activity. It works with
any server, and every administrative change is in history.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import BaseModel, Field
from temporalio import workflow
from temporalio.exceptions import ApplicationError

from smyth_temporal.types.memory import (
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

_TIMEOUT = timedelta(minutes=1)


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
        if request.recall is not None:
            hits = await _execute(MEMORY_ACTIVITY_RECALL, request.recall, list[MemoryHit])
            return MemoryAdminResult(hits=hits)
        if request.list is not None:
            records = await _execute(MEMORY_ACTIVITY_LIST, request.list, list[MemoryRecord])
            return MemoryAdminResult(records=records)
        if request.forget is not None:
            done = await _execute(MEMORY_ACTIVITY_FORGET, request.forget, ForgetResult)
            return MemoryAdminResult(count=done.count)
        if request.undo_run is not None:
            done = await _execute(MEMORY_ACTIVITY_UNDO_RUN, request.undo_run, ForgetResult)
            return MemoryAdminResult(count=done.count)
        raise ApplicationError("the memory admin request names no operation", non_retryable=True)


async def _execute(activity: str, request: BaseModel, result_type: Any) -> Any:
    return await workflow.execute_activity(
        activity, request, result_type=result_type, start_to_close_timeout=_TIMEOUT
    )
