"""Memories encrypted at rest: Qdrant Edge files hold no content, search still works."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from pathlib import Path

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.client import Client

from smyth_temporal import AgentClient, AgentInput, PayloadDecryptionError, SmythPlugin
from smyth_temporal.memory import EdgeStore, HashEmbedder, MemoryManager
from smyth_temporal.memory._sealed import SEALED_FIELD, SealedStore
from smyth_temporal.memory._store import StoredPoint
from smyth_temporal.security import EncryptionCodec, KeyRing, new_key
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from smyth_temporal.types.memory import MemoryScope, RecallRequest, RememberRequest
from tests.helpers.memory_agents import Researcher

MARKER = "merger-codename-BLUEHERON"
SCOPE = MemoryScope(tenant="t1", namespace="research")


def disk_bytes(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in root.rglob("*") if p.is_file())


async def remember_and_recall(store_root: Path, sealed: bool) -> str:
    """Write one memory with the marker, find it again; the text that came back."""
    codec = EncryptionCodec(KeyRing.parse(new_key("k1")))
    inner = EdgeStore(store_root)
    store = SealedStore(inner, codec) if sealed else inner
    memory = MemoryManager(store, HashEmbedder(64))
    now = datetime.now(UTC)
    await memory.remember(
        RememberRequest(scope=SCOPE, texts=[f"{MARKER} closes in May"], created_at=now)
    )
    hits = await memory.recall(RecallRequest(scope=SCOPE, query=MARKER, now=now))
    await memory.close()
    return hits[0].record.text


async def test_the_files_hold_no_content_and_search_still_works(tmp_path: Path) -> None:
    assert await remember_and_recall(tmp_path / "plain", sealed=False) == f"{MARKER} closes in May"
    assert MARKER.encode() in disk_bytes(tmp_path / "plain")  # so the check below has teeth

    assert await remember_and_recall(tmp_path / "sealed", sealed=True) == f"{MARKER} closes in May"
    assert MARKER.encode() not in disk_bytes(tmp_path / "sealed")


async def test_a_tampered_memory_fails_loudly_and_old_ones_still_read(tmp_path: Path) -> None:
    codec = EncryptionCodec(KeyRing.parse(new_key("k1")))
    inner = EdgeStore(tmp_path)
    store = SealedStore(inner, codec)
    await store.ensure_collection("c", 4)
    point = StoredPoint(
        id="00000000-0000-0000-0000-000000000001",
        payload={"text": MARKER, "tenant": "t1"},
        vector=[1.0, 0, 0, 0],
    )
    old = StoredPoint(
        id="00000000-0000-0000-0000-000000000002",
        payload={"text": "from before the key", "tenant": "t1"},
        vector=[0, 1.0, 0, 0],
    )
    await store.upsert("c", [point])
    await inner.upsert("c", [old])  # written by a version without encryption
    [raw] = await inner.retrieve("c", [point.id])
    assert raw.payload.keys() == {"tenant", SEALED_FIELD}  # the text is only in the box
    by_id = {p.id: p for p in await store.retrieve("c", [point.id, old.id])}
    assert by_id[point.id].payload["text"] == MARKER
    assert by_id[old.id].payload["text"] == "from before the key"

    # Someone with access to the files flips one bit of the ciphertext...
    box = Payload.FromString(base64.b64decode(raw.payload[SEALED_FIELD]))
    box.data = box.data[:-1] + bytes([box.data[-1] ^ 1])
    altered = base64.b64encode(box.SerializeToString()).decode()
    await inner.set_payload("c", [point.id], {SEALED_FIELD: altered})
    with pytest.raises(PayloadDecryptionError, match="failed authentication"):
        await store.retrieve("c", [point.id])
    # ...or replaces the field with garbage.
    await inner.set_payload("c", [point.id], {SEALED_FIELD: "not base64 at all!"})
    with pytest.raises(PayloadDecryptionError, match="altered"):
        await store.retrieve("c", [point.id])
    await store.close()


async def test_an_agent_remembers_under_a_key(
    client: Client, task_queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the default memory: .smyth/memory under here
    for name in ("SMYTH_MEMORY_PATH", "QDRANT_URL", "SMYTH_ENV"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SMYTH_ENCRYPTION_KEYS", new_key("k1"))
    monkeypatch.setenv("SMYTH_PAYLOAD_PATH", str(tmp_path / "payloads"))
    sealed = Client(client.service_client, namespace=client.namespace, plugins=[SmythPlugin()])
    model = ScriptedModel(
        [tool_call("remember", text=f"{MARKER} closes in May", kind="fact"), reply("noted")]
    )
    async with agent_worker(sealed, Researcher, model=model, task_queue=task_queue):
        agents = AgentClient(sealed, task_queue=task_queue)
        handle = await agents.start(Researcher, AgentInput(prompt="Note the merger.", tenant="t1"))
        await agents.result(handle.id)
        hits = await agents.memory.search(MARKER, tenant="t1", namespace="research", kinds=["fact"])
    assert [h.record.text for h in hits] == [f"{MARKER} closes in May"]
    memory_files = disk_bytes(tmp_path / ".smyth" / "memory")
    assert memory_files, "the embedded memory should have files"
    assert MARKER.encode() not in memory_files
    history = (await client.get_workflow_handle(handle.id).fetch_history()).to_json()
    assert MARKER not in history
    assert MARKER.encode() not in disk_bytes(tmp_path / "payloads")
