"""How long an event takes from publishing to a reader: update polls against query reads.

From the repository root::

    .venv/bin/python -m bench.event_latency [--events 60] [--gap 0.15]

One dev server, one worker, one ``Pinger`` workflow hosting a ``workflow_streams``
stream: every ``ping`` signal publishes one item. A reader follows the stream while
the bench sends ``--events`` pings, one every ``--gap`` seconds, and notes when each
item arrives. Latency = arrival - the moment the signal was sent (the signal's round
trip and the workflow task are in both figures). Two readers, one after the other:

- ``update``: ``WorkflowStreamClient.subscribe``, a long-poll update per read (what
  ``AgentClient.events`` used up to 0.7.0, with its 50 ms cooldown);
- ``query``: ``StreamReader`` (0.8.0), a stream query after each workflow task the
  run's history long poll reports.

Printed: median, p90 and max per reader, and the updates each left in history.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import timedelta

from temporalio import workflow
from temporalio.client import Client
from temporalio.contrib.workflow_streams import WorkflowStream, WorkflowStreamClient
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    from smyth_temporal.clients._stream_reader import StreamReader
    from smyth_temporal.testing import start_dev_environment


@workflow.defn(name="bench.Pinger")
class Pinger:
    """Publishes one item per ``ping`` until ``stop``."""

    @workflow.init
    def __init__(self) -> None:
        self._stream = WorkflowStream()
        self._topic = self._stream.topic("pings")
        self._stopped = False

    @workflow.signal
    def ping(self, n: int) -> None:
        self._topic.publish(n)

    @workflow.signal
    def stop(self) -> None:
        self._stopped = True

    @workflow.run
    async def run(self) -> None:
        await workflow.wait_condition(lambda: self._stopped)
        self._stream.detach_pollers()
        await workflow.wait_condition(workflow.all_handlers_finished)


async def _by_update(client: Client, workflow_id: str) -> AsyncIterator[int]:
    stream = WorkflowStreamClient.create(client, workflow_id)
    async for item in stream.subscribe(
        ["pings"], from_offset=0, poll_cooldown=timedelta(milliseconds=50)
    ):
        yield int(item.data)


async def _by_query(client: Client, workflow_id: str) -> AsyncIterator[int]:
    async for batch in StreamReader(client, workflow_id).read(0):
        for item in batch.items:
            yield int(item.data)


async def _measure(
    client: Client,
    task_queue: str,
    read: Callable[[Client, str], AsyncIterator[int]],
    events: int,
    gap: float,
) -> tuple[list[float], int]:
    workflow_id = f"pinger-{uuid.uuid4().hex[:8]}"
    handle = await client.start_workflow(Pinger.run, id=workflow_id, task_queue=task_queue)
    sent: dict[int, float] = {}
    arrived: dict[int, float] = {}

    async def follow() -> None:
        async for n in read(client, workflow_id):
            arrived[n] = time.perf_counter()
            if len(arrived) == events:
                return

    reader = asyncio.create_task(follow())
    await asyncio.sleep(0.5)  # the reader is reading
    for n in range(events):
        sent[n] = time.perf_counter()
        await handle.signal(Pinger.ping, n)
        await asyncio.sleep(gap)
    await asyncio.wait_for(reader, 30)
    await handle.signal(Pinger.stop)
    await handle.result()
    history = await handle.fetch_history()
    updates = sum(
        e.HasField("workflow_execution_update_accepted_event_attributes") for e in history.events
    )
    return [(arrived[n] - sent[n]) * 1000 for n in range(events)], updates


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=60)
    parser.add_argument("--gap", type=float, default=0.15)
    args = parser.parse_args()
    env = await start_dev_environment()
    async with env:
        task_queue = f"bench-latency-{uuid.uuid4().hex[:6]}"
        async with Worker(env.client, task_queue=task_queue, workflows=[Pinger]):
            for name, read in (("update", _by_update), ("query", _by_query)):
                await _measure(env.client, task_queue, read, 5, args.gap)  # warm-up
                latencies, updates = await _measure(
                    env.client, task_queue, read, args.events, args.gap
                )
                latencies.sort()
                p90 = latencies[int(len(latencies) * 0.9) - 1]
                print(
                    f"{name:7} median {statistics.median(latencies):6.1f} ms  "
                    f"p90 {p90:6.1f} ms  max {latencies[-1]:6.1f} ms  "
                    f"updates in history {updates}"
                )


if __name__ == "__main__":
    asyncio.run(main())
