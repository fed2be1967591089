"""A query's answer stays out of the payload store: no history keeps it.

Who could break it: a state read or an event stream read that writes a file per read
(the store grows with every console refresh, and each read pays a write and a read
back); a marker an attacker with Temporal access strips or adds to a sealed payload
(authenticated, so the payload no longer opens); a huge answer kept inline past gRPC's
message limit; an update's answer (in history) left inline by mistake.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.api.common.v1 import Payload, WorkflowExecution
from temporalio.api.enums.v1 import EventType
from temporalio.api.query.v1 import WorkflowQuery
from temporalio.api.workflowservice.v1 import QueryWorkflowRequest
from temporalio.client import Client
from temporalio.converter import ExternalStorage, StorageDriver, StorageDriverSelectContext
from temporalio.testing import WorkflowEnvironment

from smyth_temporal import AgentClient, PayloadDecryptionError, SmythPlugin
from smyth_temporal.security import EncryptionCodec, KeyRing, new_key
from smyth_temporal.storage import (
    DEFAULT_PAYLOAD_THRESHOLD,
    INLINE_QUERY_MAX,
    QUERY_ONLY,
    ContentAddressedFileDriver,
    QueryAnswers,
    inline_query_results,
)
from smyth_temporal.testing import ScriptedModel, agent_worker, reply
from smyth_temporal.types.agent import AgentState
from smyth_temporal.types.events import MessageCompleted
from smyth_temporal.types.sessions import session_workflow_id
from tests.helpers.agents import Analyst

CONTEXT = StorageDriverSelectContext()
LONG = "The quarterly figures, line by line. " * 120
"""A message long enough that the session's state is over the store's threshold."""


def store_files(root: Path) -> set[Path]:
    """The store's payload files (not its records of namespaces, which are empty)."""
    return {p for p in root.rglob("*") if p.is_file() and p.stat().st_size > 0}


async def _reads_of_a_session(
    client: Client, task_queue: str, root: Path, *, eavesdropper: Client | None = None
) -> list[AgentState]:
    """State and event reads of an idle session; the store must be as before them.

    ``eavesdropper``: someone with Temporal access but no key asks the state too; the
    answer, inline now, must still be ciphertext.
    """
    agents = AgentClient(client, task_queue=task_queue)
    model = ScriptedModel([reply(f"Noted: {LONG}")])
    async with agent_worker(client, Analyst, model=model, task_queue=task_queue):
        await agents.send(Analyst, task_queue, LONG)  # a session of the test's own
        session = session_workflow_id("Analyst", "default", task_queue)
        before = store_files(root)
        states = [await agents.state(session) for _ in range(3)]
        assert store_files(root) == before, "a state read wrote to the payload store"
        if eavesdropper is not None:
            answer = await eavesdropper.workflow_service.query_workflow(
                QueryWorkflowRequest(
                    namespace=eavesdropper.namespace,
                    execution=WorkflowExecution(workflow_id=session),
                    query=WorkflowQuery(query_type="state"),
                )
            )
            [sealed] = answer.query_result.payloads
            assert sealed.metadata["encoding"] == b"binary/smyth-encrypted"
            assert sealed.metadata[QUERY_ONLY] == b"1"  # inline, yet sealed
            assert b"quarterly" not in sealed.SerializeToString()
        # The events so far, read by the stream's poll query: one answer over 8 KB.
        read = []
        async for event in agents.events(session):
            read.append(event)
            if isinstance(event, MessageCompleted) and event.message.role == "assistant":
                break
        assert sum(len(e.model_dump_json()) for e in read) > 2 * DEFAULT_PAYLOAD_THRESHOLD
        assert store_files(root) == before, "an event read wrote to the payload store"
    return states


async def test_a_state_read_writes_nothing_to_the_payload_store(
    client: Client, task_queue: str, payload_store: Path
) -> None:
    states = await _reads_of_a_session(client, task_queue, payload_store)
    state = states[-1]
    assert len(state.model_dump_json()) > DEFAULT_PAYLOAD_THRESHOLD  # it would be stored
    assert state.messages[-1].content == f"Noted: {LONG}"
    # An update's answer is in history: the reply (over the threshold) stays a reference.
    session = session_workflow_id("Analyst", "default", task_queue)
    history = await client.get_workflow_handle(session).fetch_history()
    [answered] = [
        event.workflow_execution_update_completed_event_attributes.outcome.success
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED
    ]
    assert b"ExternalStorageReference" in answered.SerializeToString()
    assert QUERY_ONLY not in answered.payloads[0].metadata


async def test_a_sealed_state_read_writes_nothing_either(
    env: WorkflowEnvironment, task_queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "payloads"
    monkeypatch.setenv("SMYTH_PAYLOAD_PATH", str(root))
    monkeypatch.setenv("SMYTH_ENCRYPTION_KEYS", new_key("k1"))
    sealed = Client(
        env.client.service_client, namespace=env.client.namespace, plugins=[SmythPlugin()]
    )
    states = await _reads_of_a_session(sealed, task_queue, root, eavesdropper=env.client)
    assert states[-1].messages[-1].content == f"Noted: {LONG}"
    assert store_files(root), "the conversation itself is stored"


def test_the_marker_is_sealed_with_the_payload() -> None:
    codec = EncryptionCodec(KeyRing.parse(new_key("k1")))
    state = _marked(5_000)
    box = codec.seal(state)
    assert box.metadata[QUERY_ONLY] == b"1"  # the store, after the codec, sees it
    assert codec.open(box) == state

    stripped, added = Payload(), codec.seal(Payload(metadata={"encoding": b"json/plain"}))
    stripped.CopyFrom(box)
    del stripped.metadata[QUERY_ONLY]
    added.metadata[QUERY_ONLY] = b"1"
    for forged in (stripped, added):
        with pytest.raises(PayloadDecryptionError, match="altered"):
            codec.open(forged)


def _marked(size: int) -> Payload:
    return Payload(metadata={"encoding": b"json/plain", QUERY_ONLY: b"1"}, data=b"x" * size)


def test_only_marked_answers_under_the_cap_stay_inline(tmp_path: Path) -> None:
    driver = ContentAddressedFileDriver(tmp_path)
    storage = inline_query_results(ExternalStorage(drivers=[driver]))
    select = storage.driver_selector
    assert select is not None
    assert select(CONTEXT, _marked(10_000)) is None
    assert select(CONTEXT, _marked(INLINE_QUERY_MAX + 1)) is driver  # under gRPC's limit
    plain = Payload(metadata={"encoding": b"json/plain"}, data=b"x" * 10_000)
    assert select(CONTEXT, plain) is driver
    assert inline_query_results(storage) is storage


def test_a_selector_of_ones_own_still_picks_the_rest(tmp_path: Path) -> None:
    fast, slow = (
        ContentAddressedFileDriver(tmp_path / "a", name="a"),
        ContentAddressedFileDriver(tmp_path / "b", name="b"),
    )
    asked: list[Payload] = []

    def by_size(_: StorageDriverSelectContext, payload: Payload) -> StorageDriver | None:
        asked.append(payload)
        return fast if payload.ByteSize() < 100_000 else slow

    mine = ExternalStorage(drivers=[fast, slow], driver_selector=by_size)
    storage = inline_query_results(mine)
    assert storage.drivers == mine.drivers
    select = storage.driver_selector
    assert select is not None
    assert select(CONTEXT, _marked(5_000)) is None and not asked
    big = Payload(data=b"y" * 200_000)
    assert select(CONTEXT, big) is slow and asked == [big]


def test_the_plugin_keeps_answers_inline_on_any_storage(tmp_path: Path) -> None:
    explicit = ExternalStorage(drivers=[ContentAddressedFileDriver(tmp_path)])
    plugin = SmythPlugin(payload_storage=explicit)
    converter = plugin.data_converter
    assert converter is not None and not callable(converter)
    storage = converter.external_storage
    assert storage is not None and storage.drivers == explicit.drivers
    assert storage.driver_selector is not None
    assert storage.driver_selector(CONTEXT, _marked(10_000)) is None
    assert any(isinstance(i, QueryAnswers) for i in plugin.interceptors or ())
    # No store, nothing to keep out of it: answers go as temporalio sends them.
    bare = SmythPlugin(payload_storage=None, encryption=None)
    assert not any(isinstance(i, QueryAnswers) for i in bare.interceptors or ())
