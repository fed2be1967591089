"""What payload encryption costs per agent step: the same run with and without a key.

From the repository root::

    .venv/bin/python -m bench.encryption [--runs 6]

One dev server, one worker per configuration, runs interleaved (plain, sealed,
plain, ...) so drift in this shared machine's load hits both sides alike. A run is
the ``StepBench`` agent of ``bench/step_latency.py`` (20 steps of a model turn and
one tool call) whose tool returns ``--tool-bytes`` of text, so the conversation each
model call carries grows as a real agent's does. Printed: per-step time of each
configuration and their ratio (the issue's goal: at most 1.05x), then the codec's
own CPU time to seal and open payloads of a few sizes.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time

from temporalio.api.common.v1 import Payload
from temporalio.client import Client
from temporalio.worker import Worker

from bench._common import BENCH_STEPS, StepBench, percentile, summary_ms
from bench._timing import TimedModel, one_run
from smyth_temporal import AgentClient, SmythPlugin, configure_logging
from smyth_temporal.security import EncryptionCodec, KeyRing, new_key
from smyth_temporal.testing import (
    new_task_queue,
    start_dev_environment,
)


def codec_micro(codec: EncryptionCodec) -> None:
    print("\ncodec CPU per payload (seal + open, in process):")
    for size in (200, 4_096, 65_536):
        payload = Payload(metadata={"encoding": b"json/plain"}, data=b"y" * size)
        times = []
        for _ in range(300):
            started = time.perf_counter()
            codec.open(codec.seal(payload))
            times.append(time.perf_counter() - started)
        print(
            f"  {size:>6} bytes: p50 {percentile(times, 0.5) * 1e6:7.1f} us  "
            f"p95 {percentile(times, 0.95) * 1e6:7.1f} us"
        )


async def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.encryption")
    parser.add_argument("--runs", type=int, default=6, help="timed runs per configuration")
    parser.add_argument("--tool-bytes", type=int, default=1024, help="size of each tool result")
    args = parser.parse_args()
    configure_logging("WARNING")
    codec = EncryptionCodec(KeyRing.parse(new_key("bench")))
    env = await start_dev_environment()
    try:
        sides: dict[str, tuple[AgentClient, Worker, TimedModel]] = {}
        for name, encryption in (("plain", None), ("sealed", codec)):
            model = TimedModel(args.tool_bytes)
            plugin = SmythPlugin(model=model, encryption=encryption)
            client = Client(env.client.service_client, namespace="default", plugins=[plugin])
            task_queue = new_task_queue(f"bench-{name}")
            worker = Worker(client, task_queue=task_queue, workflows=[StepBench])
            sides[name] = (AgentClient(client, task_queue=task_queue), worker, model)
        steps: dict[str, list[float]] = {name: [] for name in sides}
        async with sides["plain"][1], sides["sealed"][1]:
            for number in range(args.runs + 1):
                for name, (agents, _, model) in sides.items():
                    run = await one_run(agents, model)
                    if number:  # the first run of each warms up imports and connections
                        steps[name] += run
        print(
            f"{BENCH_STEPS}-step runs, {args.tool_bytes}-byte tool results, "
            f"{args.runs} runs per side, interleaved"
        )
        for name, values in steps.items():
            print(f"  {name:7} {summary_ms(values)}")
        ratio = statistics.median(steps["sealed"]) / statistics.median(steps["plain"])
        mean_ratio = statistics.fmean(steps["sealed"]) / statistics.fmean(steps["plain"])
        print(f"  sealed / plain per step: {ratio:.3f}x (median), {mean_ratio:.3f}x (mean)")
        codec_micro(codec)
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
    # temporalio's Rust threads can outlive the interpreter (see bench/step_latency.py).
    sys.stdout.flush()
    os._exit(0)
