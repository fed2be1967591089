"""A worker process serving ``Payer``, so a test can SIGKILL it in the middle of a transfer.

Run from the repository root (``start_until_ready`` does)::

    .venv/bin/python -m tests.helpers.reconcile_worker --address HOST:PORT \
        --task-queue Q --ledger /tmp/ledger.jsonl

Its model calls ``transfer(amount=5, hang=True)`` at step 1 and then answers with the
tool's result; it prints ``READY`` once the server sees it polling.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

from temporalio.client import Client
from temporalio.worker import Worker

from smyth_temporal import configure_logging
from smyth_temporal.models import ModelRequest, ModelResponse
from smyth_temporal.plugin import SmythPlugin
from smyth_temporal.testing import ScriptedModel, reply, tool_call
from tests.helpers.reconcile_agents import Payer
from tests.helpers.trading import LEDGER_ENV
from tests.helpers.worker_process import (
    READY,
    WorkerProcess,
    _wait_until_polling,
    start_until_ready,
)

__all__ = ["spawn_payer"]


def _tool_results(request: ModelRequest) -> ModelResponse:
    return reply(" | ".join(m.content or "" for m in request.messages if m.role == "tool"))


async def _serve(args: argparse.Namespace) -> None:
    os.environ[LEDGER_ENV] = args.ledger
    configure_logging("WARNING")
    model = ScriptedModel([tool_call("transfer", amount=5, hang=True), _tool_results])
    client = await Client.connect(args.address, plugins=[SmythPlugin(model=model)])
    identity = f"reconcile-worker-{os.getpid()}"
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    worker = Worker(
        client,
        task_queue=args.task_queue,
        workflows=[Payer],
        identity=identity,
        graceful_shutdown_timeout=timedelta(seconds=1),
    )
    async with worker:
        await asyncio.wait_for(_wait_until_polling(client, args.task_queue, identity), 60)
        print(READY, flush=True)
        await stop.wait()


async def spawn_payer(address: str, task_queue: str, ledger: Path, log: Path) -> WorkerProcess:
    """Start a ``Payer`` worker process and wait for its ``READY``; the caller stops it."""
    args = ["--address", address, "--task-queue", task_queue, "--ledger", str(ledger)]
    return await start_until_ready("tests.helpers.reconcile_worker", args, log=log, timeout=60)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.helpers.reconcile_worker")
    parser.add_argument("--address", required=True)
    parser.add_argument("--task-queue", required=True)
    parser.add_argument("--ledger", required=True)
    asyncio.run(_serve(parser.parse_args(argv)))
    sys.stdout.flush()
    os._exit(0)  # as tests.helpers.worker_process: temporalio's threads may outlive us


if __name__ == "__main__":
    main()
