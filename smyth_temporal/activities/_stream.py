"""Streaming a model call's text to its live channel.

Worker side. The model activity hands each piece of text the provider streams to a
``DeltaPublisher``, which coalesces the pieces and publishes one ``text_delta`` event
per interval through ``temporalio.contrib.workflow_streams`` (a signal, deduplicated by
publisher id and sequence). The signals go to the turn's live channel, a workflow of
its own (``agent.live``, ``types.live``) that this module starts and closes, so the
agent's history holds none of them. A call scheduled before 0.6.0 names no channel and
streams to the run's own stream, as it did then.

A retried attempt first publishes ``text_reset``: the earlier attempts' deltas of the
message are void, so a watcher never shows the same text twice. The channel stays open
across retries (a retry writes to the same one) and is closed when the call is over:
answered, cancelled, or failed for good.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable
from datetime import timedelta

import structlog
from temporalio import activity
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.contrib.workflow_streams import WorkflowStreamClient
from temporalio.exceptions import ApplicationError

from smyth_temporal.exceptions import ConfigurationError, ModelError
from smyth_temporal.types.events import EVENTS_TOPIC, TextDelta, TextReset
from smyth_temporal.types.live import LIVE_CLOSE_SIGNAL, LIVE_WORKFLOW, LiveChannelInput, LiveTarget

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
        opened: Completes once the stream's workflow exists (the live channel being
            started): nothing is sent before.
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
        opened: Awaitable[None] | None = None,
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
        self._opened = opened

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
        await self._send()

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
            await self._send()
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
        await self._send()

    async def _send(self) -> None:
        if self._opened is not None:
            await self._opened  # the channel's start, begun with the call
        await self._client.flush()


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
    channel = _Channel(live, info.workflow_id or "", message_id) if live else None
    if channel is None:
        client = WorkflowStreamClient.from_within_activity(batch_interval=batches)
    else:
        client = WorkflowStreamClient.create(
            activity.client(), channel.target.workflow_id, batch_interval=batches
        )
    publisher = DeltaPublisher(
        client,
        message_id=message_id,
        step=step,
        attempt=info.attempt,
        run_id=info.workflow_run_id or "",
        # Started beside the provider's request: the first token waits for neither.
        opened=asyncio.create_task(channel.open()) if channel else None,
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
        if channel is not None and over:
            await _quietly(channel.close(), step)


class _Channel:
    """The live workflow a model call streams to: started with the call, closed after."""

    def __init__(self, target: LiveTarget, workflow_id: str, message_id: str) -> None:
        self.target = target
        self._input = LiveChannelInput(agent_workflow_id=workflow_id, message_id=message_id)

    async def open(self) -> None:
        """Start the channel, or join it (a retried attempt writes to the same one)."""
        await activity.client().start_workflow(
            LIVE_WORKFLOW,
            self._input,
            id=self.target.workflow_id,
            task_queue=self.target.task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        )

    async def close(self) -> None:
        """Tell the channel no more text comes."""
        handle = activity.client().get_workflow_handle(self.target.workflow_id)
        await handle.signal(LIVE_CLOSE_SIGNAL)


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
