"""I5: no secret value appears in history, the payload store, logs, events or spans.

Secrets are drawn with awkward characters (quotes, backslashes, tabs, newlines, NUL,
line separators, non-ASCII, JSON's own punctuation) around a distinctive core, so that
finding any spelling of one (as is, JSON-escaped, ASCII-escaped, in either ``repr``
quoting) can only mean it leaked. A scripted model asks a tool for a result of any
shape with the secret embedded anywhere (values, keys, inside longer text, deep,
large enough for the payload store), as a structure or a pydantic model, or makes
the tool fail quoting it; the tool also logs it carelessly. Then every sink is read:
the run's history (payloads decoded), the payload store's files, structlog and stdlib
log lines, the run's events, the spans of its trace, and what the model was sent.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import logging
from pathlib import Path
from typing import Any

import pytest
import structlog
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio.client import Client
from temporalio.worker import Worker

from smyth_temporal import AgentClient, AgentInput, SmythPlugin, _redaction
from smyth_temporal._logging import configure_logging
from smyth_temporal._redaction import spellings
from smyth_temporal.models import ModelRequest, ModelResponse
from smyth_temporal.security import EnvSecrets, Secrets
from smyth_temporal.testing import ScriptedModel, reply, tool_call
from tests.helpers.secret_agents import PLACEHOLDER, SECRET_NAME, Leaker

MASK = f"[secret:{SECRET_NAME}]"

AWKWARD = st.sampled_from(
    [
        *['"', "\\", "\t", "\n", "\r", "'", "\x00", "\x1b", "\x7f", "\x85", "\u2028"],
        *["é", "😀", *"{}[]:,/<>&%$`", '\\"', "\\u0041", "\\n"],
    ]
)
EDGE = st.lists(AWKWARD | st.characters(codec="utf-8"), max_size=4).map("".join)
SECRETS = st.builds(
    lambda head, core, tail: head + core + tail,
    EDGE,
    st.from_regex(r"Sx[A-Za-z0-9]{8}", fullmatch=True),
    EDGE,
)
"""Awkward at both ends, around a core nothing else contains."""

TEXT = st.text(max_size=6)
LEAF = st.one_of(
    st.none(),
    st.integers(),
    TEXT,
    st.just(PLACEHOLDER),
    st.builds(lambda a, b: a + PLACEHOLDER + b, TEXT, TEXT),
)
SHAPES = st.recursive(
    LEAF,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(TEXT | st.just(PLACEHOLDER), inner, max_size=3)
    ),
    max_leaves=10,
)
"""Any JSON, the placeholder anywhere (keys included)."""


def _tool_results(request: ModelRequest) -> ModelResponse:
    return reply(" | ".join(m.content or "" for m in request.messages if m.role == "tool"))


def _decoded(text: str) -> str:
    """``text`` (JSON) with every base64 string in it also decoded."""
    found = [text]

    def walk(node: object) -> None:
        if isinstance(node, dict):
            node = list(node.values())
        if isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, str):
            with contextlib.suppress(ValueError):
                found.append(base64.b64decode(node, validate=True).decode("utf-8", "replace"))

    walk(json.loads(text))
    return "\n".join(found)


def _spans_text(exporter: InMemorySpanExporter) -> str:
    parts: list[str] = []
    for span in exporter.get_finished_spans():
        parts += [span.name, repr(dict(span.attributes or {}))]
        parts += [f"{e.name} {dict(e.attributes or {})!r}" for e in span.events]
        parts.append(repr(span.status.description))
    return "\n".join(parts)


@settings(max_examples=max(settings.default.max_examples // 4, 3))
@given(
    secret=SECRETS,
    shape=SHAPES,
    tool=st.sampled_from(["peek", "fetch"]),
    form=st.sampled_from(["plain", "model", "raise"]),
    large=st.booleans(),
)
async def test_i5_no_secret_value_reaches_any_sink(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    reset_structlog: None,
    caplog: pytest.LogCaptureFixture,
    secret: str,
    shape: Any,
    tool: str,
    form: str,
    large: bool,
) -> None:
    # This test's secrets are forgotten after it: a random one left registered would
    # mask text in every later test of the session.
    monkeypatch.setattr(_redaction, "_values", dict(_redaction._values))
    monkeypatch.setattr(_redaction, "_ordered", _redaction._ordered)
    store = tmp_path / f"store-{abs(hash(secret))}"
    monkeypatch.setenv("SMYTH_PAYLOAD_PATH", str(store))
    for name in ("SMYTH_ENCRYPTION_KEYS", "SMYTH_ENCRYPTION_KEY_FILE"):
        monkeypatch.delenv(name, raising=False)  # masking alone must keep it out
    logs = io.StringIO()
    configure_logging("DEBUG", json=True)
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(file=logs))
    caplog.set_level(logging.DEBUG)
    provider = TracerProvider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    if large:  # past the payload store's threshold
        shape = [shape, "padding " * 400, PLACEHOLDER]

    model = ScriptedModel([tool_call(tool, shape=shape, form=form), _tool_results])
    worker_client = Client(
        client.service_client,
        namespace=client.namespace,
        plugins=[
            SmythPlugin(
                model=model,
                secrets=Secrets([EnvSecrets({SECRET_NAME: secret})]),
                tracing=provider,
            )
        ],
    )
    starter = Client(
        client.service_client,
        namespace=client.namespace,
        plugins=[SmythPlugin(tracing=provider)],
    )
    agents = AgentClient(starter, task_queue=task_queue)
    async with Worker(worker_client, task_queue=task_queue, workflows=[Leaker]):
        handle = await agents.start(Leaker, AgentInput(prompt="Fetch it."))
        events = [e.model_dump_json() async for e in agents.events(handle.id)]
        result = await agents.result(handle.id)
    history = await client.get_workflow_handle(handle.id).fetch_history()
    provider.shutdown()

    sent = json.dumps([r.model_dump(mode="json") for r in model.requests], ensure_ascii=False)
    sinks = {
        "history": _decoded(history.to_json()),
        "logs": logs.getvalue() + caplog.text,
        "events": "\n".join(events),
        "spans": _spans_text(exporter),
        "model input": sent,
        "result": result.model_dump_json(),
    }
    stored = b"".join(p.read_bytes() for p in store.rglob("*") if p.is_file())
    for spelling in spellings(secret):
        for sink, text in sinks.items():
            assert spelling not in text, f"{secret!r} reached the {sink} as {spelling!r}"
        assert spelling.encode() not in stored, f"{secret!r} reached the payload store"
    # Masked, not lost: the model saw where the secret was.
    if form != "plain" or PLACEHOLDER in json.dumps(shape):
        assert MASK in sent
    if large and form != "raise":
        assert stored, "a large result should have gone to the store"
