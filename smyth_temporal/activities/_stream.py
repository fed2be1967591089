"""Streaming a model call's text to its live channel.

Worker side. The model activity hands each piece of text the provider streams to a
``DeltaPublisher``, which coalesces the pieces and publishes one ``text_delta`` event
per interval through ``temporalio.contrib.workflow_streams`` (a signal, deduplicated by
publisher id and sequence). The signals go to the turn's live channel, a workflow of
its own (``agent.live``, ``types.live``), so the agent's history holds none of them. A
call scheduled before 0.6.0 names no channel and streams to the run's own stream, as it
did then.

Readers start the channel when they follow the turn. Until one does, a batch finds no
channel and is kept (``workflow_streams`` holds a batch whose signal failed and sends it
first next time), so a reader that comes mid-message still gets its text from the start;
a turn nobody watches costs a failed signal a second, no workflow.

A retried attempt first publishes ``text_reset``: the earlier attempts' deltas of the
message are void, so a watcher never shows the same text twice. The call closes the
channel when it is over: answered, cancelled, or failed for good.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable
from datetime import timedelta

import structlog
from temporalio import activity
from temporalio.contrib.workflow_streams import WorkflowStreamClient
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from smyth_temporal._live import close_channel
from smyth_temporal.exceptions import ConfigurationError, ModelError
from smyth_temporal.types.events import EVENTS_TOPIC, TextDelta, TextReset
from smyth_temporal.types.live import LiveTarget

__all__ = [
    "DELTA_INTERVAL",
    "MAX_DELTA_INTERVAL",
    "UNREAD_RETRY",
    "DeltaPublisher",
    "streaming_deltas",
]

DELTA_INTERVAL = timedelta(milliseconds=75)
"""How long text gathers after the first piece (which goes at once) before the next
batch: the interval then doubles up to ``MAX_DELTA_INTERVAL``."""

UNREAD_RETRY = timedelta(seconds=1)
"""How often a call whose turn nobody reads looks again for a reader's channel."""

MAX_DELTA_INTERVAL = timedelta(milliseconds=300)
"""The longest a piece of text waits. Each batch is a signal in the live channel's history
(about 800 bytes with its workflow task), so a long reply sends about three a second,
not one per token; short replies still read as live."""

_log = structlog.get_logger("smyth_temporal.model")


class DeltaPublisher:
    """Gathers streamed text and publishes it as ``TextDelta`` events.

    Args:
        client: The stream client of the turn's live channel (of the agent's own
            workflow for a call scheduled before 0.6.0).
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
        self.unread = False
        """Whether the last batch found no channel to take it (nobody reads the turn)."""
        self.delivered = False
        """Whether a batch reached the channel (somebody reads the turn)."""
        self._queued = 0  # events published and not yet delivered

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
        self._publish(event)
        await self._send()

    async def run(self) -> None:
        """Publish text as it arrives, at most once an interval, until cancelled.

        While no reader's channel takes the text, it is offered again on the same
        schedule, stretching to ``UNREAD_RETRY``: new text or not, a reader that comes
        gets what was written so far.
        """
        interval = self._interval
        while True:
            if not self.unread:
                await self._arrived.wait()
            await self.flush()  # the first text at once: time to first token counts
            await asyncio.sleep(interval)  # then let the next batch gather
            longest = UNREAD_RETRY if self.unread else MAX_DELTA_INTERVAL
            interval = min(interval * 2, longest.total_seconds())

    async def flush(self) -> None:
        """Publish the text gathered so far as one event and wait until it is delivered.

        Also sends a batch whose signal an earlier, cancelled flush left pending (the
        stream deduplicates it if it did arrive).
        """
        self._arrived.clear()
        if not self._pending:
            await self._send()
            return
        text, self._pending = "".join(self._pending), []
        self._publish(
            TextDelta(
                text=text,
                message_id=self._message_id,
                step=self._step,
                attempt=self._attempt,
                run_id=self._run_id,
            )
        )
        await self._send()

    def _publish(self, event: TextDelta | TextReset) -> None:
        self._topic.publish(event)
        self._queued += 1

    async def _send(self) -> None:
        try:
            await self._client.flush()
        except RPCError as exc:
            if exc.status != RPCStatusCode.NOT_FOUND:
                raise
            self.unread = True  # kept: the next flush sends it first
        else:
            self.delivered = self.delivered or self._queued > 0
            self.unread, self._queued = False, 0


@contextlib.asynccontextmanager
async def streaming_deltas(
    message_id: str, step: int, live: LiveTarget | None = None
) -> AsyncIterator[DeltaPublisher]:
    """A ``DeltaPublisher`` for the current model activity, publishing while in the block.

    Args:
        message_id: The message the text belongs to.
        step: The agent step of the model call.
        live: The turn's live channel; ``None`` streams to the run's own stream (a
            call scheduled before 0.6.0).

    On leaving the block (normally or by an error) the text gathered so far is
    published before the activity's result or failure is reported, so the deltas of an
    attempt always precede its ``text_reset`` on retry.
    """
    info = activity.info()
    # The stream client's own timer is not used: the publisher flushes on its interval.
    batches = timedelta(hours=1)
    if live is None:
        client = WorkflowStreamClient.from_within_activity(batch_interval=batches)
    else:
        client = WorkflowStreamClient.create(
            activity.client(), live.workflow_id, batch_interval=batches
        )
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
    over = True
    try:
        yield publisher
    except BaseException as exc:
        over = _final(exc)
        raise
    finally:
        task.cancel()
        await _quietly(task, step)
        await _quietly(publisher.flush(), step)  # what arrived since the last batch
        # A channel no batch reached is closed by the reader that started it late.
        if live is not None and over and publisher.delivered:
            await _quietly(_close(live.workflow_id), step)


async def _close(workflow_id: str) -> None:
    await close_channel(activity.client(), workflow_id)


def _final(error: BaseException) -> bool:
    """Whether the call is over after ``error``: no attempt will write to the channel.

    A cancelled call (an interrupt, the run's end) and errors no retry can fix close
    the channel; anything else is retried by Temporal, and the retry writes on.
    """
    if isinstance(error, asyncio.CancelledError | ConfigurationError):
        return True
    if isinstance(error, ModelError):
        return not error.retryable
    return isinstance(error, ApplicationError) and error.non_retryable


async def _quietly(work: Awaitable[None], step: int) -> None:
    """Await ``work``; a failure to publish is logged, never raised: deltas are a view."""
    try:
        await work
    except asyncio.CancelledError:
        pass
    except Exception as exc:
        _log.warning("model.stream_publish_failed", error=str(exc), step=step)
