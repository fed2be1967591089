"""Traces and metrics on a real dev server: spans of a run, replay safety, Prometheus."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import threading
import urllib.request
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio.client import Client
from temporalio.worker import Worker

from smyth_temporal import AgentClient, AgentInput, SmythPlugin
from smyth_temporal.observability import prometheus_runtime
from smyth_temporal.testing import ScriptedModel, reply, tool_call
from smyth_temporal.types.budget import Price, PriceTable
from tests.helpers.agents import Analyst
from tests.helpers.cli_support import ROOT, free_port, spawn_worker, stop_process
from tests.helpers.context_agents import Relay
from tests.helpers.trader import Trader

PRICES = PriceTable(prices={"test-model": Price(input=1.0, output=2.0)})


@pytest.fixture
def spans() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    provider = TracerProvider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def traced(client: Client, provider: TracerProvider, **plugin: Any) -> Client:
    """A client on ``client``'s connection whose plugin traces to ``provider``."""
    return Client(
        client.service_client,
        namespace=client.namespace,
        plugins=[SmythPlugin(tracing=provider, **plugin)],
    )


def script() -> ScriptedModel:
    return ScriptedModel(
        [
            tool_call("get_quote", symbol="ACME"),  # read-only: a local activity
            tool_call("write_note", text="ACME is up"),  # idempotent: an activity
            reply("ACME trades at 12.5"),
        ]
    )


def of_run(exporter: InMemorySpanExporter, workflow_id: str) -> list[ReadableSpan]:
    """Every span of the trace that the run's start opened."""
    finished = exporter.get_finished_spans()
    starts = [
        s
        for s in finished
        if s.name.startswith("StartWorkflow:")
        and (s.attributes or {}).get("temporalWorkflowID") == workflow_id
    ]
    assert len(starts) == 1, [s.name for s in finished]
    assert starts[0].context is not None
    trace_id = starts[0].context.trace_id
    return [s for s in finished if s.context is not None and s.context.trace_id == trace_id]


def named(spans: list[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


async def run_traced(
    client: Client,
    provider: TracerProvider,
    task_queue: str,
    **worker_options: Any,
) -> str:
    worker_client = traced(client, provider, model=script(), prices=PRICES)
    agents = AgentClient(traced(client, provider), task_queue=task_queue)
    async with Worker(worker_client, task_queue=task_queue, workflows=[Analyst], **worker_options):
        handle = await agents.start(Analyst, AgentInput(prompt="How is ACME?", tenant="acme"))
        result = await agents.result(handle.id)
    assert result.output == "ACME trades at 12.5"
    return handle.id


async def test_one_trace_per_run_with_genai_spans(
    client: Client,
    task_queue: str,
    ledger: Path,
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = spans
    workflow_id = await run_traced(client, provider, task_queue)
    run = of_run(exporter, workflow_id)

    # One trace: every span that names this run is in the start's trace.
    about_run = [
        s
        for s in exporter.get_finished_spans()
        if (s.attributes or {}).get("temporalWorkflowID") == workflow_id
    ]
    assert about_run and all(s in run for s in about_run)

    (agent,) = named(run, "invoke_agent Analyst")
    assert (
        dict(agent.attributes or {}).items()
        >= {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "Analyst",
            "gen_ai.request.model": "test-model",
            "gen_ai.conversation.id": workflow_id,
            "smyth.tenant": "acme",
            "smyth.status": "completed",
            "smyth.steps": 3,
            "gen_ai.usage.input_tokens": 30,
            "gen_ai.usage.output_tokens": 30,
            "smyth.tool_calls": 2,
        }.items()
    )
    assert agent.attributes is not None
    assert agent.attributes["smyth.cost"] == pytest.approx(90 / 1_000_000)

    chats = named(run, "chat test-model")
    assert len(chats) == 3
    for chat in chats:
        attributes = dict(chat.attributes or {})
        assert attributes["gen_ai.operation.name"] == "chat"
        assert attributes["gen_ai.request.model"] == "test-model"
        assert attributes["gen_ai.response.model"] == "scripted"  # what the model answered
        assert attributes["gen_ai.usage.input_tokens"] == 10
        assert attributes["gen_ai.usage.output_tokens"] == 10
        assert attributes["smyth.cost"] == pytest.approx(30 / 1_000_000)
        assert attributes["smyth.tenant"] == "acme"
    assert sorted(dict(c.attributes or {})["smyth.step"] for c in chats) == [1, 2, 3]

    (quote,) = named(run, "execute_tool get_quote")
    (note,) = named(run, "execute_tool write_note")
    assert (
        dict(quote.attributes or {}).items()
        >= {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "get_quote",
            "smyth.tool.effect": "read_only",
            "smyth.tool.outcome": "ok",
            "smyth.tenant": "acme",
        }.items()
    )
    assert dict(note.attributes or {})["smyth.tool.effect"] == "idempotent"
    # Temporal's own spans are there too, the activities' under their starts.
    assert len(named(run, "RunWorkflow:Analyst")) == 1
    assert len(named(run, "CompleteWorkflow:Analyst")) == 1
    assert quote.parent is not None and note.parent is not None


async def test_replays_add_no_duplicate_spans(
    client: Client,
    task_queue: str,
    ledger: Path,
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = spans
    # No cache: every workflow task replays the run's history from the start.
    workflow_id = await run_traced(client, provider, task_queue, max_cached_workflows=0)
    run = of_run(exporter, workflow_id)

    counts = Counter(s.name for s in run)
    assert counts.keys() >= {
        "StartWorkflow:Analyst",
        "RunWorkflow:Analyst",
        "CompleteWorkflow:Analyst",
        "invoke_agent Analyst",
        "StartActivity:smyth.tool.get_quote",
        "execute_tool get_quote",
        "StartActivity:smyth.tool.write_note",
        "execute_tool write_note",
    }
    # Each span once, but the three model calls: replaying the run made none again.
    repeated = {name: n for name, n in counts.items() if n != 1}
    assert repeated == {"StartActivity:smyth.model.complete": 3, "chat test-model": 3}


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        body: bytes = response.read()
    return body.decode()


def sample(metrics: str, name: str, **labels: str) -> float:
    """The value of the one sample of ``name`` whose labels include ``labels``."""
    found = []
    for line in metrics.splitlines():
        match = re.fullmatch(r"(\w+)\{(.*)\} (\S+)", line)
        if match is None or match[1] != name:
            continue
        have = dict(re.findall(r'(\w+)="([^"]*)"', match[2]))
        if labels.items() <= have.items():
            found.append(float(match[3]))
    assert len(found) == 1, f"{name}{labels}: {found}"
    return found[0]


async def wait_for_pending(agents: AgentClient, workflow_id: str) -> None:
    for _ in range(200):
        if (await agents.state(workflow_id)).pending_approvals:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("no approval request")


async def test_prometheus_endpoint_serves_smyth_and_temporal_metrics(
    client: Client, address: str, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    port = free_port()
    runtime = prometheus_runtime(f"127.0.0.1:{port}")

    async def worker(queue: str, agent: type, model: ScriptedModel, **plugin: Any) -> Worker:
        # Workers on one runtime, so on one endpoint; each with its own scripted model.
        worker_client = await Client.connect(
            address,
            namespace=client.namespace,
            runtime=runtime,
            plugins=[SmythPlugin(model=model, **plugin)],
        )
        return Worker(worker_client, task_queue=queue, workflows=[agent])

    sell = ScriptedModel([tool_call("sell", symbol="ACME", quantity=10), reply("sold")])
    reports = [tool_call("daily_report", day=day) for day in (1, 2, 3)]
    relay = ScriptedModel([*reports, reply("read")])  # continues as new after step 2
    queues = {name: f"{task_queue}-{name}" for name in ("trader", "relay")}
    async with (
        await worker(task_queue, Analyst, script(), prices=PRICES),
        await worker(queues["trader"], Trader, sell),
        await worker(queues["relay"], Relay, relay),
    ):
        await agents.run(Analyst, AgentInput(prompt="How is ACME?", tenant="acme"))
        handle = await agents.start(Trader, "Sell ACME", task_queue=queues["trader"])
        await wait_for_pending(agents, handle.id)
        await agents.approve(handle.id, by="alice")
        await agents.result(handle.id)
        await agents.run(Relay, "Read the reports.", task_queue=queues["relay"])
    metrics = scrape(port)

    analyst = {"tenant": "acme", "model": "test-model"}
    assert sample(metrics, "smyth_model_calls_total", **analyst, purpose="turn") == 3
    assert sample(metrics, "smyth_model_tokens_total", **analyst, direction="input") == 30
    assert sample(metrics, "smyth_model_tokens_total", **analyst, direction="output") == 30
    assert sample(metrics, "smyth_model_cost_sum", **analyst) == pytest.approx(90 / 1_000_000)
    tools = {"outcome": "ok"}
    assert sample(metrics, "smyth_tool_latency_seconds_count", **tools, tool="get_quote") == 1
    assert (
        sample(
            metrics,
            "smyth_tool_latency_seconds_count",
            **tools,
            tool="write_note",
            effect="idempotent",
        )
        == 1
    )
    assert sample(metrics, "smyth_approvals_requested_total", tool="sell") == 1
    assert sample(metrics, "smyth_approvals_decided_total", tool="sell", outcome="approved") == 1
    assert sample(metrics, "smyth_approval_wait_seconds_count", tool="sell") == 1
    assert sample(metrics, "smyth_continue_as_new_total", workflow_type="Relay") == 1
    # Temporal's own worker metrics, on the same endpoint.
    assert sample(metrics, "temporal_workflow_completed_total", workflow_type="Analyst") == 1


def test_smyth_worker_metrics_option(address: str, task_queue: str, tmp_path: Path) -> None:
    port = free_port()
    process = spawn_worker(
        ["tests.helpers.agents:Analyst"],
        model="tests.helpers.cli_models:scripted",
        address=address,
        task_queue=task_queue,
        log=tmp_path / "worker.log",
        args=["--metrics", f"127.0.0.1:{port}"],
    )
    try:
        metrics = scrape(port)
    finally:
        stop_process(process)
    assert "temporal_" in metrics
    assert f"http://127.0.0.1:{port}/metrics" in (tmp_path / "worker.log").read_text()


class Collector(BaseHTTPRequestHandler):
    """An OTLP/HTTP trace receiver: keeps the (name, trace id) of every span posted."""

    received: list[tuple[str, int]]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = ExportTraceServiceRequest.FromString(body)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                for span in scope.spans:
                    self.received.append((span.name, int.from_bytes(span.trace_id, "big")))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


async def test_smyth_worker_tracing_exports_over_otlp_into_the_callers_trace(
    client: Client,
    address: str,
    task_queue: str,
    tmp_path: Path,
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = spans
    received: list[tuple[str, int]] = []
    handler = type("Handler", (Collector,), {"received": received})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    process = spawn_worker(
        ["tests.helpers.agents:Analyst"],
        model="tests.helpers.cli_models:scripted",
        address=address,
        task_queue=task_queue,
        log=tmp_path / "worker.log",
        args=["--tracing"],
        env={"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint},
    )
    try:
        agents = AgentClient(traced(client, provider), task_queue=task_queue)
        handle = await agents.start(Analyst, "How is ACME?")
        await agents.result(handle.id)
    finally:
        assert stop_process(process) == 0  # a clean exit flushes the batched spans
        server.shutdown()
    (trace_id,) = {s.context.trace_id for s in of_run(exporter, handle.id) if s.context}
    names = {name for name, trace in received if trace == trace_id}
    assert names >= {
        "RunWorkflow:Analyst",
        "invoke_agent Analyst",
        "chat test-model",
        "execute_tool get_quote",
        "execute_tool slow_lookup",
    }


def test_observability_without_the_extra_names_the_install_command() -> None:
    code = (
        "import sys\nsys.modules['opentelemetry.sdk'] = None\nimport smyth_temporal.observability\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert completed.returncode == 1
    assert "pip install 'smyth-temporal[otel]'" in completed.stderr
    # The core of smyth imports without it.
    code = "import sys\nsys.modules['opentelemetry.sdk'] = None\nimport smyth_temporal.worker\n"
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=False).returncode == 0
