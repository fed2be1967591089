"""How fast the codec server decodes a 200-step agent's history.

From the repository root::

    .venv/bin/python -m bench.codec_server [--steps 200]

A ``HistoryBench`` agent (``bench/history_bytes.py``: one 4 KB tool result a step, no
compaction, so later steps carry long conversations through the payload store) runs
with encryption on. Then every payload of its history is decoded three ways, side by
side: in process (``PayloadTranslator``: store read + decrypt, the floor), through
the codec server in one request (what ``temporal workflow show`` does), and one
request per history event (what the Temporal UI does as a page renders events).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

import httpx
import uvicorn
from google.protobuf.json_format import MessageToDict
from temporalio.api.common.v1 import Payload, Payloads
from temporalio.client import Client
from temporalio.worker import Worker

from bench._common import free_port, percentile
from bench.history_bytes import HistoryBench, PagingModel
from smyth_temporal import AgentClient, AgentInput, SmythPlugin, configure_logging
from smyth_temporal.codec_server import PayloadTranslator, create_codec_app
from smyth_temporal.security import EncryptionCodec, KeyRing, new_key
from smyth_temporal.storage import default_payload_storage
from smyth_temporal.testing import new_task_queue, payloads_in, start_dev_environment

TOKEN = "bench-codec-token-0123456789"


async def sealed_history(steps: int, codec: EncryptionCodec) -> list[list[Payload]]:
    """Run the agent; every history event's payloads (events without any left out)."""
    env = await start_dev_environment()
    try:
        model = PagingModel(steps)
        plugin = SmythPlugin(model=model, encryption=codec)
        client = Client(env.client.service_client, namespace="default", plugins=[plugin])
        task_queue = new_task_queue("bench-codec")
        async with Worker(client, task_queue=task_queue, workflows=[HistoryBench]):
            agents = AgentClient(client, task_queue=task_queue)
            handle = await agents.start(HistoryBench, AgentInput(prompt="read"))
            await agents.result(handle.id)
        history = await client.get_workflow_handle(handle.id).fetch_history()
    finally:
        await env.shutdown()
    events = [list(payloads_in(event)) for event in history.events]
    return [found for found in events if found]


async def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.codec_server")
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    configure_logging("WARNING")
    store = Path(tempfile.mkdtemp(prefix="smyth-bench-codec-"))
    os.environ["SMYTH_PAYLOAD_PATH"] = str(store)
    codec = EncryptionCodec(KeyRing.parse(new_key("bench")))
    events = await sealed_history(args.steps, codec)
    everything = [p for found in events for p in found]
    print(f"{args.steps}-step run: {len(events)} events with payloads, {len(everything)} payloads")

    translator = PayloadTranslator(codec, default_payload_storage())
    started = time.perf_counter()
    await translator.decode(everything, "default")
    in_process = time.perf_counter() - started

    port = free_port()
    app = create_codec_app(translator, token=TOKEN, ui_origins=[])
    server = uvicorn.Server(uvicorn.Config(app, port=port, log_config=None, access_log=False))
    serving = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.05)
    headers = {"Authorization": f"Bearer {TOKEN}", "X-Namespace": "default"}
    url = f"http://127.0.0.1:{port}/decode"
    try:
        async with httpx.AsyncClient(timeout=120) as http:
            started = time.perf_counter()
            answer = await http.post(
                url, json=MessageToDict(Payloads(payloads=everything)), headers=headers
            )
            one_request = time.perf_counter() - started
            answer.raise_for_status()
            per_event: list[float] = []
            for found in events:
                started = time.perf_counter()
                answer = await http.post(
                    url, json=MessageToDict(Payloads(payloads=found)), headers=headers
                )
                per_event.append(time.perf_counter() - started)
                answer.raise_for_status()
    finally:
        server.should_exit = True
        await serving
    print(f"  in process (store + decrypt):   {in_process * 1000:8.1f} ms")
    ratio = one_request / in_process
    print(f"  codec server, one request:      {one_request * 1000:8.1f} ms  ({ratio:.1f}x)")
    p50, p95 = (percentile(per_event, q) * 1000 for q in (0.5, 0.95))
    print(
        f"  codec server, one per event:    {sum(per_event) * 1000:8.1f} ms in all; "
        f"p50 {p50:.1f} ms, p95 {p95:.1f} ms"
    )


if __name__ == "__main__":
    asyncio.run(main())
    sys.stdout.flush()
    os._exit(0)  # temporalio's Rust threads can outlive the interpreter (bench/step_latency.py)
