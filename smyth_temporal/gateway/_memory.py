"""Long-term memory (search, list, forget) and schedules, within the caller's tenant.

Memory operations run on the agents' workers (``MemoryClient``, acting for the key),
confined to the tenant the key names: another tenant's memories are neither found nor
forgotten.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from smyth_temporal.exceptions import MemoryNotFoundError
from smyth_temporal.gateway._auth import Admin, Reader
from smyth_temporal.gateway._gateway import GatewayDep
from smyth_temporal.gateway._models import ForgetResult, MemoryHits, MemoryList, ScheduleList

__all__ = ["router"]

router = APIRouter(prefix="/v1")

Namespace = Annotated[
    str | None,
    Query(min_length=1, description="the memory namespace (default: every one of the tenant)"),
]
Kinds = Annotated[list[str] | None, Query(alias="kind", description="only these kinds")]


@router.get("/memory", summary="List memories", tags=["memory"])
async def list_memories(
    caller: Reader,
    gateway: GatewayDep,
    namespace: Namespace = None,
    kinds: Kinds = None,
    workflow_id: Annotated[str | None, Query(description="only those this run wrote")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
) -> MemoryList:
    """The tenant's memories, newest first."""
    records = await gateway.acting_for(caller).memory.list_memories(
        namespace=namespace, kinds=kinds, workflow_id=workflow_id, limit=limit
    )
    return MemoryList(memories=records)


@router.get("/memory/search", summary="Search memories", tags=["memory"])
async def search_memories(
    caller: Reader,
    gateway: GatewayDep,
    q: Annotated[str, Query(min_length=1, description="what to look for")],
    namespace: Namespace = None,
    kinds: Kinds = None,
    k: Annotated[int, Query(ge=1, le=100)] = 5,
) -> MemoryHits:
    """The tenant's memories closest to ``q``, best first."""
    hits = await gateway.acting_for(caller).memory.search(q, namespace=namespace, k=k, kinds=kinds)
    return MemoryHits(hits=hits)


@router.delete("/memory/{memory_id}", summary="Forget a memory", tags=["memory"])
async def forget_memory(
    memory_id: Annotated[str, Path(description="the memory's full id")],
    namespace: Annotated[str, Query(min_length=1, description="its memory namespace")],
    caller: Admin,
    gateway: GatewayDep,
) -> ForgetResult:
    """Delete one memory of the tenant (404 if the tenant has no such memory there)."""
    count = await gateway.acting_for(caller).memory.forget([memory_id], namespace=namespace)
    if count == 0:
        raise MemoryNotFoundError(
            f"no memory {memory_id!r} (tenant {caller.tenant}, memory namespace {namespace})"
        )
    return ForgetResult(count=count)


@router.get("/schedules", summary="List schedules", tags=["schedules"])
async def list_schedules(caller: Reader, gateway: GatewayDep) -> ScheduleList:
    """The tenant's agent schedules, by id."""
    return ScheduleList(schedules=await gateway.acting_for(caller).schedules.list())
