"""History bytes of one long agent run, with and without external payload storage.

From the repository root::

    .venv/bin/python -m bench.history_bytes            # ~10 min; --steps 50 100 200 400
    .venv/bin/python -m bench.history_bytes --steps 50 --thresholds 256 1024 2048 4096 8192
    .venv/bin/python -m bench.history_bytes --no-inline --whole   # chunked vs whole store

One run is a ``HistoryBench`` agent taking N steps, each a model turn that calls the
``read_page`` tool, whose result is 4 KB of text (different on every step), then a
final answering turn. The model resends the whole conversation on every turn, so the
model activity's input grows by about 4 KB a step and, stored inline, history grows
quadratically. For every N the run is made twice: with ``SmythPlugin``'s default
storage (``ContentAddressedFileDriver`` in a fresh temporary directory, threshold
``DEFAULT_PAYLOAD_THRESHOLD``) and with ``payload_storage=None``; with ``--whole``,
also with the store's whole-payload layout (``chunked=False``, the layout before
0.5.0), to compare the store's size.

Printed per run, from the server (``fetch_history``, every run of the chain if the
agent continued as new): total event bytes (``HistoryEvent.ByteSize()``), bytes per
step, events, runs; the store's bytes on disk (whole blocks), its files' total size
and file count; wall time per step (all steps, the first 10 and the last 10, from
the model calls the worker sees). Then the ratio without/with storage per N, and
the store's size whole/chunked.

The dev server gets raised limits (history size and count, blob size, the
continue-as-new suggestion), so that the runs without storage can go past Temporal's
50 MB and the numbers are real; a run that fails or exceeds ``--timeout`` is
reported as not measured.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import itertools
import os
import random
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, PayloadLimitsConfig
from temporalio.converter import ExternalStorage
from temporalio.worker import Worker

from smyth_temporal import (
    AgentConfig,
    AgentInput,
    AgentResult,
    AgentWorkflow,
    configure_logging,
    tool,
)

# A workflow is defined below, so the sandbox re-imports this module: its worker-side
# imports are passed through as is.
with workflow.unsafe.imports_passed_through():
    from smyth_temporal import AgentClient
    from smyth_temporal.models import ModelRequest, ModelResponse
    from smyth_temporal.plugin import SmythPlugin
    from smyth_temporal.storage import DEFAULT_PAYLOAD_THRESHOLD, ContentAddressedFileDriver
    from smyth_temporal.testing import new_task_queue, reply, start_dev_environment, tool_call

PAGE_CHARS = 4096
"""Characters of text each tool call returns."""

MiB = 1024 * 1024

SERVER_LIMITS = {
    "limit.historySize.error": 2048 * MiB,
    "limit.historySize.warn": 1024 * MiB,
    "limit.historySize.suggestContinueAsNew": 2048 * MiB,
    "limit.historyCount.error": 200_000,
    "limit.historyCount.warn": 100_000,
    "limit.historyCount.suggestContinueAsNew": 200_000,
    "limit.blobSize.error": 16 * MiB,
    "limit.blobSize.warn": 8 * MiB,
}
"""Dynamic config of the bench's dev server: room for quadratic histories (Temporal's
defaults: 50 MB / 51,200 events, continue-as-new suggested from 4 MB / 4,000 events,
2 MiB per payload)."""

_WORDS = [
    *("market", "order", "quote", "volume", "price", "index", "trend", "yield", "bond"),
    *("equity", "risk", "hedge", "spread", "margin", "ledger", "audit", "report"),
    *("signal", "alert", "agent", "model", "tool", "step", "page", "note"),
]

# The agent never compacts its context (the point is to carry the whole conversation).
_NO_COMPACTION: dict[str, Any] = {"context_budget": None}


def page(step: int) -> str:
    """4 KB of text, different for every step (deterministic)."""
    words = random.Random(step).choices(_WORDS, k=PAGE_CHARS // 4)
    return f"page {step}: {' '.join(words)}"[:PAGE_CHARS]


@tool(max_output_chars=PAGE_CHARS * 2)
async def read_page(step: int) -> str:
    """Read one page of the report.

    Args:
        step: The page number.
    """
    return page(step)


@workflow.defn
class HistoryBench(AgentWorkflow):
    """The default loop with one tool whose results are 4 KB."""

    config = AgentConfig(model="bench-model", tools=[read_page], max_steps=10_000, **_NO_COMPACTION)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


class PagingModel:
    """Calls ``read_page`` on turns 1..steps, then answers; notes when each call came.

    Unlike ``ScriptedModel`` it keeps no requests: at 400 steps they would hold
    hundreds of megabytes of conversation.
    """

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.calls: list[float] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.calls.append(time.perf_counter())
        if request.step <= self.steps:
            return tool_call("read_page", step=request.step)
        return reply(f"read {self.steps} pages")


@dataclass
class Measurement:
    steps: int
    storage: bool
    threshold: int | None
    chunked: bool = True
    history_bytes: int = 0
    events: int = 0
    runs: int = 0
    largest_event: int = 0
    store_bytes: int = 0
    store_logical: int = 0
    store_files: int = 0
    wall: float = 0.0
    step_times: list[float] = dataclasses.field(default_factory=list)
    error: str | None = None

    @property
    def label(self) -> str:
        if not self.storage:
            return "inline (no storage)"
        return f"{'chunked' if self.chunked else 'whole'} ≥{self.threshold} B"


def store_usage(root: Path) -> tuple[int, int, int]:
    """Bytes on disk (allocated blocks), total file size and number of files under ``root``."""
    files = [p for p in root.rglob("*") if p.is_file() and not p.name.startswith(".")]
    sizes = [p.stat() for p in files]
    return sum(s.st_blocks * 512 for s in sizes), sum(s.st_size for s in sizes), len(files)


async def history_of(
    client: Client, workflow_id: str, first_run_id: str | None
) -> tuple[int, int, int, int]:
    """Bytes, events, runs and the largest event of the run chain started by ``first_run_id``."""
    total = events = runs = largest = 0
    run_id = first_run_id
    while run_id:
        handle = client.get_workflow_handle(workflow_id, run_id=run_id)
        run_id = None
        runs += 1
        async for event in handle.fetch_history_events(page_size=50):
            size = event.ByteSize()
            total += size
            events += 1
            largest = max(largest, size)
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
                run_id = (
                    event.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
                )
    return total, events, runs, largest


async def measure(
    base: Client,
    steps: int,
    threshold: int | None,
    store: Path,
    timeout: float,
    chunked: bool = True,
) -> Measurement:
    storage = (
        ExternalStorage(
            drivers=[ContentAddressedFileDriver(store, chunked=chunked)],
            payload_size_threshold=threshold,
        )
        if threshold is not None
        else None
    )
    result = Measurement(steps, storage is not None, threshold, chunked)
    model = PagingModel(steps)
    # A connection of its own, to raise the SDK's payload warning (512 KiB) with the
    # server's limits: without storage every model turn past ~120 steps would warn.
    client = await Client.connect(
        base.service_client.config.target_host,
        namespace=base.namespace,
        plugins=[SmythPlugin(model=model, payload_storage=storage)],
        payload_limits=PayloadLimitsConfig(payloads_warn_size=SERVER_LIMITS["limit.blobSize.warn"]),
    )
    task_queue = new_task_queue("bench-history")
    agents = AgentClient(client, task_queue=task_queue)
    async with Worker(client, task_queue=task_queue, workflows=[HistoryBench]):
        started = time.perf_counter()
        handle = await agents.start(HistoryBench, AgentInput(prompt=f"Read {steps} pages."))
        try:
            async with asyncio.timeout(timeout):
                outcome = await agents.result(handle.id)
            if outcome.status != "completed" or outcome.steps != steps + 1:
                result.error = f"ended {outcome.status} after {outcome.steps} turns"
        except TimeoutError:
            result.error = f"not finished after {timeout:.0f} s (at step {len(model.calls)})"
            await handle.terminate(reason="bench timeout")
        except Exception as exc:  # the run failed: report it, do not fake a number
            result.error = f"{type(exc).__name__}: {exc}"[:300]
        result.wall = time.perf_counter() - started
    calls = model.calls
    result.step_times = [later - earlier for earlier, later in itertools.pairwise(calls)]
    (
        result.history_bytes,
        result.events,
        result.runs,
        result.largest_event,
    ) = await history_of(client, handle.id, handle.first_execution_run_id or handle.result_run_id)
    if storage is not None:
        result.store_bytes, result.store_logical, result.store_files = store_usage(store)
    return result


def _ms(values: list[float]) -> str:
    return f"{sum(values) / len(values) * 1000:6.1f}" if values else "     -"


def _size(value: int) -> str:
    if value >= MiB:
        return f"{value / MiB:8.2f} MiB"
    return f"{value / 1024:8.1f} KiB"


def report(m: Measurement) -> None:
    status = f"  NOT MEASURED: {m.error}" if m.error else ""
    store = (
        f"{_size(m.store_bytes)} {_size(m.store_logical)} in {m.store_files:5d} files"
        if m.storage
        else " " * 39
    )
    print(
        f"{m.steps:5d}  {m.label:22}  {_size(m.history_bytes)}  {m.history_bytes / m.steps:10.0f}"
        f"  {m.events:6d}  {m.runs:2d}  {_size(m.largest_event)}  {store}"
        f"  {_ms(m.step_times)} {_ms(m.step_times[:10])} {_ms(m.step_times[-10:])}"
        f"  {m.wall:7.1f} s{status}",
        flush=True,
    )


async def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.history_bytes")
    parser.add_argument("--steps", type=int, nargs="+", default=[50, 100, 200, 400])
    parser.add_argument(
        "--thresholds",
        type=int,
        nargs="+",
        default=[DEFAULT_PAYLOAD_THRESHOLD],
        help="payload_size_threshold values to run with storage (bytes)",
    )
    parser.add_argument("--no-inline", action="store_true", help="skip the runs without storage")
    parser.add_argument(
        "--whole", action="store_true", help="also run the store's whole-payload layout"
    )
    parser.add_argument("--timeout", type=float, default=900, help="seconds one run may take")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args()
    configure_logging("WARNING")
    limits = [f"--dynamic-config-value={key}={value}" for key, value in SERVER_LIMITS.items()]
    env = await start_dev_environment(extra_args=limits)
    print(
        f"one HistoryBench run per row: N steps of a {PAGE_CHARS}-char tool result, then an answer"
    )
    print(
        f"{'steps':>5}  {'payloads':22}  {'history':>12}  {'bytes/step':>10}  {'events':>6}"
        f"  {'runs':>2}  {'largest event':>12}  {'store: on disk, file sizes, files':39}"
        f"  {'ms/step (all, first 10, last 10)':33}  wall"
    )
    results: list[Measurement] = []
    try:
        with tempfile.TemporaryDirectory(prefix="smyth-bench-payloads-") as tmp:
            for steps in args.steps:
                for threshold in args.thresholds:
                    for chunked in (True, False) if args.whole else (True,):
                        store = Path(tmp) / f"{steps}-{threshold}-{chunked}"
                        results.append(
                            await measure(
                                env.client, steps, threshold, store, args.timeout, chunked
                            )
                        )
                        report(results[-1])
                if not args.no_inline:
                    results.append(await measure(env.client, steps, None, Path(tmp), args.timeout))
                    report(results[-1])
    finally:
        await env.shutdown()
    print("\nstore, whole layout / chunked (threshold: on disk, file sizes; history bytes):")
    for steps in args.steps:
        for m in results:
            whole = next(
                (
                    w
                    for w in results
                    if w.steps == steps
                    and w.storage
                    and not w.chunked
                    and w.threshold == m.threshold
                    and not w.error
                ),
                None,
            )
            if m.steps != steps or not m.storage or not m.chunked or m.error or whole is None:
                continue
            print(
                f"  {steps:4d} steps, ≥{m.threshold} B: {whole.store_bytes / m.store_bytes:7.1f}x,"
                f" {whole.store_logical / m.store_logical:7.1f}x;"
                f" history {m.history_bytes:,} vs {whole.history_bytes:,} bytes"
            )
    print("\nhistory without storage / with storage (threshold, ratio):")
    for steps in args.steps:
        inline = next((m for m in results if m.steps == steps and not m.storage), None)
        if inline is None or inline.error:
            continue
        for m in results:
            if m.steps == steps and m.storage and not m.error:
                ratio = inline.history_bytes / m.history_bytes
                print(f"  {steps:4d} steps, ≥{m.threshold} B: {ratio:7.1f}x")
    if args.json is not None:
        write_results(args.json, results)


def write_results(path: Path, results: list[Measurement]) -> None:
    """Write the runs for ``bench.report``: the headline is the largest N run both ways."""
    # Here, not at the top: the workflow sandbox re-imports this module.
    from bench._results import headline, write_json

    rows = [
        {
            "steps": m.steps,
            "storage": m.storage,
            "threshold": m.threshold,
            "chunked": m.chunked,
            "history_bytes": m.history_bytes,
            "store_bytes": m.store_bytes,
            "store_logical": m.store_logical,
            "store_files": m.store_files,
            "events": m.events,
            "runs": m.runs,
            "ms_per_step": sum(m.step_times) / len(m.step_times) * 1000 if m.step_times else None,
            "error": m.error,
        }
        for m in results
    ]
    headlines = []
    measured = [m for m in results if not m.error]
    both = [
        n
        for n in sorted({m.steps for m in measured}, reverse=True)
        if any(m.steps == n and m.storage and m.chunked for m in measured)
        and any(m.steps == n and not m.storage for m in measured)
    ]
    if both:
        steps = both[0]
        ours = next(m for m in measured if m.steps == steps and m.storage and m.chunked)
        inline = next(m for m in measured if m.steps == steps and not m.storage)
        headlines.append(
            headline(
                f"history bytes of a {steps}-step run",
                ours.history_bytes / MiB,
                inline.history_bytes / MiB,
                "MiB",
                f"baseline: every payload inline; store on disk {ours.store_bytes / MiB:.1f} MiB",
            )
        )
    write_json(path, "history_bytes", headlines, {"runs": rows})


if __name__ == "__main__":
    asyncio.run(main())
    # temporalio's Rust threads can outlive the interpreter and abort its teardown
    # ("PyGILState_Release ... finalizing", temporalio/sdk-python#300); everything is
    # written and flushed by now, so skip the teardown.
    sys.stdout.flush()
    os._exit(0)
