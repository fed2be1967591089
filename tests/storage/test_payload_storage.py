"""Large payloads out of history: the content-addressed file driver and its wiring."""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import (
    ExternalStorage,
    StorageDriverClaim,
    StorageDriverRetrieveContext,
    StorageDriverStoreContext,
)

from smyth_temporal import (
    AgentClient,
    AgentConfig,
    AgentInput,
    AgentResult,
    AgentWorkflow,
    ConfigurationError,
    SmythPlugin,
    tool,
)

# Workflows are defined below, so the sandbox re-imports this module: worker-side
# imports are passed through as is.
with workflow.unsafe.imports_passed_through():
    from smyth_temporal.models import ModelRequest, ModelResponse
    from smyth_temporal.storage import (
        DEFAULT_PAYLOAD_THRESHOLD,
        DRIVER_NAME,
        ContentAddressedFileDriver,
        default_payload_storage,
    )
    from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call

REPORT_CHARS = 20_000
_REFERENCE_TYPE = b"temporal.api.sdk.v1.ExternalStorageReference"
_CLAIM = re.compile(rb'"sha256":"([0-9a-f]{64})"')


@tool(max_output_chars=REPORT_CHARS * 2)
async def big_report(topic: str) -> str:
    """A long report (about 20 KB of text).

    Args:
        topic: What the report is about.
    """
    return report_text(topic)


def report_text(topic: str) -> str:
    lines = [f"{topic} line {n:05d}: " + "lorem ipsum dolor sit amet " * 2 for n in range(400)]
    return " | ".join(lines)[:REPORT_CHARS]


@workflow.defn
class Reporter(AgentWorkflow):
    config = AgentConfig(model="test-model", tools=[big_report], max_steps=4)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


def payload(size: int, tag: str = "x") -> Payload:
    return Payload(metadata={"encoding": b"binary/plain"}, data=(tag * size).encode()[:size])


def files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


STORE = StorageDriverStoreContext()
RETRIEVE = StorageDriverRetrieveContext()


async def test_round_trip(tmp_path: Path) -> None:
    driver = ContentAddressedFileDriver(tmp_path / "store")
    originals = [payload(5000, "a"), payload(3000, "b")]
    claims = await driver.store(STORE, originals)

    digests = [c.claim_data["sha256"] for c in claims]
    for original, digest in zip(originals, digests, strict=True):
        serialized = original.SerializeToString(deterministic=True)
        assert digest == hashlib.sha256(serialized).hexdigest()
        # <root>/<first two hex digits>/<sha256>
        assert driver.path_for(digest) == tmp_path / "store" / digest[:2] / digest
        assert driver.path_for(digest).read_bytes() == serialized
    assert await driver.retrieve(RETRIEVE, claims) == originals
    assert driver.name() == DRIVER_NAME == "smyth.fs"


async def test_the_same_payload_is_written_once(tmp_path: Path) -> None:
    driver = ContentAddressedFileDriver(tmp_path)
    first = await driver.store(STORE, [payload(4000)])
    path = driver.path_for(first[0].claim_data["sha256"])
    written = path.stat().st_ino
    again = await driver.store(STORE, [payload(4000), payload(4000)])

    assert first[0] == again[0] == again[1]
    assert files(tmp_path) == [path]
    assert path.stat().st_ino == written  # not rewritten


async def test_concurrent_stores_of_one_payload(tmp_path: Path) -> None:
    # Writers in threads (and in other processes) race on one digest: each writes its
    # own temporary file and renames it into place, so the file is always whole.
    drivers = [ContentAddressedFileDriver(tmp_path) for _ in range(4)]
    same = payload(200_000, "z")
    results = await asyncio.gather(*(d.store(STORE, [same]) for d in drivers for _ in range(8)))

    assert len({r[0].claim_data["sha256"] for r in results}) == 1
    assert len(files(tmp_path)) == 1  # no temporary files left behind
    assert await drivers[0].retrieve(RETRIEVE, results[0]) == [same]


async def test_a_truncated_file_is_rewritten(tmp_path: Path) -> None:
    driver = ContentAddressedFileDriver(tmp_path)
    [claim] = await driver.store(STORE, [payload(4000)])
    path = driver.path_for(claim.claim_data["sha256"])
    path.write_bytes(path.read_bytes()[:100])

    await driver.store(STORE, [payload(4000)])
    assert await driver.retrieve(RETRIEVE, [claim]) == [payload(4000)]


async def test_a_corrupted_file_is_reported(tmp_path: Path) -> None:
    driver = ContentAddressedFileDriver(tmp_path)
    [claim] = await driver.store(STORE, [payload(4000)])
    path = driver.path_for(claim.claim_data["sha256"])
    blob = bytearray(path.read_bytes())
    blob[-1] ^= 0xFF
    path.write_bytes(bytes(blob))

    with pytest.raises(ValueError, match="is corrupted") as caught:
        await driver.retrieve(RETRIEVE, [claim])
    assert str(path) in str(caught.value)


async def test_a_missing_file_says_the_store_must_be_shared(tmp_path: Path) -> None:
    writer = ContentAddressedFileDriver(tmp_path / "worker")
    reader = ContentAddressedFileDriver(tmp_path / "client")
    [claim] = await writer.store(STORE, [payload(4000)])

    with pytest.raises(ConfigurationError) as caught:
        await reader.retrieve(RETRIEVE, [claim])
    message = str(caught.value)
    assert str(reader.path_for(claim.claim_data["sha256"])) in message
    assert "shared by every worker and client" in message
    assert "SMYTH_PAYLOAD_PATH" in message and "S3" in message


@pytest.mark.parametrize(
    "claim_data",
    [{}, {"sha256": "../../etc/passwd"}, {"sha256": "AB" * 32}],
    ids=["no digest", "a path", "uppercase"],
)
async def test_a_bad_claim_is_refused(tmp_path: Path, claim_data: dict[str, str]) -> None:
    driver = ContentAddressedFileDriver(tmp_path)
    with pytest.raises(ValueError, match="no valid 'sha256' digest"):
        await driver.retrieve(RETRIEVE, [StorageDriverClaim(claim_data=claim_data)])


@pytest.fixture
def clean_payload_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    for name in ("SMYTH_PAYLOAD_STORAGE", "SMYTH_PAYLOAD_PATH", "SMYTH_PAYLOAD_THRESHOLD"):
        monkeypatch.delenv(name, raising=False)
    yield monkeypatch


def test_the_default_storage_follows_the_environment(
    clean_payload_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    clean_payload_env.chdir(tmp_path)
    storage = default_payload_storage()
    assert storage is not None
    [driver] = storage.drivers
    assert isinstance(driver, ContentAddressedFileDriver)
    assert driver.root == tmp_path / ".smyth" / "payloads"
    assert storage.payload_size_threshold == DEFAULT_PAYLOAD_THRESHOLD == 2048

    clean_payload_env.setenv("SMYTH_PAYLOAD_PATH", str(tmp_path / "elsewhere"))
    clean_payload_env.setenv("SMYTH_PAYLOAD_THRESHOLD", "10000")
    storage = default_payload_storage()
    assert storage is not None
    assert storage.drivers[0].root == tmp_path / "elsewhere"  # type: ignore[attr-defined]
    assert storage.payload_size_threshold == 10000

    clean_payload_env.setenv("SMYTH_PAYLOAD_STORAGE", "off")
    assert default_payload_storage() is None


@pytest.mark.parametrize(
    ("name", "value", "match"),
    [
        ("SMYTH_PAYLOAD_STORAGE", "s3", "must be 'on' or 'off'"),
        ("SMYTH_PAYLOAD_THRESHOLD", "2k", "must be a number of bytes"),
        ("SMYTH_PAYLOAD_THRESHOLD", "-1", "must be a number of bytes"),
    ],
)
def test_bad_settings_are_refused(
    clean_payload_env: pytest.MonkeyPatch, name: str, value: str, match: str
) -> None:
    clean_payload_env.setenv(name, value)
    with pytest.raises(ConfigurationError, match=match):
        default_payload_storage()


def test_the_plugin_puts_storage_on_the_data_converter(tmp_path: Path) -> None:
    default = SmythPlugin().data_converter
    assert default is not None and not callable(default)
    assert isinstance(default.external_storage, ExternalStorage)
    assert issubclass(
        default.payload_converter_class, pydantic_data_converter.payload_converter_class
    )

    explicit = ExternalStorage(drivers=[ContentAddressedFileDriver(tmp_path)])
    converter = SmythPlugin(payload_storage=explicit).data_converter
    assert converter is not None and not callable(converter)
    storage = converter.external_storage  # with query answers kept inline
    assert storage is not None and storage.drivers == explicit.drivers

    assert SmythPlugin(payload_storage=None).data_converter is pydantic_data_converter


def referenced_digests(events: Iterable[HistoryEvent]) -> list[str]:
    """The digests named by the external-storage references in the events' payloads."""
    digests = []
    for event in events:
        raw = event.SerializeToString()
        if _REFERENCE_TYPE in raw:
            digests += [d.decode() for d in _CLAIM.findall(raw)]
    return digests


async def test_an_agent_run_keeps_large_payloads_out_of_history(
    client: Client, task_queue: str, payload_store: Path
) -> None:
    def summarize(request: ModelRequest) -> ModelResponse:
        [report] = [m.content or "" for m in request.messages if m.role == "tool"]
        return reply(f"{len(report)} chars, sha {hashlib.sha256(report.encode()).hexdigest()}")

    model = ScriptedModel([tool_call("big_report", topic="ACME"), summarize])
    agents = AgentClient(client, task_queue=task_queue)
    async with agent_worker(client, Reporter, model=model, task_queue=task_queue):
        handle = await agents.start(Reporter, AgentInput(prompt="Report on ACME"))
        result = await agents.result(handle.id)
        history = await client.get_workflow_handle(handle.id).fetch_history()

    report = report_text("ACME")
    assert len(report) == REPORT_CHARS
    assert result.status == "completed"
    assert (
        result.output == f"{REPORT_CHARS} chars, sha {hashlib.sha256(report.encode()).hexdigest()}"
    )

    # The report travelled twice (tool result, then inside the next model request):
    # 40 KB that history holds as two references of about 210 bytes.
    history_bytes = sum(event.ByteSize() for event in history.events)
    assert history_bytes < REPORT_CHARS / 2, history_bytes
    digests = referenced_digests(history.events)
    assert len(digests) >= 2
    paths = [payload_store / digest[:2] / digest for digest in digests]
    assert all(path.is_file() for path in paths), paths
    # The references name tree roots; the report itself is stored once, as a chunk
    # that the tool's result and the next model request share.
    holding = [p for p in files(payload_store) if report.encode() in p.read_bytes()]
    assert len(holding) == 1, holding


def test_exports() -> None:
    import smyth_temporal.storage

    assert smyth_temporal.storage.__all__ == [
        "DEFAULT_PAYLOAD_PATH",
        "DEFAULT_PAYLOAD_THRESHOLD",
        "DRIVER_NAME",
        "INLINE_QUERY_MAX",
        "QUERY_ONLY",
        "ContentAddressedFileDriver",
        "QueryAnswers",
        "default_payload_storage",
        "inline_query_results",
        "mark_and_sweep",
        "read_mark",
        "recorded_namespaces",
        "store_clock",
        "store_stats",
        "stored_digests",
        "with_chunk_codec",
    ]
