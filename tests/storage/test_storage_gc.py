"""``smyth storage gc`` never removes a payload something still needs.

The store is shared by every namespace whose processes use it; an object may be
reused (stored again, or reached by a new tree) at any moment, including while gc
looks; and references sit wherever temporalio puts payloads.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from google.protobuf import json_format
from google.protobuf.duration_pb2 import Duration
from temporalio import activity, workflow
from temporalio.api.common.v1 import Payload, Payloads
from temporalio.api.failure.v1 import ApplicationFailureInfo, Failure
from temporalio.api.history.v1 import (
    ActivityTaskFailedEventAttributes,
    HistoryEvent,
    WorkflowExecutionStartedEventAttributes,
)
from temporalio.api.sdk.v1.external_storage_pb2 import ExternalStorageReference
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest, RegisterNamespaceRequest
from temporalio.client import Client
from temporalio.converter import ExternalStorage, StorageDriverRetrieveContext
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from smyth_temporal import SmythPlugin
from smyth_temporal.clients import referenced_digests
from smyth_temporal.storage import (
    DRIVER_NAME,
    ContentAddressedFileDriver,
    mark_and_sweep,
    read_mark,
    recorded_namespaces,
    store_clock,
    stored_digests,
)
from smyth_temporal.storage._claims import EncodedReferenceError
from smyth_temporal.storage._gc import sweep
from smyth_temporal.storage._inventory import read_inventory
from smyth_temporal.storage._namespaces import record_namespace
from smyth_temporal.testing import payloads_in
from tests.storage.test_chunked_store import RETRIEVE, STORE, request_payload
from tests.storage.test_storage_hardening import age, orphan, smyth

DAY = timedelta(days=1)


def all_files(root: Path) -> set[str]:
    return set(read_inventory(root).files)


def age_store(root: Path, hours: float = 48) -> None:
    for path in (f.path for f in read_inventory(root).files.values()):
        age(path, hours)


def collect(root: Path) -> list[str]:
    """One gc run as the CLI makes it (nothing referenced): sweep the last mark, mark again."""
    started = store_clock(root)
    report = mark_and_sweep(
        root, set(), started_at=started, older_than=DAY, previous=read_mark(root)
    )
    return report.removed


# -- reuse between the mark and the sweep ----------------------------------------------


async def test_an_object_reused_between_mark_and_sweep_survives(tmp_path: Path) -> None:
    driver = ContentAddressedFileDriver(tmp_path)
    [short] = await driver.store(STORE, [request_payload(100)])
    whole = await orphan(tmp_path, "whole")
    age_store(tmp_path)
    assert collect(tmp_path) == []  # the first run only marks
    assert read_mark(tmp_path) is not None
    marked = read_mark(tmp_path)
    assert marked is not None and marked.candidates == all_files(tmp_path)

    # Between the mark and the sweep, a process stores the same whole payload again,
    # and a longer conversation that shares the first one's chunks and inner nodes
    # (a writer touches only the top of what it reuses, never the chunks below).
    await driver.store(STORE, [orphan_payload("whole")])
    [longer] = await ContentAddressedFileDriver(tmp_path).store(STORE, [request_payload(104)])
    inventory = read_inventory(tmp_path)
    needed_by_longer = inventory.reachable([longer.claim_data["sha256"]])
    shared = needed_by_longer & inventory.reachable([short.claim_data["sha256"]])
    assert shared, "the longer conversation should reuse the shorter one's objects"

    removed = collect(tmp_path)
    assert whole.exists()
    assert needed_by_longer <= all_files(tmp_path)
    # What only the abandoned short conversation needed went.
    assert short.claim_data["sha256"] in removed
    fresh = ContentAddressedFileDriver(tmp_path)  # no cache: every file from disk
    [read] = await fresh.retrieve(StorageDriverRetrieveContext(), [longer])
    assert read == request_payload(104)


def orphan_payload(tag: str) -> Payload:
    return Payload(metadata={"encoding": b"binary/plain"}, data=tag.encode() * 500)


async def test_a_reuse_racing_the_removal_puts_the_file_back(tmp_path: Path) -> None:
    driver = ContentAddressedFileDriver(tmp_path)
    [claim] = await driver.store(STORE, [request_payload(30)])
    root = claim.claim_data["sha256"]
    age_store(tmp_path)
    collect(tmp_path)
    mark = read_mark(tmp_path)
    assert mark is not None and root in mark.candidates
    # gc has read the store (every file old and marked) when a writer reuses the root,
    # before gc gets to it: the sweep's last look must see that.
    stale = read_inventory(tmp_path)
    assert driver.has_object(root)
    report = sweep(tmp_path, stale, set(), mark, time.time() - DAY.total_seconds())
    assert report.put_back == 1 and report.removed == []
    assert all_files(tmp_path) == set(stale.files)
    [read] = await ContentAddressedFileDriver(tmp_path).retrieve(RETRIEVE, [claim])
    assert read == request_payload(30)


async def test_a_file_removed_while_being_stored_again_is_rewritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    driver = ContentAddressedFileDriver(tmp_path)
    [claim] = await driver.store(STORE, [orphan_payload("again")])
    path = driver.path_for(claim.claim_data["sha256"])
    real_utime = os.utime

    def gc_moves_it_first(target: object, *args: object, **kwargs: object) -> None:
        # gc moves the file away between the writer's size check and its touch.
        if Path(str(target)) == path and path.exists():
            path.unlink()
        real_utime(target, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr("smyth_temporal.storage._driver.os.utime", gc_moves_it_first)
    await driver.store(STORE, [orphan_payload("again")])
    monkeypatch.undo()
    assert path.exists()


def test_a_crashed_sweep_leaves_nothing_missing(tmp_path: Path) -> None:
    blob = orphan_payload("trash")
    [claim] = asyncio.run(ContentAddressedFileDriver(tmp_path).store(STORE, [blob]))
    path = ContentAddressedFileDriver(tmp_path).path_for(claim.claim_data["sha256"])
    trash = tmp_path / "gc" / "trash"
    trash.mkdir(parents=True)
    os.replace(path, trash / path.name)  # killed right after moving it away
    age_store(tmp_path)
    collect(tmp_path)  # the next run puts it back before anything else
    assert path.exists()


# -- references wherever a payload can be ---------------------------------------------


def reference(digest: str, driver: str = DRIVER_NAME) -> Payload:
    message = ExternalStorageReference(driver_name=driver, claim_data={"sha256": digest})
    return Payload(
        metadata={
            "encoding": b"json/protobuf",
            "messageType": ExternalStorageReference.DESCRIPTOR.full_name.encode(),
        },
        data=json_format.MessageToJson(message).encode(),
    )


def found(*messages: object) -> set[str]:
    digests: set[str] = set()
    for message in messages:
        for payload in payloads_in(message):  # type: ignore[arg-type]
            digests.update(stored_digests(payload, DRIVER_NAME))
    return digests


def test_a_reference_in_an_odd_place_is_found() -> None:
    in_memo, in_failure, nested, deeper, legacy = (f"{n:x}" * 64 for n in range(1, 6))
    nested_payloads = Payloads(payloads=[reference(nested)])
    carrier = Payload(
        metadata={
            "encoding": b"binary/protobuf",
            "messageType": b"temporal.api.common.v1.Payloads",
        },
        data=nested_payloads.SerializeToString(),
    )
    twice = Payload(
        metadata={"encoding": b"json/protobuf", "messageType": b"temporal.api.common.v1.Payload"},
        data=json_format.MessageToJson(
            Payload(
                metadata={
                    "encoding": b"binary/protobuf",
                    "messageType": b"temporal.api.common.v1.Payloads",
                },
                data=Payloads(payloads=[reference(deeper)]).SerializeToString(),
            )
        ).encode(),
    )
    old = Payload(
        metadata={"encoding": b"json/external-storage-reference"},
        data=(
            f'{{"driver_name": "{DRIVER_NAME}", "driver_claim": {{"claim_data": '
            f'{{"sha256": "{legacy}"}}}}}}'
        ).encode(),
    )
    started = HistoryEvent(
        workflow_execution_started_event_attributes=WorkflowExecutionStartedEventAttributes(
            input=Payloads(payloads=[carrier, twice, old]),
        )
    )
    started.workflow_execution_started_event_attributes.memo.fields["pending"].CopyFrom(
        reference(in_memo)
    )
    failed = HistoryEvent(
        activity_task_failed_event_attributes=ActivityTaskFailedEventAttributes(
            failure=Failure(
                message="outer",
                cause=Failure(
                    application_failure_info=ApplicationFailureInfo(
                        details=Payloads(payloads=[reference(in_failure)])
                    )
                ),
            )
        )
    )
    assert found(started, failed) == {in_memo, in_failure, nested, deeper, legacy}


def test_only_this_drivers_references_count() -> None:
    digest = "a" * 64
    lookalike = Payload(
        metadata={"encoding": b"json/plain"}, data=f'{{"sha256": "{"b" * 64}"}}'.encode()
    )
    assert found(Payloads(payloads=[reference(digest, "s3"), lookalike])) == set()
    assert found(Payloads(payloads=[reference("../../etc/passwd")])) == set()


def test_a_sealed_reference_stops_gc() -> None:
    sealed = Payload(
        metadata={
            "encoding": b"binary/encrypted",
            "__temporal_external_storage_reference": b"true",
        },
        data=b"ciphertext",
    )
    with pytest.raises(EncodedReferenceError, match="removes nothing"):
        found(Payloads(payloads=[sealed]))


# -- every namespace that shares the store ---------------------------------------------


async def register(client: Client, namespace: str) -> None:
    await client.workflow_service.register_namespace(
        RegisterNamespaceRequest(
            namespace=namespace, workflow_execution_retention_period=Duration(seconds=86400)
        )
    )
    for _ in range(200):  # the frontend learns of new namespaces on its next refresh
        try:
            await client.workflow_service.describe_namespace(
                DescribeNamespaceRequest(namespace=namespace)
            )
            return
        except RPCError:
            await asyncio.sleep(0.1)
    raise AssertionError(f"namespace {namespace} never appeared")


async def start_with_input(client: Client, text: str) -> str:
    """Start a workflow nobody serves, with an input big enough for the store."""
    for _ in range(100):
        try:
            handle = await client.start_workflow(
                "NobodyServesThis", text, id=f"gc-{uuid.uuid4().hex[:8]}", task_queue="gc-none"
            )
            return handle.id
        except RPCError:  # the namespace is not on every frontend path yet
            await asyncio.sleep(0.1)
    raise AssertionError("could not start a workflow")


async def test_another_namespaces_payloads_survive_gc(
    env: WorkflowEnvironment, address: str, tmp_path: Path
) -> None:
    root = tmp_path / "payloads"
    storage = ExternalStorage(
        drivers=[ContentAddressedFileDriver(root)], payload_size_threshold=1024
    )
    other = f"gc-other-{uuid.uuid4().hex[:8]}"
    await register(env.client, other)
    plugin = SmythPlugin(payload_storage=storage)
    theirs = Client(env.client.service_client, namespace=other, plugins=[plugin])
    ours = Client(env.client.service_client, namespace="default", plugins=[plugin])
    their_run = await start_with_input(theirs, "their input " * 400)
    our_run = await start_with_input(ours, "our input " * 400)
    assert recorded_namespaces(root) == sorted({other, "default"})
    referenced = all_files(root)
    assert len(referenced) >= 2
    stray = await orphan(root, "stray")
    age_store(root)

    settings = {"SMYTH_PAYLOAD_PATH": str(root)}
    gc = ("storage", "gc", "--older-than", "1d", "--grace", "0s", "--force")
    for _ in range(2):  # mark, then sweep: run from the default namespace
        done = await asyncio.to_thread(
            smyth, *gc, "--address", address, "--namespace", "default", env=settings
        )
        assert done.returncode == 0, done.stderr
        assert other in done.stderr  # it says which namespaces it read
    assert not stray.exists()
    assert referenced <= all_files(root)
    for client, run, sent in ((theirs, their_run, "their"), (ours, our_run, "our")):
        history = await client.get_workflow_handle(run).fetch_history()
        started = history.events[0].workflow_execution_started_event_attributes
        [text] = await client.data_converter.decode(started.input.payloads)
        assert text == f"{sent} input " * 400
        await client.get_workflow_handle(run).terminate()


async def test_gc_removes_nothing_when_a_namespace_the_store_serves_is_unreadable(
    env: WorkflowEnvironment, address: str, tmp_path: Path
) -> None:
    root = tmp_path / "payloads"
    stray = await orphan(root, "stray")
    # Another server's namespace writes to this store too (a shared volume).
    record_namespace(root, "on-another-server")
    age_store(root)
    settings = {"SMYTH_PAYLOAD_PATH": str(root)}
    gc = ("storage", "gc", "--older-than", "1d", "--grace", "0s", "--force", "--address", address)
    for _ in range(2):
        refused = await asyncio.to_thread(smyth, *gc, env=settings)
        assert refused.returncode == 1
        assert "'on-another-server'" in refused.stderr and "nothing was removed" in refused.stderr
    assert stray.exists() and read_mark(root) is None


# -- what an open run holds outside its history ----------------------------------------


@activity.defn
async def heartbeating() -> None:
    """Report big progress details, then wait (until cancelled) as a long task does."""
    activity.heartbeat("progress " * 400)
    await asyncio.Event().wait()


@workflow.defn(sandboxed=False)
class Waiter:
    @workflow.run
    async def run(self) -> None:
        await workflow.execute_activity(
            heartbeating,
            start_to_close_timeout=timedelta(hours=1),
            heartbeat_timeout=timedelta(minutes=10),
        )


async def test_a_pending_activitys_heartbeat_details_survive_gc(
    env: WorkflowEnvironment, tmp_path: Path
) -> None:
    root = tmp_path / "payloads"
    storage = ExternalStorage(
        drivers=[ContentAddressedFileDriver(root)], payload_size_threshold=1024
    )
    client = Client(
        env.client.service_client,
        namespace="default",
        plugins=[SmythPlugin(payload_storage=storage)],
    )
    queue = f"gc-heartbeat-{uuid.uuid4().hex[:8]}"
    async with Worker(client, task_queue=queue, workflows=[Waiter], activities=[heartbeating]):
        handle = await client.start_workflow(Waiter.run, id=queue, task_queue=queue)
        details = None
        for _ in range(300):  # the heartbeat reaches the server within its throttle
            described = await handle.describe()
            pending = described.raw_description.pending_activities
            if pending and pending[0].heartbeat_details.payloads:
                details = pending[0].heartbeat_details.payloads[0]
                break
            await asyncio.sleep(0.1)
        assert details is not None
        [digest] = stored_digests(details, DRIVER_NAME)  # stored, referenced nowhere else
        age_store(root)
        for _ in range(2):  # mark, then sweep
            referenced = await referenced_digests(client, namespaces=["default"])
            started = store_clock(root)
            mark_and_sweep(
                root, referenced, started_at=started, older_than=DAY, previous=read_mark(root)
            )
        assert digest in all_files(root)
        await handle.terminate()
