"""Which stored payloads the server still needs: references in histories and schedules."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable

from temporalio.client import Client

from smyth_temporal._payloads import payloads_in
from smyth_temporal.clients._visibility import executions as list_executions

__all__ = ["referenced_digests"]

_CLAIM = re.compile(rb'"sha256"\s*:\s*"([0-9a-f]{64})"')
"""A content-addressed reference's claim, as the reference payload carries it (JSON)."""

_CONCURRENT_FETCHES = 8


async def referenced_digests(
    client: Client, *, progress: Callable[[int, int | None], None] | None = None
) -> set[str]:
    """Every payload-store digest that a history or schedule of the namespace refers to.

    Histories: every workflow execution the server still has, open or closed (closed
    ones until the namespace's retention removes them), each run of a continue-as-new
    chain on its own. Schedules: the arguments of their start actions.

    Args:
        client: A client of the namespace.
        progress: Called with (histories read, histories found so far or ``None``).

    Added in 0.4.0.
    """
    found: set[str] = set()
    executions = [(e.id, e.run_id) async for e in list_executions(client)]
    done = 0
    limit = asyncio.Semaphore(_CONCURRENT_FETCHES)

    async def scan(workflow_id: str, run_id: str) -> None:
        nonlocal done
        async with limit:
            history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
        for event in history.events:
            for payload in payloads_in(event):
                found.update(m.decode() for m in _CLAIM.findall(payload.data))
        done += 1
        if progress is not None:
            progress(done, len(executions))

    await asyncio.gather(*(scan(workflow_id, run_id) for workflow_id, run_id in executions))
    async for listed in await client.list_schedules():
        description = await client.get_schedule_handle(listed.id).describe()
        raw = description.raw_description.schedule.action.start_workflow
        for payload in payloads_in(raw):
            found.update(m.decode() for m in _CLAIM.findall(payload.data))
    return found
