"""What smyth keeps on disk: owner-only, no way out of the store, and garbage collection."""

from __future__ import annotations

import asyncio
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.client import Client
from temporalio.converter import StorageDriverClaim, StorageDriverRetrieveContext
from temporalio.testing import WorkflowEnvironment

from smyth_temporal import AgentClient, AgentInput, ConfigurationError, SmythPlugin
from smyth_temporal.memory import EdgeStore
from smyth_temporal.storage import ContentAddressedFileDriver
from smyth_temporal.storage._gc import store_files
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from tests.storage.test_payload_storage import STORE, Reporter, payload


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def loose_umask() -> Iterator[None]:
    previous = os.umask(0o022)  # what most machines have: world-readable by default
    try:
        yield
    finally:
        os.umask(previous)


async def test_the_store_is_owner_only(tmp_path: Path, loose_umask: None) -> None:
    root = tmp_path / "deep" / "payloads"
    driver = ContentAddressedFileDriver(root)
    [claim] = await driver.store(STORE, [payload(4000)])
    file = driver.path_for(claim.claim_data["sha256"])
    assert (mode(root), mode(file.parent), mode(file)) == (0o700, 0o700, 0o600)

    # An existing store made world-readable (by an older version, or by hand) is tightened.
    other = tmp_path / "old"
    other.mkdir(mode=0o755)
    await ContentAddressedFileDriver(other).store(STORE, [payload(3000)])
    assert mode(other) == 0o700


def test_embedded_memory_is_owner_only(tmp_path: Path, loose_umask: None) -> None:
    store = EdgeStore(tmp_path / "memory")
    asyncio.run(store.ensure_collection("memories", 8))
    asyncio.run(store.close())
    assert mode(tmp_path / "memory") == 0o700


async def test_a_symlinked_store_is_refused(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    driver = ContentAddressedFileDriver(tmp_path / "link")
    with pytest.raises(ConfigurationError, match="not a symlink"):
        await driver.store(STORE, [payload(4000)])
    assert list((tmp_path / "elsewhere").iterdir()) == []  # nothing written through it


async def test_a_symlink_inside_the_store_cannot_lead_out(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    driver = ContentAddressedFileDriver(tmp_path / "store")
    [claim] = await driver.store(STORE, [payload(4000)])
    digest = claim.claim_data["sha256"]
    shard = driver.path_for(digest).parent
    # Someone replaces a shard with a link to a directory of their choosing.
    (outside / digest).write_bytes(driver.path_for(digest).read_bytes())
    driver.path_for(digest).unlink()
    shard.rmdir()
    shard.symlink_to(outside)
    with pytest.raises(ValueError, match="symlink"):
        await driver.retrieve(StorageDriverRetrieveContext(), [claim])
    with pytest.raises(ValueError, match="symlink"):
        await driver.store(STORE, [payload(4000)])
    # Claims that name a path are refused before any file is touched.
    for bad in ("../../etc/passwd", "/etc/passwd", digest[:-1] + "/"):
        with pytest.raises(ValueError, match="no valid 'sha256' digest"):
            await driver.retrieve(
                StorageDriverRetrieveContext(), [StorageDriverClaim(claim_data={"sha256": bad})]
            )


# --- gc on a real server ---------------------------------------------------------------


def age(path: Path, hours: float) -> None:
    then = time.time() - hours * 3600
    os.utime(path, (then, then))


async def orphan(root: Path, tag: str) -> Path:
    blob = Payload(metadata={"encoding": b"binary/plain"}, data=tag.encode() * 500)
    driver = ContentAddressedFileDriver(root)
    [claim] = await driver.store(STORE, [blob])
    return driver.path_for(claim.claim_data["sha256"])


def smyth(*arguments: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = [str(Path(sys.executable).with_name("smyth")), *arguments]
    return subprocess.run(
        command, env={**os.environ, **env}, capture_output=True, text=True, timeout=120
    )


async def test_gc_removes_only_what_no_history_needs(
    env: WorkflowEnvironment,
    address: str,
    task_queue: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = tmp_path / "payloads"
    monkeypatch.setenv("SMYTH_PAYLOAD_PATH", str(root))
    client = Client(env.client.service_client, namespace="default", plugins=[SmythPlugin()])
    model = ScriptedModel([tool_call("big_report", topic="ACME"), reply("read it")])
    async with agent_worker(client, Reporter, model=model, task_queue=task_queue):
        agents = AgentClient(client, task_queue=task_queue)
        handle = await agents.start(Reporter, AgentInput(prompt="Report on ACME"))
        await agents.result(handle.id)
    referenced = {path for _, path in store_files(root)}
    assert referenced, "the run should have stored its report"
    old_orphan, young_orphan = await orphan(root, "old"), await orphan(root, "young")
    for path in [*referenced, old_orphan]:
        age(path, hours=48)  # referenced files are old too: only references keep them

    settings = {"SMYTH_PAYLOAD_PATH": str(root)}
    gc = ("storage", "gc", "--older-than", "1d", "--address", address)
    # The first run only marks; the next one (the grace period waived) removes what is
    # still unreferenced and unused.
    first = await asyncio.to_thread(smyth, *gc, "--grace", "0s", "--force", env=settings)
    assert first.returncode == 0, first.stderr
    assert first.stdout == "" and "marked 1 unreferenced payloads" in first.stderr
    dry = await asyncio.to_thread(smyth, *gc, "--grace", "0s", "--force", "--dry-run", env=settings)
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.split() == [old_orphan.name]
    assert "would remove 1 payloads" in dry.stderr
    assert old_orphan.exists()

    waiting = await asyncio.to_thread(smyth, *gc, env=settings)
    assert waiting.returncode == 0 and "younger than --grace" in waiting.stderr
    assert old_orphan.exists()
    too_young = await asyncio.to_thread(
        smyth, "storage", "gc", "--older-than", "10m", "--address", address, env=settings
    )
    assert too_young.returncode == 1 and "--force" in too_young.stderr

    done = await asyncio.to_thread(smyth, *gc, "--grace", "0s", "--force", env=settings)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [old_orphan.name]
    assert not old_orphan.exists()
    assert young_orphan.exists()  # unreferenced, but written lately
    assert all(path.exists() for path in referenced)  # the closed run still needs them
    # And the closed run still reads: its history's references resolve.
    assert (await agents.result(handle.id)).output == "read it"

    stats = await asyncio.to_thread(smyth, "storage", "stats", env=settings)
    assert stats.returncode == 0 and f"{len(referenced) + 1} files" in stats.stdout
