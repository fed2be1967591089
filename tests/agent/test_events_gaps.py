"""Events a run no longer holds come to a reader as an explicit ``gap``, never silently.

A run carries its latest ``CARRIED_EVENTS`` events across continue-as-new; a reader
resuming from further back (or reading that far behind) gets one ``gap`` event naming
what is gone and where the stream goes on, from ``AgentClient.events`` and
``smyth watch`` alike.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest
from temporalio.client import Client
from temporalio.worker import Worker

from smyth_temporal import AgentClient
from smyth_temporal.agent.events import CARRIED_EVENTS
from smyth_temporal.cli.main import main
from smyth_temporal.types import AgentEvent, EventsMissed
from tests.helpers.gap_workflows import Chatterbox, ChatterInput

COUNT = CARRIED_EVENTS + 200
FIRST_RUN = COUNT + 1  # its events, then continued_as_new
OLDEST_KEPT = FIRST_RUN - CARRIED_EVENTS


@pytest.fixture
async def chatter(client: Client, task_queue: str) -> AsyncIterator[str]:
    """A finished Chatterbox chain; the worker stays for queries of its last run."""
    async with Worker(client, task_queue=task_queue, workflows=[Chatterbox]):
        workflow_id = f"chatter-{uuid.uuid4().hex[:8]}"
        handle = await client.start_workflow(
            Chatterbox.run, ChatterInput(COUNT), id=workflow_id, task_queue=task_queue
        )
        await handle.result()
        yield workflow_id


async def collect(agents: AgentClient, workflow_id: str, after: int | None) -> list[AgentEvent]:
    return [event async for event in agents.events(workflow_id, after=after)]


def assert_gapless_from(events: list[AgentEvent], first: int) -> None:
    """Offsets from ``first`` on, each once, with a gap standing for any that are gone."""
    expected = first
    for event in events:
        if isinstance(event, EventsMissed):
            assert event.first_missing == expected
            expected = event.first_available
            assert event.offset == expected - 1
            continue
        assert event.offset == expected
        expected += 1
    assert events[-1].kind == "run_finished"


@pytest.mark.parametrize(
    ("after", "gap"), [(None, 0), (50, 51), (OLDEST_KEPT - 2, OLDEST_KEPT - 1)]
)
async def test_a_reader_from_before_the_carried_events_gets_an_explicit_gap(
    agents: AgentClient, chatter: str, after: int | None, gap: int
) -> None:
    events = await collect(agents, chatter, after)

    [missed] = [e for e in events if isinstance(e, EventsMissed)]
    assert events[0] == missed
    assert (missed.first_missing, missed.first_available) == (gap, OLDEST_KEPT)
    assert_gapless_from(events, 0 if after is None else after + 1)
    assert events[-2].kind == "run_started" and events[-3].kind == "continued_as_new"


async def test_a_reader_from_the_carried_events_on_gets_no_gap(
    agents: AgentClient, chatter: str
) -> None:
    for after in (OLDEST_KEPT - 1, OLDEST_KEPT + 10):
        events = await collect(agents, chatter, after)
        assert not [e for e in events if isinstance(e, EventsMissed)]
        assert_gapless_from(events, after + 1)


async def test_a_reader_further_back_than_a_shared_reading_gets_the_gap_and_all_the_rest(
    agents: AgentClient, chatter: str
) -> None:
    # A first reader holds the run's one reading open from a late offset; a second one
    # from the start is served by that reading, read back once.
    late = agents.events(chatter, after=OLDEST_KEPT + 500)
    first = await anext(late)
    everything = await collect(agents, chatter, None)
    rest = [first] + [event async for event in late]

    assert_gapless_from(everything, 0)
    assert isinstance(everything[0], EventsMissed) and everything[0].first_missing == 0
    assert rest == [e for e in everything if e.offset > OLDEST_KEPT + 500]


@pytest.mark.usefixtures("reset_structlog")
async def test_watch_shows_the_gap(
    capsys: pytest.CaptureFixture[str], address: str, chatter: str
) -> None:
    capsys.readouterr()
    code = await asyncio.to_thread(main, ["watch", chatter, "--after", "10", "--address", address])
    out = capsys.readouterr().out

    assert code == 0
    assert f"events 11 to {OLDEST_KEPT - 1} are gone" in out
    assert f"going on from {OLDEST_KEPT}" in out
