"""Reading an agent run's event stream, shared by every reader in this process.

A reader must never take the capacity a run needs for its approval decisions, session
messages and interrupts: Temporal admits only a few in-flight updates per workflow (10
by default), and ``WorkflowStreamClient.subscribe`` holds one poll update open per
reader. So runs are read by query, woken by their history (``StreamReader``), and a
process reads each run once whatever its readers' offsets: a ``Feed`` reads on behalf
of every local reader, keeps the events they have not all read yet, and reads further
back once for a reader that resumes from an earlier offset than any other.

Events a run no longer holds (it carries its latest ``CARRIED_EVENTS`` across
continue-as-new) come to a reader as one ``gap`` event (``EventsMissed``) in their
place, never as a silent jump.

A streamed turn's text is not in the run's stream: its ``turn_started`` names the turn's
live channel (``types.live``), which the feed starts (a turn nobody reads has none) and
follows until the channel ends, merging its ``text_delta`` events in as they come. The
turn's ``message`` event (and whatever follows it) waits for the channel's last delta,
so a reader always gets the text before the message it adds up to. That wait is one
read: once the message is in, all its text is in the channel, so the feed reads the
rest at once instead of waiting for the closed channel to end its poll. The turns a
feed reads back only to find the one its reader resumes in are over for that reader:
their channels are not read at all.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Callable
from datetime import timedelta

import structlog
from temporalio.client import Client
from temporalio.contrib.workflow_streams import WorkflowStreamClient, WorkflowStreamItem
from temporalio.service import RPCError, RPCStatusCode

from smyth_temporal._live import close_channel, start_channel
from smyth_temporal.clients._base import rpc_error
from smyth_temporal.clients._stream_reader import StreamBatch, StreamGone, StreamReader
from smyth_temporal.exceptions import AgentNotFoundError, ClientError
from smyth_temporal.types.events import (
    EVENTS_TOPIC,
    AgentEvent,
    EventsMissed,
    MessageCompleted,
    RunFinished,
    TextAssembler,
    TextDelta,
    TextReset,
    TurnFinished,
    TurnStarted,
    parse_event,
)
from smyth_temporal.types.live import LiveChannelInput, LiveTarget

__all__ = ["LIVE_DRAIN", "POLL_COOLDOWN", "Feed", "Feeds"]

POLL_COOLDOWN = timedelta(milliseconds=50)
"""Pause between two polls of a caught-up live channel: each poll is an update in the
channel's history, so this bounds what following one costs (20 polls a second)."""

LIVE_DRAIN = timedelta(seconds=5)
"""How long a turn's ``message`` waits for the end of its live channel (the model call
closed it before returning; a channel that does not end is a view lost, not a wait)."""

_LOOKBACK = 16
"""Events a feed reads before a reader's offset, to find the turn it resumes in."""

_LIVE_RETRIES = 5
"""Times a feed reads a live channel again from where it was after losing it."""

_LIVE_RETRY = 0.1
"""Seconds before reading a lost live channel again (doubling with each try)."""

_CHANNEL_END = 2**62
"""An offset past any channel's end: a drain reads everything from where it is."""

_log = structlog.get_logger("smyth_temporal.client")


class Feed:
    """One reading of a run's events, shared by any number of local readers.

    Args:
        client: A Temporal client with the SDK's data converter.
        workflow_id: The agent's workflow id.
        start: The first offset to read.
        reader: How the run's stream is read (default: a ``StreamReader``).
    """

    def __init__(
        self,
        client: Client,
        workflow_id: str,
        start: int,
        reader: StreamReader | None = None,
        *,
        after: int | None = None,
    ) -> None:
        self.workflow_id = workflow_id
        self.start = start
        self.readers = 0
        self.after = start - 1 if after is None else after
        """The first reader's offset: a turn whose message is at or before it is over
        for that reader, so its live channel is not read (its text would be skipped)."""
        self.skipped_through = -1
        """The latest message whose live channel was not read: a reader resuming before
        it needs a reading of its own."""
        self._client = client
        self._events: list[AgentEvent] = []
        self._offsets: list[int] = []
        self._live: list[bool] = []
        """Whether each event came from a live channel (its offset is the one before)."""
        self._front = 0
        """Events put before the first one read (``backfill``): readers keep their place."""
        self._last = start - 1
        """The offset of the latest event of the run's own stream."""
        self._channels: dict[str, _LiveChannel] = {}
        """The live channels followed, by message id."""
        self._error: Exception | None = None
        self._done = False
        self._changed = asyncio.Event()
        self._backfilling = asyncio.Lock()
        self._opened = asyncio.Event()
        """Set once the feed's first read is in (or it ended before one)."""
        self._reader = reader or StreamReader(client, workflow_id)
        self._task = asyncio.create_task(self._pump())

    async def read(self, after: int) -> AsyncIterator[AgentEvent]:
        """Every event with an offset above ``after``, in order, until the run ends.

        Also the text deltas that followed the event at ``after``: a reader resuming
        mid-message reads its text again from the start, after a ``text_reset``. Events
        the run no longer holds come as one ``gap`` event in their place.

        Raises:
            AgentNotFoundError: No run has that workflow id.
            ClientError: The run has no event stream (it began before 0.3.0).
            ConfigurationError: A payload the run refers to cannot be read from the
                payload store (another store, or a file removed).
        """
        # A place counted from the first event read, so events put before it later
        # (a backfill for another reader) do not move it.
        place = bisect.bisect_left(self._offsets, after) - self._front
        restarted: set[str | None] = set()
        while True:
            while place + self._front < len(self._events):
                index = place + self._front
                event, live = self._events[index], self._live[index]
                place += 1
                if isinstance(event, EventsMissed):
                    if event.offset > after:  # some of what it misses came after ``after``
                        yield event.model_copy(
                            update={"first_missing": max(event.first_missing, after + 1)}
                        )
                    continue
                if not live:
                    if event.offset > after:
                        yield event
                    continue
                if event.offset < after:
                    continue  # text of a turn before the reader's offset
                if event.offset == after and event.message_id not in restarted:
                    restarted.add(event.message_id)
                    if isinstance(event, TextDelta):
                        yield _restart(event)
                yield event
            if self._done:
                if self._error is not None:
                    raise self._error
                return
            self._changed.clear()
            await self._changed.wait()

    async def backfill(self, start: int) -> None:
        """Read the events from ``start`` up to the first one read, and put them first.

        For a reader resuming further back than every other: one read of the range
        the feed lacks, instead of a second reading of the run. Turns that old are
        over, so their live channels are not followed.
        """
        await self._opened.wait()  # the feed's own first read decides where it starts
        async with self._backfilling:
            if start >= self.start:
                return
            batch = await self._reader.read_range(start, self.start)
            if batch.first_missing is not None and batch.first_available > self.start:
                # Gone from the run since the feed read them: the feed still has them.
                batch = dataclasses.replace(batch, first_available=self.start)
            events = [e for e, _ in self._parsed(batch)]
            if events and isinstance(events[-1], EventsMissed):
                first = self._events[0] if self._events else None
                if isinstance(first, EventsMissed):  # one gap, not two in a row
                    self._events[0] = first.model_copy(
                        update={"first_missing": events[-1].first_missing}
                    )
                    events.pop()
            self._events[:0] = events
            self._offsets[:0] = [e.offset for e in events]
            self._live[:0] = [False] * len(events)
            self._front += len(events)
            self.start = start

    def close(self) -> None:
        """Stop reading (the last reader left)."""
        self._task.cancel()

    def _append(self, event: AgentEvent, *, live: bool) -> None:
        if not live:
            self._last = event.offset
        self._events.append(event)
        self._offsets.append(event.offset)
        self._live.append(live)
        self._changed.set()

    def _parsed(self, batch: StreamBatch) -> list[tuple[AgentEvent, bool]]:
        """A batch's events (and its gap first, if any); ``True`` for a gap."""
        events: list[tuple[AgentEvent, bool]] = []
        if batch.first_missing is not None:
            gap = EventsMissed(
                offset=batch.first_available - 1,
                first_missing=batch.first_missing,
                first_available=batch.first_available,
            )
            events.append((gap, True))
        events += [(_event(item), False) for item in batch.items if item.topic == EVENTS_TOPIC]
        return events

    async def _pump(self) -> None:
        try:
            async for batch in self._reader.read(self.start):
                if not self._opened.is_set():
                    # A start beyond the stream's end moves back to it (the feed holds
                    # everything from there, as it reads); read-backs wait for this.
                    if not batch.items and batch.first_missing is None:
                        self.start = min(self.start, batch.next_offset)
                        self._last = min(self._last, self.start - 1)
                    self._opened.set()
                for event, gap in self._parsed(batch):
                    if gap:
                        _log.warning(
                            "events.gap",
                            workflow_id=self.workflow_id,
                            first_missing=batch.first_missing,
                            first_available=batch.first_available,
                        )
                    else:
                        await self._channels_before(event)
                    self._append(event, live=False)
        except StreamGone as exc:
            self._error = (
                AgentNotFoundError(f"no agent run with workflow id {self.workflow_id!r}")
                if exc.not_found
                else ClientError(
                    f"agent {self.workflow_id} has no event stream (it began before 0.3.0, "
                    f"or is not an agent): {exc}"
                )
            )
        except RPCError as exc:
            self._error = rpc_error(
                exc,
                not_found=AgentNotFoundError(f"no agent run with workflow id {self.workflow_id!r}"),
            )
        except Exception as exc:
            # Never end quietly: a reader must tell "the run ended" from "cannot read"
            # (a payload store this process cannot see, say).
            self._error = exc
            _log.warning("events.read_failed", workflow_id=self.workflow_id, error=str(exc))
        finally:
            self._opened.set()
            for channel in self._channels.values():
                channel.cancel()
            self._done = True
            self._changed.set()

    async def _channels_before(self, event: AgentEvent) -> None:
        """Follow the live channel a turn opens; let its text in before its message."""
        if isinstance(event, TurnStarted):
            if event.live is not None and event.message_id is not None:
                channel = LiveChannelInput(
                    agent_workflow_id=self.workflow_id, message_id=event.message_id
                )
                self._channels[event.message_id] = _LiveChannel(
                    self._client, event.live, channel, self._add_live
                )
            return
        if isinstance(event, RunFinished):
            ended = list(self._channels)
        elif isinstance(event, MessageCompleted | TurnFinished) and event.message_id:
            ended = [event.message_id] if event.message_id in self._channels else []
            if ended and event.offset <= self.after:
                # A turn read back for the lookback only: every reader skips its text.
                self._channels.pop(event.message_id).cancel()
                self.skipped_through = max(self.skipped_through, event.offset)
                return
        else:
            return
        for message_id in ended:
            await self._channels.pop(message_id).finish(event)

    def _add_live(self, data: object) -> None:
        self._append(parse_event(data, offset=self._last), live=True)


class _LiveChannel:
    """A turn's live channel as a feed follows it: started, read to its end, closed.

    A feed that reads a turn only once it is over (a reader resuming after it) starts
    no channel: it reads the one an earlier reader started, if there is one.

    A read lost midway is taken up again from the next offset: the channel ends in the
    workflow task that takes its close, and a signal coming meanwhile (a second close)
    fails that task, and with it the poll it answered ("unexpected workflow task
    failure"), though the channel lives on. A message whose text the channel did not
    give whole (lost for good, or a batch the model call could not send) is told again
    whole from the turn's message event, after a ``text_reset``: a reader never sees
    it cut short.
    """

    def __init__(
        self,
        client: Client,
        target: LiveTarget,
        input: LiveChannelInput,
        add: Callable[[object], None],
    ) -> None:
        self._client = client
        self._target = target
        self._input = input
        self._add = add
        self._over = asyncio.Event()
        self._ready = asyncio.Event()
        self._read = False  # read to its end
        self._text = TextAssembler()  # what readers were told of the message
        self._attempt: int | None = None  # the latest attempt whose text came
        self._next = 0  # the channel's next offset to read
        self._closing: asyncio.Task[None] | None = None  # a close sent after the last read
        self._started = False  # this feed started the channel (it came before the turn ended)
        self.task = asyncio.create_task(self._follow())

    def cancel(self) -> None:
        """Stop following (the feed ends)."""
        self.task.cancel()

    async def finish(self, end: AgentEvent | None = None) -> None:
        """The turn is over (``end`` says how): close the channel, read the rest, stop."""
        self._over.set()
        wait = LIVE_DRAIN.total_seconds()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._ready.wait(), wait)  # not closed before it starts
            if (isinstance(end, MessageCompleted) or not self._started) and await self._drained():
                # Read to its end already: closing it is for the channel's sake only.
                if self._started:
                    self._closing = asyncio.create_task(self._close())
            else:
                # The model call is over, its last batch sent: the channel can end (the
                # call closed it already unless it ended before this feed started it).
                await self._close()
                await asyncio.wait_for(asyncio.shield(self.task), wait)
        self.task.cancel()
        if isinstance(end, MessageCompleted) and self._attempt is not None:
            told = self._text.text(end.message_id or "")
            if told != (end.message.content or ""):
                self._retell(end)

    async def _drained(self) -> bool:
        """Read what the channel holds past what came, at once; ``False`` if it cannot.

        Once a turn's message is in, every batch of its text is in the channel: the
        model call's last batch was delivered before the call returned. So one query
        reads the rest, instead of waiting for the closed channel to end the poll in
        flight (an update's failure, a describe, then a read of the ended run: about a
        hundred milliseconds before the message, and with it the first text of a turn
        whose model streams none, reached the reader).
        """
        if self._read:
            return True
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task  # no item is taken after this: the query reads from ``_next``
        reader = StreamReader(self._client, self._target.workflow_id)
        try:
            read = reader.read_range(self._next, _CHANNEL_END)
            batch = await asyncio.wait_for(read, LIVE_DRAIN.total_seconds())
        except StreamGone as exc:
            if exc.not_found:  # no channel: nobody read the turn while it was written
                return True
            error: Exception = exc
        except Exception as exc:  # not started yet, no worker: a view lost, never the feed's
            error = exc
        else:
            for item in batch.items:
                if item.topic == EVENTS_TOPIC:
                    self._take(item)
            self._read = True
            return True
        _log.info(
            "events.live_drain_fell_back", workflow_id=self._target.workflow_id, error=str(error)
        )
        self.task = asyncio.create_task(self._follow())  # follow it to its end instead
        return False

    async def _close(self) -> None:
        with contextlib.suppress(RPCError):
            await close_channel(self._client, self._target.workflow_id)

    def _retell(self, end: MessageCompleted) -> None:
        """Tell the message's whole text again, after a ``text_reset``.

        The text its channel gave is not the message: the channel was lost before its
        end, or a batch never reached it (the model call failed to send it).
        """
        _log.warning(
            "events.live_retold",
            workflow_id=self._target.workflow_id,
            message=end.message_id,
            read=self._read,
        )
        about = {"message_id": end.message_id, "step": end.step, "run_id": end.run_id}
        attempt = self._attempt or 1
        self._add(TextReset(attempt=attempt, **about).model_dump())
        if end.message.content:
            self._add(TextDelta(text=end.message.content, attempt=attempt, **about).model_dump())

    async def _follow(self) -> None:
        try:
            # The feed reads the rest of its batch first: a turn over by then needs none.
            if not self._over.is_set():
                await start_channel(self._client, self._target, self._input)
                self._started = True
        except RPCError as exc:
            _log.warning("events.live_failed", workflow_id=self._target.workflow_id, error=str(exc))
            return
        finally:
            self._ready.set()
        tries = 0
        while True:
            reached = self._next
            stream = WorkflowStreamClient.create(self._client, self._target.workflow_id)
            try:
                async for item in stream.subscribe(
                    [EVENTS_TOPIC], from_offset=self._next, poll_cooldown=POLL_COOLDOWN
                ):
                    self._take(item)
            except RPCError as exc:
                if exc.status == RPCStatusCode.NOT_FOUND:  # no channel: nobody read the turn
                    return
                error: Exception = exc
            except Exception as exc:  # a view lost: never the feed's failure
                error = exc
            else:
                self._read = True
                return
            tries = 1 if self._next > reached else tries + 1
            if tries > _LIVE_RETRIES:
                _log.warning(
                    "events.live_failed", workflow_id=self._target.workflow_id, error=str(error)
                )
                return
            _log.info(
                "events.live_retried",
                workflow_id=self._target.workflow_id,
                offset=self._next,
                error=str(error),
            )
            await asyncio.sleep(_LIVE_RETRY * 2 ** (tries - 1))

    def _take(self, item: WorkflowStreamItem[object]) -> None:
        self._next = item.offset + 1
        event = parse_event(item.data)
        if isinstance(event, TextDelta | TextReset):
            self._text.add(event)
            self._attempt = max(self._attempt or 0, event.attempt)
        self._add(item.data)


def _event(item: WorkflowStreamItem[object]) -> AgentEvent:
    return parse_event(item.data, offset=item.offset)


def _restart(delta: TextDelta) -> TextReset:
    """The ``text_reset`` a resuming reader gets before a message's text read again."""
    return TextReset(
        offset=delta.offset,
        run_id=delta.run_id,
        step=delta.step,
        message_id=delta.message_id,
        attempt=delta.attempt,
    )


class Feeds:
    """The feeds of one client, by workflow id: one reading per run, however many readers.

    Args:
        client: A Temporal client with the SDK's data converter.
        reader: How a run's stream is read, given its workflow id (default: a
            ``StreamReader``; tests read a simulated stream).
    """

    def __init__(self, client: Client, reader: Callable[[str], StreamReader] | None = None) -> None:
        self._client = client
        self._reader = reader
        """How a run's stream is read, by workflow id (default: a ``StreamReader``)."""
        self._feeds: dict[str, Feed] = {}

    async def events(self, workflow_id: str, after: int | None) -> AsyncIterator[AgentEvent]:
        """The run's events after offset ``after`` (``None``: from the first)."""
        after = -1 if after is None else after
        # From a few events back: a reader resuming mid-turn needs the feed to see the
        # ``turn_started`` that named the turn's live channel (readers skip the rest).
        start = max(after + 1 - _LOOKBACK, 0)
        feed = self._feeds.get(workflow_id)
        if feed is None or after < feed.skipped_through:
            reader = self._reader(workflow_id) if self._reader else None
            feed = Feed(self._client, workflow_id, start, reader, after=after)
            # A reader resuming in a turn whose text the shared feed skipped reads alone.
            self._feeds.setdefault(workflow_id, feed)
        feed.readers += 1
        try:
            # A reader further back than the feed has read: the feed reads back once.
            await feed.backfill(start)
            async for event in feed.read(after):
                yield event
        finally:
            feed.readers -= 1
            if feed.readers == 0:
                feed.close()
                if self._feeds.get(workflow_id) is feed:
                    del self._feeds[workflow_id]
