"""Streaming a model call's text to the agent run's event stream.

Worker side. The model activity hands each piece of text the provider streams to a
``DeltaPublisher``, which coalesces the pieces and publishes one ``text_delta`` event
per interval through ``temporalio.contrib.workflow_streams`` (a signal to the agent's
workflow, deduplicated by publisher id and sequence). Coalescing bounds the history a
streamed turn adds: one signal per interval, however many tokens arrive in it.

A retried attempt first publishes ``text_reset``: the earlier attempts' deltas of the
message are void, so a watcher never shows the same text twice.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable
from datetime import timedelta

import structlog
from temporalio import activity
from temporalio.contrib.workflow_streams import WorkflowStreamClient

from smyth_temporal.types.events import EVENTS_TOPIC, TextDelta, TextReset

__all__ = ["DELTA_INTERVAL", "MAX_DELTA_INTERVAL", "DeltaPublisher", "streaming_deltas"]

DELTA_INTERVAL = timedelta(milliseconds=75)
"""How long text gathers after the first piece (which goes at once) before the next
batch: the interval then doubles up to ``MAX_DELTA_INTERVAL``."""

MAX_DELTA_INTERVAL = timedelta(milliseconds=300)
"""The longest a piece of text waits. Each batch is a signal in the run's history (about
800 bytes with its workflow task), so a long reply adds about three a second, not one
per token; short replies still read as live."""

_log = structlog.get_logger("smyth_temporal.model")


class DeltaPublisher:
    """Gathers streamed text and publishes it as ``TextDelta`` events.

    Args:
        client: The stream client of the agent's workflow.
        message_id: The message the text belongs to.
        step: The agent step of the model call.
        attempt: The activity attempt that writes the text.
        run_id: The agent run the model call belongs to.
        interval: How long the second batch gathers (later ones: twice as long, up to
            ``MAX_DELTA_INTERVAL``).
    """

    def __init__(
        self,
        client: WorkflowStreamClient,
        *,
        message_id: str,
        step: int,
        attempt: int,
        run_id: str = "",
        interval: timedelta = DELTA_INTERVAL,
    ) -> None:
        self._topic = client.topic(EVENTS_TOPIC)
        self._client = client
        self._message_id = message_id
        self._step = step
        self._attempt = attempt
        self._run_id = run_id
        self._interval = interval.total_seconds()
        self._pending: list[str] = []
        self._arrived = asyncio.Event()

    def add(self, text: str) -> None:
        """Take one piece of text (the provider's ``on_text`` callback)."""
        if text:
            self._pending.append(text)
            self._arrived.set()

    async def reset(self) -> None:
        """Say that this attempt starts the message again (a retry supersedes the rest)."""
        event = TextReset(
            message_id=self._message_id, step=self._step, attempt=self._attempt, run_id=self._run_id
        )
        self._topic.publish(event)
        await self._client.flush()

    async def run(self) -> None:
        """Publish text as it arrives, at most once an interval, until cancelled."""
        interval = self._interval
        while True:
            await self._arrived.wait()
            await self.flush()  # the first text at once: time to first token counts
            await asyncio.sleep(interval)  # then let the next batch gather
            interval = min(interval * 2, MAX_DELTA_INTERVAL.total_seconds())

    async def flush(self) -> None:
        """Publish the text gathered so far as one event and wait until it is delivered.

        Also sends a batch whose signal an earlier, cancelled flush left pending (the
        stream deduplicates it if it did arrive).
        """
        self._arrived.clear()
        if not self._pending:
            await self._client.flush()
            return
        text, self._pending = "".join(self._pending), []
        self._topic.publish(
            TextDelta(
                text=text,
                message_id=self._message_id,
                step=self._step,
                attempt=self._attempt,
                run_id=self._run_id,
            )
        )
        await self._client.flush()


@contextlib.asynccontextmanager
async def streaming_deltas(message_id: str, step: int) -> AsyncIterator[DeltaPublisher]:
    """A ``DeltaPublisher`` for the current model activity, publishing while in the block.

    On leaving the block (normally or by an error) the text gathered so far is
    published before the activity's result or failure is reported, so the deltas of an
    attempt always precede its ``text_reset`` on retry.
    """
    info = activity.info()
    # The stream client's own timer is not used: the publisher flushes on its interval.
    client = WorkflowStreamClient.from_within_activity(batch_interval=timedelta(hours=1))
    publisher = DeltaPublisher(
        client,
        message_id=message_id,
        step=step,
        attempt=info.attempt,
        run_id=info.workflow_run_id or "",
    )
    if info.attempt > 1:
        await _quietly(publisher.reset(), step)
    task = asyncio.create_task(publisher.run())
    try:
        yield publisher
    finally:
        task.cancel()
        await _quietly(task, step)
        await _quietly(publisher.flush(), step)  # what arrived since the last batch


async def _quietly(work: Awaitable[None], step: int) -> None:
    """Await ``work``; a failure to publish is logged, never raised: deltas are a view."""
    try:
        await work
    except asyncio.CancelledError:
        pass
    except Exception as exc:
        _log.warning("model.stream_publish_failed", error=str(exc), step=step)
