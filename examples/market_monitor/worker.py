"""Run a worker for the market monitor.

    python -m examples.market_monitor.worker                   # scripted model, offline
    OPENAI_API_KEY=... python -m examples.market_monitor.worker # a real model

It reads TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE and SMYTH_TASK_QUEUE like every smyth
process; ``smyth worker examples.market_monitor.workflows:MarketMonitor`` does the same.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os

from temporalio.client import Client
from temporalio.worker import Worker

from examples.market_monitor.script import scripted_model
from examples.market_monitor.workflows import MarketMonitor
from smyth_temporal import Settings, SmythPlugin
from smyth_temporal.models import ModelProvider, OpenAIProvider


async def main(model: str | None = None) -> None:
    """Serve ``MarketMonitor`` until interrupted.

    Args:
        model: ``scripted`` or ``openai``; default ``openai`` when ``OPENAI_API_KEY`` is
            set, else ``scripted``.
    """
    settings = Settings.load()
    model = model or ("openai" if os.environ.get("OPENAI_API_KEY") else "scripted")
    provider: ModelProvider = OpenAIProvider() if model == "openai" else scripted_model()
    client = await Client.connect(
        settings.address,
        namespace=settings.namespace,
        plugins=[SmythPlugin(model=provider)],
        **settings.connect,
    )
    worker = Worker(client, task_queue=settings.task_queue, workflows=[MarketMonitor])
    print(f"Serving MarketMonitor ({model} model) on task queue {settings.task_queue!r}")
    await worker.run()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", choices=["scripted", "openai"])
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how a worker is stopped
        asyncio.run(main(parser.parse_args().model))
