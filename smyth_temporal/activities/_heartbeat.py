"""Automatic heartbeats for activities that wrap user or network code."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta

from temporalio import activity

__all__ = ["auto_heartbeat"]

_MIN_INTERVAL = 0.2


@asynccontextmanager
async def auto_heartbeat() -> AsyncIterator[None]:
    """Heartbeat in the background while the body runs.

    Tool functions and model calls cannot be expected to heartbeat themselves, yet a
    heartbeat timeout is what lets Temporal retry an attempt from a crashed worker in
    seconds instead of after the whole start-to-close timeout. Beating at a quarter of
    the heartbeat timeout (every 0.5 s at the default 2 s) tolerates a loop stalled for
    most of it; temporalio batches what it sends (see ``DEFAULT_HEARTBEAT_THROTTLE`` in
    ``smyth_temporal.plugin``).
    """
    timeout: timedelta | None = activity.info().heartbeat_timeout
    if not timeout:
        yield
        return
    interval = max(timeout.total_seconds() / 4, _MIN_INTERVAL)

    async def beat() -> None:
        while True:
            activity.heartbeat()
            await asyncio.sleep(interval)

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
