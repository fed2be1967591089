"""The baseline of the side-by-side benches: hand-written temporalio, no smyth at all.

A worker process (``python -m bench._plain_worker``) with two plain workflows, written
the way a temporalio user would write them, with temporalio's defaults (the worker's,
the retry policy's) wherever temporalio has one:

- ``PlainRecovery``: the crash-recovery probe's work as three activities (a quote, a
  2 s lookup, a quote). temporalio has no default timeout, so each activity gets a
  ``start_to_close_timeout`` of 10 s (five times the slow call) and no heartbeat.
- ``PlainWaiter``: one activity (the agent's model turn), then it waits for the
  ``decide`` update (the agent's approval), then runs two activities (the approved
  tool's call and the model's last turn) and returns.
- ``PlainSteps``: ``StepBench``'s loop by hand (``bench.step_latency`` runs it in
  process): a model activity with the whole conversation, then a tool activity.
- ``PlainStreamed``: a model call streaming its text to watchers by hand
  (``bench.streaming``, with ``bench._plain_streaming``).
- ``PlainBookkeeper`` (``bench._plain_bookkeeping``): ``PlainWaiter`` plus an agent's
  visibility writes, deadline timer and event stream, written by hand.

Every activity writes a JSON-lines ledger entry (``tool``, ``attempt``, ``pid``) like
``tests.helpers.worker_process`` does, so the benches read both kinds of worker the same way.
The parent side is ``spawn_plain_worker``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from temporalio import activity, workflow
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client
from temporalio.contrib.workflow_streams import WorkflowStream
from temporalio.worker import Worker

if TYPE_CHECKING:
    from tests.helpers.worker_process import WorkerProcess

# The child imports temporalio only (not smyth_temporal), so its idle memory is a plain
# temporalio worker's.
READY = "READY"

LEDGER_ENV = "SMYTH_PLAIN_LEDGER"

PLAIN_TIMEOUT = timedelta(seconds=10)
"""The start-to-close timeout of the baseline's activities (temporalio has no default)."""


def _record(event: str, **fields: object) -> None:
    path = os.environ.get(LEDGER_ENV)
    if not path:
        return
    entry = {"tool": event, "attempt": activity.info().attempt, "pid": os.getpid(), **fields}
    with Path(path).open("a") as ledger:
        ledger.write(json.dumps(entry) + "\n")


@activity.defn
async def plain_quote(symbol: str) -> str:
    """A fast quote."""
    _record("plain_quote", symbol=symbol)
    return f"{symbol} 101.5"


@activity.defn
async def plain_lookup(symbol: str) -> str:
    """A 2 s lookup (the call in flight when the bench kills the worker)."""
    _record("plain_lookup.start", symbol=symbol)
    await asyncio.sleep(2.0)
    _record("plain_lookup", symbol=symbol)
    return f"{symbol} looked up"


@workflow.defn
class PlainRecovery:
    """A quote, a 2 s lookup, a quote: each an activity with a 10 s timeout."""

    @workflow.run
    async def run(self, symbol: str) -> str:
        first = await workflow.execute_activity(
            plain_quote, symbol, start_to_close_timeout=PLAIN_TIMEOUT
        )
        looked = await workflow.execute_activity(
            plain_lookup, symbol, start_to_close_timeout=PLAIN_TIMEOUT
        )
        last = await workflow.execute_activity(
            plain_quote, "GLOBEX", start_to_close_timeout=PLAIN_TIMEOUT
        )
        return f"{first} | {looked} | {last}"


@activity.defn
async def plain_act(symbol: str) -> str:
    """A fast call with a side effect (the approved tool's)."""
    _record("plain_act", symbol=symbol)
    return f"sold {symbol}"


@workflow.defn
class PlainWaiter:
    """One activity, a wait for the ``decide`` update, then two more activities."""

    def __init__(self) -> None:
        self._decision: str | None = None

    @workflow.run
    async def run(self, symbol: str) -> str:
        await workflow.execute_activity(plain_quote, symbol, start_to_close_timeout=PLAIN_TIMEOUT)
        await workflow.wait_condition(lambda: self._decision is not None)
        done = await workflow.execute_activity(
            plain_act, symbol, start_to_close_timeout=PLAIN_TIMEOUT
        )
        last = await workflow.execute_activity(
            plain_quote, symbol, start_to_close_timeout=PLAIN_TIMEOUT
        )
        return f"{self._decision}: {done} | {last}"

    @workflow.update
    def decide(self, decision: str) -> str:
        self._decision = decision
        return decision


STEP_CALLS: list[float] = []
"""When each ``plain_model`` call arrived (``time.perf_counter``), for the step bench."""


@activity.defn
async def plain_model(conversation: list[str]) -> str:
    """A scripted model: a tool call until the conversation has ``steps`` of them, then done.

    The first message is the number of steps to take; it gets the whole conversation,
    as the agent's model activity does.
    """
    STEP_CALLS.append(time.perf_counter())
    steps = int(conversation[0])
    return "done" if len(conversation) > 2 * steps else f"echo step {len(conversation) // 2 + 1}"


@activity.defn
async def plain_tool(text: str) -> str:
    """Return the text (the step bench's tool)."""
    return text


@workflow.defn
class PlainSteps:
    """An agent loop written by hand: a model activity, then a tool activity, until done.

    What ``bench.step_latency`` times beside ``StepBench``: one model call with the
    whole conversation and one tool call a step, each an activity with a 10 s timeout.
    """

    @workflow.run
    async def run(self, steps: int) -> int:
        conversation = [str(steps)]
        turns = 0
        while True:
            turns += 1
            answer = await workflow.execute_activity(
                plain_model, conversation, start_to_close_timeout=PLAIN_TIMEOUT
            )
            if answer == "done":
                return turns
            conversation.append(answer)
            result = await workflow.execute_activity(
                plain_tool, answer, start_to_close_timeout=PLAIN_TIMEOUT
            )
            conversation.append(result)


PLAIN_STREAM_MODEL = "plain_stream_model"
"""The activity ``PlainStreamed`` calls: ``bench._plain_streaming`` defines it."""


@workflow.defn
class PlainStreamed:
    """A model call whose text watchers read as it is written, by hand.

    One activity (``PLAIN_STREAM_MODEL``) streams a completion and publishes its text to
    this workflow's ``workflow_streams`` stream (topic ``text``), where a client
    subscribes: what ``bench.streaming`` times beside a streamed agent turn.
    """

    def __init__(self) -> None:
        self._stream = WorkflowStream()

    @workflow.run
    async def run(self, prompt: str) -> str:
        answer: str = await workflow.execute_activity(
            PLAIN_STREAM_MODEL, prompt, result_type=str, start_to_close_timeout=PLAIN_TIMEOUT
        )
        return answer


async def _serve(args: argparse.Namespace) -> None:
    os.environ[LEDGER_ENV] = args.ledger
    client = await Client.connect(args.address)
    # Here, not at the top: that module imports this one's activities.
    from bench._plain_bookkeeping import PlainBookkeeper

    identity = f"plain-worker-{os.getpid()}"
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    worker = Worker(
        client,
        task_queue=args.task_queue,
        workflows=[PlainRecovery, PlainWaiter, PlainBookkeeper],
        activities=[plain_quote, plain_lookup, plain_act],
        identity=identity,
        graceful_shutdown_timeout=timedelta(seconds=1),
    )
    kinds = (TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY)
    async with worker:
        while True:
            listed = [
                await client.workflow_service.describe_task_queue(
                    DescribeTaskQueueRequest(
                        namespace=client.namespace,
                        task_queue=TaskQueue(name=args.task_queue),
                        task_queue_type=kind,
                    )
                )
                for kind in kinds
            ]
            if all(any(p.identity == identity for p in r.pollers) for r in listed):
                break
            await asyncio.sleep(0.05)
        print(READY, flush=True)
        await stop.wait()


async def spawn_plain_worker(
    *, address: str, task_queue: str, ledger: Path, log: Path, ready_timeout: float = 60.0
) -> WorkerProcess:
    """Start a baseline worker process and wait until it polls; the caller stops it."""
    from tests.helpers.worker_process import start_until_ready

    args = ("--address", address, "--task-queue", task_queue, "--ledger", str(ledger))
    return await start_until_ready("bench._plain_worker", args, log=log, timeout=ready_timeout)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench._plain_worker")
    parser.add_argument("--address", required=True)
    parser.add_argument("--task-queue", required=True)
    parser.add_argument("--ledger", required=True)
    asyncio.run(_serve(parser.parse_args(argv)))
    sys.stdout.flush()
    os._exit(0)  # temporalio's Rust threads can abort the interpreter's teardown


if __name__ == "__main__":
    # Imported under its real name, so the sandbox can re-import the workflows.
    from bench._plain_worker import main as _main

    _main()
