"""The memory activities: workflow code reaches memory only through these."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from temporalio import activity

from smyth_temporal.exceptions import MemoryNotFoundError, application_error
from smyth_temporal.memory import MemoryManager
from smyth_temporal.types.memory import (
    MEMORY_ACTIVITY_FORGET,
    MEMORY_ACTIVITY_LIST,
    MEMORY_ACTIVITY_RECALL,
    MEMORY_ACTIVITY_REMEMBER,
    MEMORY_ACTIVITY_SUPERSEDE,
    MEMORY_ACTIVITY_UNDO_RUN,
    ForgetRequest,
    ForgetResult,
    ListRequest,
    MemoryHit,
    MemoryRecord,
    RecallRequest,
    RememberRequest,
    SupersedeRequest,
    UndoRunRequest,
)

__all__ = ["MemoryActivities"]


class MemoryActivities:
    """Holds the worker's ``MemoryManager`` and serves the memory activities.

    Added in 0.1.0. Changed in 0.2.0: takes a factory too, called at the first memory
    activity, so workers whose agents may need memory (to archive compacted turns)
    open no store until one does.
    """

    def __init__(self, manager: MemoryManager | Callable[[], MemoryManager]) -> None:
        if isinstance(manager, MemoryManager):
            self._manager: MemoryManager | None = manager
            self._factory: Callable[[], MemoryManager] | None = None
        else:
            self._manager, self._factory = None, manager

    @property
    def manager(self) -> MemoryManager:
        """The memory manager (built on first use when given a factory)."""
        if self._manager is None:
            assert self._factory is not None
            self._manager = self._factory()
        return self._manager

    @activity.defn(name=MEMORY_ACTIVITY_REMEMBER)
    async def remember(self, request: RememberRequest) -> list[MemoryRecord]:
        """Store memories (idempotent)."""
        return await self.manager.remember(request)

    @activity.defn(name=MEMORY_ACTIVITY_RECALL)
    async def recall(self, request: RecallRequest) -> list[MemoryHit]:
        """Search memories."""
        return await self.manager.recall(request)

    @activity.defn(name=MEMORY_ACTIVITY_LIST)
    async def list_memories(self, request: ListRequest) -> list[MemoryRecord]:
        """List memories, newest first."""
        return await self.manager.list(request)

    @activity.defn(name=MEMORY_ACTIVITY_FORGET)
    async def forget(self, request: ForgetRequest) -> ForgetResult:
        """Delete memories."""
        return ForgetResult(count=await self.manager.forget(request))

    @activity.defn(name=MEMORY_ACTIVITY_SUPERSEDE)
    async def supersede(self, request: SupersedeRequest) -> MemoryRecord:
        """Replace a memory by a newer one."""
        try:
            return await self.manager.supersede(request)
        except KeyError as exc:
            raise application_error(MemoryNotFoundError(str(exc))) from exc

    @activity.defn(name=MEMORY_ACTIVITY_UNDO_RUN)
    async def undo_run(self, request: UndoRunRequest) -> ForgetResult:
        """Delete every memory a workflow wrote."""
        return ForgetResult(count=await self.manager.undo_run(request))

    def all(self) -> list[Callable[..., Any]]:
        """Every activity, for a worker's ``activities=``."""
        return [
            self.remember,
            self.recall,
            self.list_memories,
            self.forget,
            self.supersede,
            self.undo_run,
        ]
