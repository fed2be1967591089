"""Reading an agent run's event stream, shared by every reader in this process.

Each subscriber of a ``temporalio.contrib.workflow_streams`` stream holds one poll
update open on the run, and Temporal admits only a few in-flight updates per workflow
(10 by default) and 2,000 per run: twenty watchers each polling would crowd out the
approval decisions and session messages the run must take. So a process reads each
run once: a ``Feed`` polls on behalf of every local reader and keeps the events they
have not all read yet.
"""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import AsyncIterator
from datetime import timedelta

from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.contrib.workflow_streams import WorkflowStreamClient
from temporalio.service import RPCError

from smyth_temporal.clients._base import rpc_error
from smyth_temporal.exceptions import AgentNotFoundError, ClientError
from smyth_temporal.types.events import EVENTS_TOPIC, AgentEvent, parse_event

__all__ = ["POLL_COOLDOWN", "Feed", "Feeds"]

POLL_COOLDOWN = timedelta(milliseconds=50)
"""Pause between two polls of a caught-up feed: each poll is an update in the run's
history, so this bounds what watching costs (at most 20 polls a second)."""


class Feed:
    """One subscription to a run's events, read by any number of local readers.

    Args:
        client: A Temporal client with the SDK's data converter.
        workflow_id: The agent's workflow id.
        start: The first offset to read.
    """

    def __init__(self, client: Client, workflow_id: str, start: int) -> None:
        self.workflow_id = workflow_id
        self.start = start
        self.readers = 0
        self._events: list[AgentEvent] = []
        self._offsets: list[int] = []
        self._error: Exception | None = None
        self._done = False
        self._changed = asyncio.Event()
        self._stream = WorkflowStreamClient.create(client, workflow_id)
        self._task = asyncio.create_task(self._pump())

    async def read(self, after: int) -> AsyncIterator[AgentEvent]:
        """Every event with an offset above ``after``, in order, until the run ends.

        Raises:
            AgentNotFoundError: No run has that workflow id.
            ClientError: The run has no event stream (it began before 0.3.0).
        """
        index = bisect.bisect_right(self._offsets, after)
        while True:
            while index < len(self._events):
                yield self._events[index]
                index += 1
            if self._done:
                if self._error is not None:
                    raise self._error
                return
            self._changed.clear()
            await self._changed.wait()

    def close(self) -> None:
        """Stop polling (the last reader left)."""
        self._task.cancel()

    async def _pump(self) -> None:
        try:
            async for item in self._stream.subscribe(
                [EVENTS_TOPIC], from_offset=self.start, poll_cooldown=POLL_COOLDOWN
            ):
                self._events.append(parse_event(item.data, offset=item.offset))
                self._offsets.append(item.offset)
                self._changed.set()
        except WorkflowUpdateFailedError as exc:
            self._error = ClientError(
                f"agent {self.workflow_id} has no event stream (it began before 0.3.0, "
                f"or is not an agent): {exc.cause or exc}"
            )
        except RPCError as exc:
            self._error = rpc_error(
                exc,
                not_found=AgentNotFoundError(f"no agent run with workflow id {self.workflow_id!r}"),
            )
        finally:
            self._done = True
            self._changed.set()


class Feeds:
    """The feeds of one client, by workflow id: one poll per run, however many readers."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._feeds: dict[str, Feed] = {}

    async def events(self, workflow_id: str, after: int | None) -> AsyncIterator[AgentEvent]:
        """The run's events after offset ``after`` (``None``: from the first)."""
        after = -1 if after is None else after
        feed = self._feeds.get(workflow_id)
        shared = feed is not None and feed.start <= after + 1
        if feed is None or not shared:
            # A reader further back than the shared feed reads alone, from its offset.
            feed = Feed(self._client, workflow_id, after + 1)
            if workflow_id not in self._feeds:
                self._feeds[workflow_id] = feed
        feed.readers += 1
        try:
            async for event in feed.read(after):
                yield event
        finally:
            feed.readers -= 1
            if feed.readers == 0:
                feed.close()
                if self._feeds.get(workflow_id) is feed:
                    del self._feeds[workflow_id]
