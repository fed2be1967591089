"""I4: a reader resuming by offset sees every event once, in order, or an explicit gap.

Readers (``Feeds``, the same ones ``AgentClient.events`` uses) read a simulated run
chain: the stream's own state logic (``WorkflowStream``'s log, truncation and poll
answers, called without a workflow), carried across continue-as-new the way
``EventLog.handover`` carries it, and read through ``StreamReader``'s own loop with
its query and history watch swapped for the simulation. Hypothesis interleaves
publishing, continue-as-new, readers starting at any offset (one reading shared by
all, read back for those further behind), readers leaving and resuming from the last
offset they saw, and the run's end. Every reader's events, resumes included, must be
the published ones at consecutive offsets, each once, where a ``gap`` may stand only
for events the run no longer holds.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st
from temporalio.api.common.v1 import Payload
from temporalio.contrib.workflow_streams import (
    PollInput,
    PollResult,
    WorkflowStream,
    WorkflowStreamItem,
)
from temporalio.converter import DataConverter

from smyth_temporal.clients._events import Feeds
from smyth_temporal.clients._stream_reader import StreamReader, _Watch
from smyth_temporal.types.events import (
    EVENTS_TOPIC,
    AgentEvent,
    ContinuedAsNew,
    EventsMissed,
    RunFinished,
    StatusChanged,
)

WORKFLOW_ID = "simulated"
CARRIED = 4
"""Events carried across continue-as-new in the simulation (``CARRIED_EVENTS`` is 1,000)."""

_CONVERTER = DataConverter.default.payload_converter


class SimulatedChain:
    """A run chain's stream: ``WorkflowStream``'s state logic, without a workflow."""

    def __init__(self) -> None:
        stream = WorkflowStream.__new__(WorkflowStream)  # no workflow to register with
        stream._log = []
        stream._base_offset = 0
        stream._publishers = {}
        stream._detaching = False
        stream._topic_types = {}
        self.stream = stream
        self.published: list[AgentEvent] = []
        self.ended = False
        self.version = 0
        self.changed = asyncio.Event()

    def publish(self, event: AgentEvent) -> None:
        event = event.model_copy(update={"offset": len(self.published)})
        self.published.append(event)
        payload: Payload = _CONVERTER.to_payloads([event.model_dump(mode="json")])[0]
        self.stream._log.append(WorkflowStreamItem(topic=EVENTS_TOPIC, data=payload))

    def continue_as_new(self) -> None:
        """As ``EventLog.handover``: the next run holds only the latest ``CARRIED``."""
        self.publish(ContinuedAsNew(generation=2))
        log = self.stream._log
        if len(log) > CARRIED:
            self.stream.truncate(self.stream._base_offset + len(log) - CARRIED)

    def finish(self) -> None:
        self.publish(RunFinished(status="completed"))
        self.ended = True

    def task_completed(self) -> None:
        """A workflow task completed: what the history watch reports."""
        self.version += 1
        self.changed.set()

    def poll(self, offset: int) -> PollResult:
        return self.stream._collect_batch(PollInput(topics=[], from_offset=offset))

    @property
    def base(self) -> int:
        return self.stream._base_offset


class SimulatedReader(StreamReader):
    """``StreamReader``'s reading loop over the simulated chain."""

    def __init__(self, chain: SimulatedChain) -> None:
        self._client = None  # type: ignore[assignment]
        self._converter = _CONVERTER
        self.workflow_id = WORKFLOW_ID
        self._chain = chain

    async def _query(self, offset: int, watch: _Watch | None) -> PollResult | None:
        await asyncio.sleep(0)  # a round trip: the run may move on meanwhile
        return self._chain.poll(offset)

    async def _watch(self, watch: _Watch) -> None:
        seen = -1
        while True:
            if self._chain.ended:
                watch.ended = True
                watch.changed.set()
                return
            if self._chain.version != seen:
                seen = self._chain.version
                watch.changed.set()
            self._chain.changed.clear()
            await self._chain.changed.wait()


@dataclass
class Reader:
    """One logical reader: its first offset, what it saw, and its current stint."""

    after: int | None
    seen: list[AgentEvent] = field(default_factory=list)
    task: asyncio.Task[None] | None = None

    def resume_after(self) -> int | None:
        return self.seen[-1].offset if self.seen else self.after


async def follow(feeds: Feeds, reader: Reader) -> None:
    async for event in feeds.events(WORKFLOW_ID, reader.resume_after()):
        reader.seen.append(event)


Step = tuple[str, int]

steps = st.lists(
    st.one_of(
        st.tuples(st.just("publish"), st.integers(1, 6)),
        st.tuples(st.just("continue_as_new"), st.just(0)),
        st.tuples(st.just("read"), st.integers(-3, 40)),  # a new reader from an offset
        st.tuples(st.just("leave"), st.integers(0, 10)),  # a reader leaves, resumes later
        st.tuples(st.just("resume"), st.integers(0, 10)),
        st.tuples(st.just("settle"), st.integers(1, 5)),
    ),
    max_size=40,
)


async def run(program: list[Step]) -> tuple[SimulatedChain, list[Reader]]:
    chain = SimulatedChain()
    feeds = Feeds(None, lambda _: SimulatedReader(chain))  # type: ignore[arg-type]
    readers: list[Reader] = []

    async def settle(rounds: int = 3) -> None:
        for _ in range(rounds * 5):
            await asyncio.sleep(0)

    def start(reader: Reader) -> None:
        reader.task = asyncio.create_task(follow(feeds, reader))

    for op, arg in program:
        if op == "publish":
            for _ in range(arg):
                chain.publish(StatusChanged(status="thinking"))
            chain.task_completed()
        elif op == "continue_as_new":
            chain.continue_as_new()
            chain.task_completed()
        elif op == "read":
            reader = Reader(after=None if arg < -1 else arg)
            readers.append(reader)
            start(reader)
        elif op == "leave" and readers:
            reader = readers[arg % len(readers)]
            if reader.task is not None and not reader.task.done():
                reader.task.cancel()
                await asyncio.gather(reader.task, return_exceptions=True)
        elif op == "resume" and readers:
            reader = readers[arg % len(readers)]
            if reader.task is None or reader.task.done():
                start(reader)
        await settle(arg if op == "settle" else 1)
    chain.finish()
    chain.task_completed()
    for reader in readers:
        if reader.task is None or reader.task.done():
            start(reader)  # every reader comes back before the end, to read to it
    async with asyncio.timeout(10):
        await asyncio.gather(*(r.task for r in readers if r.task is not None))
    return chain, readers


def check(chain: SimulatedChain, reader: Reader) -> None:
    expected = 0 if reader.after is None else reader.after + 1
    for event in reader.seen:
        if isinstance(event, EventsMissed):
            assert event.first_missing == expected, (reader.after, event)
            assert event.first_available > event.first_missing
            assert event.offset == event.first_available - 1
            # Only events the run no longer holds are ever missed.
            assert event.first_available <= chain.base
            expected = event.first_available
            continue
        assert event.offset == expected, (reader.after, event.offset, expected)
        published = chain.published[event.offset]
        assert event.kind == published.kind
        expected += 1
    # To the run's end: everything after its offset was read or stood in for by a gap.
    assert expected == max(len(chain.published), 0 if reader.after is None else reader.after + 1)


# An example takes about a millisecond: search 25 times wider than the profile says (the
# two faults it found took ~1,500 and ~3,000 examples).
@settings(max_examples=settings.default.max_examples * 25)
@given(steps)
def test_a_reader_resuming_by_offset_sees_every_event_once_in_order_or_a_gap(
    program: list[Step],
) -> None:
    chain, readers = asyncio.run(run(program))
    for reader in readers:
        check(chain, reader)


def test_the_simulation_has_teeth() -> None:
    # A chain whose reader falls behind by more than the run carries, then resumes.
    program: list[Step] = [("read", -2), ("publish", 2), ("leave", 0)]
    program += [("publish", 5), ("continue_as_new", 0), ("publish", 5), ("continue_as_new", 0)]
    program += [("resume", 0), ("read", 0)]
    chain, readers = asyncio.run(run(program))
    for reader in readers:
        check(chain, reader)
    gaps = [e for r in readers for e in r.seen if isinstance(e, EventsMissed)]
    assert gaps and chain.base > 0
