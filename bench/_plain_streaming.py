"""The hand-written side of ``bench.streaming``'s time to first token.

Plain temporalio, no smyth code: ``PlainStreamed`` (``bench._plain_worker``) runs one
activity that streams a chat completion with the ``openai`` client and publishes each
piece of text to the workflow's ``workflow_streams`` stream, batched as smyth batches
its deltas (75 ms); the client subscribes with ``WorkflowStreamClient``. Timed: from the
activity's call to the first piece of text the subscriber receives.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import openai
from temporalio import activity
from temporalio.client import Client
from temporalio.contrib.workflow_streams import WorkflowStreamClient

from bench._plain_worker import PLAIN_STREAM_MODEL, PlainStreamed

BATCH_INTERVAL = timedelta(milliseconds=75)
"""How often the activity flushes its text (smyth's first batch interval)."""

TOPIC = "text"


def stream_model(base_url: str, started: list[float]) -> Callable[..., Any]:
    """The ``PLAIN_STREAM_MODEL`` activity against ``base_url``; notes when each call starts."""
    model = openai.AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0)

    @activity.defn(name=PLAIN_STREAM_MODEL)
    async def call(prompt: str) -> str:
        started.append(time.perf_counter())
        stream = WorkflowStreamClient.from_within_activity(batch_interval=BATCH_INTERVAL)
        text = stream.topic(TOPIC, type=str)
        pieces: list[str] = []
        async with stream:
            chunks = await model.chat.completions.create(
                model="bench-model", messages=[{"role": "user", "content": prompt}], stream=True
            )
            async for chunk in chunks:
                piece = chunk.choices[0].delta.content if chunk.choices else None
                if piece:
                    text.publish(piece)
                    pieces.append(piece)
        return "".join(pieces)

    return call


async def first_piece(client: Client, task_queue: str, started: list[float]) -> float:
    """One ``PlainStreamed`` run: seconds from its activity's call to the first text seen."""
    workflow_id = f"plain-streamed-{uuid.uuid4().hex}"
    handle = await client.start_workflow(
        PlainStreamed.run, "Report on the market.", id=workflow_id, task_queue=task_queue
    )
    seen: float | None = None
    reader = WorkflowStreamClient.create(client, workflow_id)
    async for _ in reader.subscribe(TOPIC, result_type=str):
        seen = time.perf_counter()
        break
    await handle.result()
    assert seen is not None, "no text reached the subscriber"
    return seen - started[-1]
