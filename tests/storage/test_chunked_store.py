"""The chunked payload layout: a conversation's messages stored once, not once per turn."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import itertools
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.client import Client, WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import (
    DataConverter,
    ExternalStorage,
    StorageDriverClaim,
    StorageDriverRetrieveContext,
    StorageDriverStoreContext,
    StorageDriverWorkflowInfo,
    WorkflowSerializationContext,
)
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer, Worker

from smyth_temporal import (
    AgentClient,
    AgentConfig,
    AgentInput,
    AgentResult,
    AgentWorkflow,
    ConfigurationError,
    PayloadDecryptionError,
    SmythPlugin,
    tool,
)
from smyth_temporal.clients import referenced_digests
from tests.helpers.trader import Trader

with workflow.unsafe.imports_passed_through():
    from smyth_temporal.models import ModelRequest, ModelResponse
    from smyth_temporal.security import EncryptionCodec, KeyRing, new_key
    from smyth_temporal.storage import (
        ContentAddressedFileDriver,
        default_payload_storage,
        store_stats,
    )
    from smyth_temporal.storage._chunks import split
    from smyth_temporal.storage._gc import collect_garbage
    from smyth_temporal.storage._inventory import read_inventory
    from smyth_temporal.storage._tree import FANOUT, Node, build_tree, parse_node
    from smyth_temporal.testing import ScriptedModel, payloads_in, reply, tool_call
    from smyth_temporal.types.messages import Message, ToolCall

STEPS = 30
PAGE_CHARS = 3000
_WORDS = ["ledger", "quote", "margin", "spread", "yield", "hedge", "audit", "bond"]


def page(step: int) -> str:
    """About 3 KB of text, different on every step (deterministic)."""
    words = random.Random(step).choices(_WORDS, k=PAGE_CHARS // 5)
    return f"page {step}: {' '.join(words)}"[:PAGE_CHARS]


@tool(max_output_chars=PAGE_CHARS * 2)
async def read_page(step: int) -> str:
    """Read one page.

    Args:
        step: The page number.
    """
    return page(step)


@workflow.defn
class PageReader(AgentWorkflow):
    config = AgentConfig(
        model="test-model", tools=[read_page], max_steps=STEPS + 5, context_budget=None
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


class PagingModel:
    """Reads pages 1..STEPS, then answers."""

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if request.step <= STEPS:
            return tool_call("read_page", step=request.step)
        return reply(f"read {STEPS} pages")


STORE = StorageDriverStoreContext()
RETRIEVE = StorageDriverRetrieveContext()


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "payloads"
    monkeypatch.setenv("SMYTH_PAYLOAD_PATH", str(root))
    for name in ("SMYTH_PAYLOAD_CHUNKS", "SMYTH_ENCRYPTION_KEYS", "SMYTH_ENCRYPTION_KEY_FILE"):
        monkeypatch.delenv(name, raising=False)
    yield root


def conversation(turns: int) -> list[Message]:
    messages = [
        Message(role="system", content="You read pages."),
        Message(role="user", content="Go"),
    ]
    for step in range(1, turns + 1):
        call = ToolCall(id=f"call_{step}", name="read_page", arguments=f'{{"step": {step}}}')
        messages.append(Message(role="assistant", tool_calls=[call]))
        messages.append(Message(role="tool", content=page(step), tool_call_id=call.id))
    return messages


def request_payload(turns: int) -> Payload:
    request = ModelRequest(model="m", messages=conversation(turns), step=turns + 1)
    [payload] = pydantic_data_converter.payload_converter.to_payloads([request])
    return payload


def files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


# -- the layout, without a server ---------------------------------------------------------


def test_split_cuts_at_messages_and_long_strings() -> None:
    data = request_payload(3).data
    pieces = split(data)
    assert b"".join(pieces) == data and all(pieces)
    # Each page is a chunk of its own, exactly its JSON string's text.
    for step in (1, 2, 3):
        assert page(step).encode() in pieces
    # A message is the same chunk whether or not it is the last of the list.
    assert set(split(request_payload(2).data)) & set(pieces) >= {
        p for p in split(request_payload(2).data) if b'"role":"tool"' in p
    }
    assert split(b"x" * 5000) == [b"x" * 5000]  # nothing to cut: stored whole


def test_trees_of_a_growing_list_share_their_nodes() -> None:
    def leaves(n: int) -> list[tuple[str, int]]:
        return [(hashlib.sha256(str(i).encode()).hexdigest(), 10) for i in range(n)]

    small = build_tree(leaves(500), sealed=False, namespace="")
    large = build_tree(leaves(510), sealed=False, namespace="")
    new = {digest for digest, _, _ in large} - {digest for digest, _, _ in small}
    assert len(new) <= 3  # the root and the nodes along the right edge
    _, blob, root = large[-1]
    assert parse_node(blob) == root and root.root and root.size == 5100
    assert len(root.children) <= 2 * FANOUT
    assert parse_node(Payload(data=b"x").SerializeToString()) is None


async def test_consecutive_turns_share_their_chunks(tmp_path: Path) -> None:
    driver = ContentAddressedFileDriver(tmp_path)
    written: list[int] = []
    claims: list[StorageDriverClaim] = []
    for turns in range(1, 21):
        claims += await driver.store(STORE, [request_payload(turns)])
        written.append(sum(p.stat().st_size for p in files(tmp_path)))
    # Each turn adds its page (3 KB), a few small pieces and the tree's new right edge
    # (at most a few KB), not the whole conversation again (turn 20 alone is 60 KB).
    growth = [later - earlier for earlier, later in itertools.pairwise(written)]
    assert max(growth) < 3 * PAGE_CHARS and sum(growth) / len(growth) < 2 * PAGE_CHARS, growth
    # Every turn reads back exactly, also by a driver that has nothing cached.
    cold = ContentAddressedFileDriver(tmp_path, cache_bytes=0)
    for turns, claim in enumerate(claims, start=1):
        assert await cold.retrieve(RETRIEVE, [claim]) == [request_payload(turns)]


async def test_whole_layout_still_reads_and_the_switch_turns_chunks_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SMYTH_PAYLOAD_PATH", str(tmp_path))
    monkeypatch.setenv("SMYTH_PAYLOAD_CHUNKS", "off")
    storage = default_payload_storage()
    assert storage is not None
    [old] = storage.drivers
    [claim] = await old.store(STORE, [request_payload(5)])
    [path] = files(tmp_path)
    assert path.name == claim.claim_data["sha256"]
    assert path.read_bytes() == request_payload(5).SerializeToString(deterministic=True)
    assert await ContentAddressedFileDriver(tmp_path).retrieve(RETRIEVE, [claim]) == [
        request_payload(5)
    ]
    monkeypatch.setenv("SMYTH_PAYLOAD_CHUNKS", "sometimes")
    with pytest.raises(ConfigurationError, match="SMYTH_PAYLOAD_CHUNKS"):
        default_payload_storage()


async def test_encrypted_chunks_are_sealed_and_still_shared(tmp_path: Path) -> None:
    codec = EncryptionCodec(KeyRing.parse(new_key("k1")))
    storage = ExternalStorage(
        drivers=[ContentAddressedFileDriver(tmp_path, codec=codec)], payload_size_threshold=256
    )
    converter = dataclasses.replace(
        pydantic_data_converter, payload_codec=codec, external_storage=storage
    )
    marker = "page 7: "
    references = []
    sizes = []
    for turns in (8, 9, 10):
        request = ModelRequest(model="m", messages=conversation(turns))
        references += await converter.encode([request])
        sizes.append(sum(p.stat().st_size for p in files(tmp_path)))
    assert sizes[2] - sizes[1] < 2 * PAGE_CHARS  # turn 10 added one page, not 10
    for file in files(tmp_path):
        blob = file.read_bytes()
        assert marker.encode() not in blob and b"read_page" not in blob
        encoding = Payload.FromString(blob).metadata["encoding"]
        assert encoding in (b"binary/smyth-encrypted", b"binary/smyth-tree")
    decoded = await converter.decode(references, [ModelRequest] * 3)
    assert [len(r.messages) for r in decoded] == [18, 20, 22]

    # Without the key the chunks do not open.
    bare = dataclasses.replace(
        pydantic_data_converter,
        external_storage=ExternalStorage(drivers=[ContentAddressedFileDriver(tmp_path)]),
    )
    with pytest.raises(Exception, match=r"encryption key|encoding"):
        await bare.decode(references[:1], [ModelRequest])


async def test_encrypted_chunks_stay_in_their_namespace(tmp_path: Path) -> None:
    codec = EncryptionCodec(KeyRing.parse(new_key("k1")))
    driver = ContentAddressedFileDriver(tmp_path, codec=codec)
    context = StorageDriverStoreContext(target=StorageDriverWorkflowInfo(namespace="alpha"))
    sealed = codec.with_context(namespace("alpha")).seal(request_payload(3))
    [claim] = await driver.store(context, [sealed])
    assert read_inventory(tmp_path).nodes[claim.claim_data["sha256"]].namespace == "alpha"
    [back] = await ContentAddressedFileDriver(tmp_path, codec=codec).retrieve(RETRIEVE, [claim])
    # Read back sealed for its namespace again, so a reader elsewhere is refused.
    assert codec.with_context(namespace("alpha")).open(back) == request_payload(3)
    with pytest.raises(PayloadDecryptionError, match="namespace 'alpha'"):
        codec.with_context(namespace("beta")).open(back)


def namespace(name: str) -> WorkflowSerializationContext:
    return WorkflowSerializationContext(namespace=name, workflow_id="w")


# -- agent runs on a real server ----------------------------------------------------------


def plugin_client(env: WorkflowEnvironment, **options: object) -> Client:
    return Client(
        env.client.service_client,
        namespace=env.client.namespace,
        plugins=[SmythPlugin(**options)],  # type: ignore[arg-type]
    )


async def decode_everything(converter: DataConverter, history: WorkflowHistory) -> list[object]:
    """Every payload of the history, read through ``converter`` (references resolved)."""
    values: list[object] = []
    for event in history.events:
        for payload in payloads_in(event):
            values += await converter.decode([payload])
    return values


async def test_an_agent_run_stores_each_message_once(
    env: WorkflowEnvironment, task_queue: str, store: Path
) -> None:
    client = plugin_client(env)
    worker_client = plugin_client(env, model=PagingModel())
    async with Worker(worker_client, task_queue=task_queue, workflows=[PageReader]):
        agents = AgentClient(client, task_queue=task_queue)
        handle = await agents.start(PageReader, "Read the pages.")
        result = await agents.result(handle.id)
    assert result.status == "completed" and result.steps == STEPS + 1

    distinct = sum(len(page(step)) for step in range(1, STEPS + 1))
    stats = store_stats(store)
    # Stored: about the distinct content (each page once) plus small pieces and nodes.
    assert stats.bytes < 2 * distinct, (stats, distinct)
    # Stored whole, every turn's conversation would have been its own file: about
    # STEPS / 2 times the distinct content.
    assert stats.logical_bytes > 8 * stats.bytes, stats
    assert stats.roots >= 2 * STEPS and stats.shared_chunks > STEPS
    for step in (1, STEPS // 2, STEPS):
        text = page(step).encode()
        assert sum(text in p.read_bytes() for p in files(store)) == 1

    # `smyth storage stats` says so.
    shown = await asyncio.to_thread(
        subprocess.run,
        [str(Path(sys.executable).with_name("smyth")), "storage", "stats"],
        env={**os.environ, "SMYTH_PAYLOAD_PATH": str(store)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    assert f"{stats.files:,} files" in shown.stdout
    assert f"chunked payloads  {stats.roots:,}, over {stats.chunks:,} chunks" in shown.stdout
    assert f"shared chunks     {stats.shared_chunks:,} in more than one payload" in shown.stdout
    assert f"dedup ratio {stats.dedup_ratio:.1f}x" in shown.stdout

    # History is as small as ever (references only), and every payload reads back,
    # through a fresh client with nothing cached.
    history = await client.get_workflow_handle(handle.id).fetch_history()
    assert sum(e.ByteSize() for e in history.events) / result.steps < 3000
    fresh = plugin_client(env).data_converter
    values = await decode_everything(fresh, history)
    assert any(isinstance(v, dict) and len(v.get("messages", [])) > 2 * STEPS for v in values)


async def test_a_run_started_with_whole_payloads_finishes_chunked(
    env: WorkflowEnvironment, task_queue: str, store: Path
) -> None:
    def storage(chunked: bool) -> ExternalStorage:
        driver = ContentAddressedFileDriver(store, chunked=chunked)
        return ExternalStorage(drivers=[driver], payload_size_threshold=256)

    briefing = " ".join(random.Random(1).choices(_WORDS, k=600))  # 4 KB prompt: a chunk
    model = ScriptedModel([tool_call("sell", symbol="ACME", quantity=10), reply("done")])

    # Before the upgrade: every payload is stored whole.
    before = plugin_client(env, payload_storage=storage(False))
    worker = Worker(
        plugin_client(env, model=model, payload_storage=storage(False)),
        task_queue=task_queue,
        workflows=[Trader],
    )
    async with worker:
        agents = AgentClient(before, task_queue=task_queue)
        handle = await agents.start(Trader, f"Sell ACME. Briefing: {briefing}")
        for _ in range(100):
            if (await agents.state(handle.id)).pending_approvals:
                break
            await asyncio.sleep(0.1)
        assert (await agents.state(handle.id)).pending_approvals
    old_files = set(files(store))
    assert old_files and not read_inventory(store).nodes

    # After it: the same store, the chunked layout, and the run goes on.
    after = plugin_client(env, payload_storage=storage(True))
    worker = Worker(
        plugin_client(env, model=model, payload_storage=storage(True)),
        task_queue=task_queue,
        workflows=[Trader],
    )
    async with worker:
        agents = AgentClient(after, task_queue=task_queue)
        await agents.approve(handle.id, by="alice")
        result = await agents.result(handle.id)
    assert result.output == "done"
    inventory = read_inventory(store)
    roots = {d for d, node in inventory.nodes.items() if node.root}
    assert roots, "the turn after the upgrade should be chunked"
    assert briefing.encode() in b"".join(p.read_bytes() for p in set(files(store)) - old_files)

    # Its history, old references and new, replays and reads with the new code.
    history = await after.get_workflow_handle(handle.id).fetch_history()
    referenced = {d for d in referenced_in(history)}
    assert referenced & roots and referenced & {p.name for p in old_files}
    replayer = Replayer(workflows=[Trader], plugins=[SmythPlugin(payload_storage=storage(True))])
    assert (await replayer.replay_workflow(history)).replay_failure is None
    assert await decode_everything(plugin_client(env).data_converter, history)

    # Garbage collection keeps all of it: old files, roots, and the chunks below them,
    # however old; an orphaned conversation (root, nodes, chunks) goes.
    orphan_driver = ContentAddressedFileDriver(store)
    [orphan] = await orphan_driver.store(STORE, [request_payload(40)])
    every = read_inventory(store)
    orphaned = every.reachable([orphan.claim_data["sha256"]]) - every.reachable(referenced)
    assert len(orphaned) > 40
    for path in files(store):
        age(path, hours=48)
    names = await referenced_digests(after)
    report = collect_garbage(store, names, timedelta(days=1))
    needed = every.reachable(names)
    assert needed >= every.reachable(referenced) and needed & roots
    # Removed: the orphan, and what no history names (state queries' answers, which
    # reached the store without going through history).
    assert orphaned <= set(report.removed) == set(every.files) - needed
    assert report.kept_referenced == len(needed)
    assert await decode_everything(plugin_client(env).data_converter, history)


async def test_a_recorded_run_with_whole_payloads_replays(tmp_path: Path) -> None:
    # Recorded by tests/helpers/record_legacy_store.py with the layout 0.4 wrote: its history's
    # references name whole-payload files. Today's (chunked) driver replays and reads it.
    from tests.helpers.record_legacy_store import HISTORY, PAYLOADS, WORKFLOW_ID, legacy_storage

    store = tmp_path / "payloads"
    shutil.copytree(PAYLOADS, store)
    assert files(store) and not read_inventory(store).nodes
    history = WorkflowHistory.from_json(WORKFLOW_ID, HISTORY.read_text())
    storage = legacy_storage(store, chunked=True)
    replayer = Replayer(workflows=[PageReader], plugins=[SmythPlugin(payload_storage=storage)])
    assert (await replayer.replay_workflow(history)).replay_failure is None
    converter = dataclasses.replace(pydantic_data_converter, external_storage=storage)
    values = await decode_everything(converter, history)
    assert any(isinstance(v, dict) and v.get("content") == page(2) for v in values)
    # (Replaying encodes the commands again, so today's layout adds their chunks.)
    assert {p.name for p in files(store)} >= {p.name for p in files(PAYLOADS)}


def test_a_young_root_keeps_its_old_chunks(tmp_path: Path) -> None:
    driver = ContentAddressedFileDriver(tmp_path)
    [claim] = asyncio.run(driver.store(STORE, [request_payload(30)]))
    root = claim.claim_data["sha256"]
    for path in files(tmp_path):
        if path.name != root:
            age(path, hours=48)  # only the root was written lately
    report = collect_garbage(tmp_path, set(), timedelta(days=1))
    assert report.removed == [] and report.kept_recent == len(files(tmp_path))
    nodes = read_inventory(tmp_path).nodes
    assert len({node.level for node in nodes.values()}) >= 2  # a root over inner nodes
    age(driver.path_for(root), hours=48)
    report = collect_garbage(tmp_path, set(), timedelta(days=1))
    assert files(tmp_path) == [] and root in nodes
    # Parents before children: nodes by level, top down, then the chunks.
    levels = [parsed.level for parsed in removed_nodes(report.removed, nodes)]
    assert levels == sorted(levels, reverse=True)
    assert set(report.removed[: len(nodes)]) == set(nodes)


def removed_nodes(removed: list[str], nodes: dict[str, Node]) -> list[Node]:
    return [nodes[digest] for digest in removed if digest in nodes]


def referenced_in(history: WorkflowHistory) -> set[str]:
    import re

    claim = re.compile(rb'"sha256"\s*:\s*"([0-9a-f]{64})"')
    return {
        m.decode()
        for event in history.events
        for payload in payloads_in(event)
        for m in claim.findall(payload.data)
    }


def age(path: Path, hours: float) -> None:
    then = time.time() - hours * 3600
    os.utime(path, (then, then))
