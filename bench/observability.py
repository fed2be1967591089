"""What tracing and metrics cost per agent step: the same run with and without them.

From the repository root::

    .venv/bin/python -m bench.observability [--runs 6]

One dev server, one worker per configuration, runs interleaved (plain, observed,
plain, ...) so drift in this shared machine's load hits both sides alike. A run is
the ``StepBench`` agent of ``bench/step_latency.py`` (20 steps of a model turn and
one tool call). ``observed``: the client that starts the run and the worker's client
both have ``SmythPlugin(tracing=provider)``, a tracer provider batching every span to
an in-memory exporter (the SDK's full path, less the network), and the worker's client
runs on ``prometheus_runtime`` (Temporal's endpoint plus smyth's metrics); the
endpoint is scraped once per run. ``plain``: neither. Printed: per-step time of each
side and their ratio (the issue's goal: at most 1.05x), spans per run and the size of
the scraped page.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import urllib.request

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio.client import Client
from temporalio.worker import Worker

from bench._common import BENCH_STEPS, StepBench, free_port, summary_ms
from bench._timing import TimedModel, one_run
from smyth_temporal import AgentClient, SmythPlugin, configure_logging
from smyth_temporal.observability import prometheus_runtime
from smyth_temporal.testing import (
    new_task_queue,
    start_dev_environment,
)


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        body: bytes = response.read()
    return body.decode()


async def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.observability")
    parser.add_argument("--runs", type=int, default=6, help="timed runs per configuration")
    args = parser.parse_args()
    configure_logging("WARNING")
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    port = free_port()
    env = await start_dev_environment()
    try:
        target = env.client.service_client.config.target_host
        sides: dict[str, tuple[AgentClient, Worker, TimedModel]] = {}
        for name in ("plain", "observed"):
            model = TimedModel()
            task_queue = new_task_queue(f"bench-{name}")
            if name == "plain":
                plugin = SmythPlugin(model=model)
                client = Client(env.client.service_client, namespace="default", plugins=[plugin])
                starter = client
            else:
                client = await Client.connect(
                    target,
                    runtime=prometheus_runtime(f"127.0.0.1:{port}"),
                    plugins=[SmythPlugin(model=model, tracing=provider)],
                )
                starter = Client(
                    env.client.service_client,
                    namespace="default",
                    plugins=[SmythPlugin(tracing=provider)],
                )
            worker = Worker(client, task_queue=task_queue, workflows=[StepBench])
            sides[name] = (AgentClient(starter, task_queue=task_queue), worker, model)
        steps: dict[str, list[float]] = {name: [] for name in sides}
        spans: list[int] = []
        page = ""
        async with sides["plain"][1], sides["observed"][1]:
            for number in range(args.runs + 1):
                for name, (agents, _, model) in sides.items():
                    run = await one_run(agents, model, tenant="bench")
                    if name == "observed":
                        page = await asyncio.to_thread(scrape, port)
                        provider.force_flush()
                        spans.append(len(exporter.get_finished_spans()))
                        exporter.clear()
                    if number:  # the first run of each warms up imports and connections
                        steps[name] += run
        print(f"{BENCH_STEPS}-step runs, {args.runs} runs per side, interleaved")
        for name, values in steps.items():
            print(f"  {name:8} {summary_ms(values)}")
        ratio = statistics.median(steps["observed"]) / statistics.median(steps["plain"])
        mean_ratio = statistics.fmean(steps["observed"]) / statistics.fmean(steps["plain"])
        print(f"  observed / plain per step: {ratio:.3f}x (median), {mean_ratio:.3f}x (mean)")
        smyth_lines = [line for line in page.splitlines() if line.startswith("smyth_")]
        print(
            f"  spans per run: {statistics.median(spans[1:]):.0f}; /metrics: {len(page)} bytes, "
            f"{len(smyth_lines)} smyth_* samples"
        )
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
    # temporalio's Rust threads can outlive the interpreter (see bench/step_latency.py).
    sys.stdout.flush()
    os._exit(0)
