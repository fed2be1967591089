"""Payload encryption: the codec, its keys, and a run that is ciphertext everywhere."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import hashlib
import json
import subprocess
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from google.protobuf.json_format import MessageToJson
from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import History
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.common import RetryPolicy
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import ExternalStorage
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

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
from smyth_temporal.types.approvals import APPROVAL_SIGNAL, APPROVAL_UPDATE, ApprovalDecision
from tests.helpers.trader import Trader
from tests.helpers.trading import read_ledger

with workflow.unsafe.imports_passed_through():
    from smyth_temporal.devserver import find_binary
    from smyth_temporal.models import ModelRequest, ModelResponse
    from smyth_temporal.security import (
        EncryptionCodec,
        EncryptionKey,
        KeyRing,
        SealedPayloadConverter,
        new_key,
        refusal,
    )
    from smyth_temporal.security._plaintext import REFUSED_ENCODING
    from smyth_temporal.storage import ContentAddressedFileDriver
    from smyth_temporal.testing import ScriptedModel, agent_worker, payloads_in, reply, tool_call
    from tests.agent.test_approvals import wait_for_pending

SSN = "123-45-6789"
"""In the prompt: the customer data the issue says shows up as-is in the Temporal UI."""
ACCOUNT = "ACCT-99-SECRET-ARG"
"""In the tool's arguments."""
CLOSED = "CLOSED-77-SECRET-ARG"
"""In the arguments of a call that fails, and so in its failure message."""
DOSSIER = "DOSSIER-CONFIDENTIAL-RESULT"
"""In the tool's result (long, so it goes to the payload store)."""
MARKERS = (SSN, ACCOUNT, DOSSIER, CLOSED)


@tool(
    max_output_chars=50_000,
    retry=RetryPolicy(maximum_attempts=2, initial_interval=timedelta(milliseconds=50)),
)
async def customer_file(account: str) -> str:
    """The customer's file.

    Args:
        account: The account number.
    """
    if account.startswith("CLOSED"):
        # The failure's message reaches history (ActivityTaskFailed), quoting the argument.
        raise ValueError(f"account {account} is closed")
    return f"{DOSSIER} for {account}: " + "history line; " * 600


@workflow.defn
class Clerk(AgentWorkflow):
    config = AgentConfig(model="test-model", tools=[customer_file], max_steps=4)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


def summarize(request: ModelRequest) -> ModelResponse:
    seen = DOSSIER in str(request.messages[-1].content)
    return reply(f"summary for {SSN}: file {'read' if seen else 'missing'}")


def ring(*ids: str) -> str:
    return ",".join(new_key(i) for i in ids)


def sealed(payload: Payload, codec: EncryptionCodec) -> Payload:
    return codec.seal(payload)


PLAIN = Payload(metadata={"encoding": b"json/plain"}, data=json.dumps({"ssn": SSN}).encode())


# --- keys ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("", "holds no key"),
        ("k1", "id:base64"),
        ("k1:not base64!", "not valid base64"),
        (f"k1:{base64.b64encode(b'short').decode()}", "must be 32 bytes"),
        (f"bad id!:{base64.b64encode(bytes(32)).decode()}", "letters, digits"),
        (
            f"k1:{base64.b64encode(bytes(32)).decode()},k1:{base64.b64encode(bytes(32)).decode()}",
            "same id",
        ),
    ],
    ids=["empty", "no colon", "bad base64", "short key", "bad id", "duplicate id"],
)
def test_malformed_keys_are_refused_without_showing_them(text: str, match: str) -> None:
    with pytest.raises(ConfigurationError, match=match) as caught:
        KeyRing.parse(text)
    assert "not base64!" not in str(caught.value)


def test_keys_come_from_the_environment_or_an_owner_only_file(tmp_path: Path) -> None:
    assert KeyRing.from_env({}) is None
    keys = KeyRing.from_env({"SMYTH_ENCRYPTION_KEYS": ring("new", "old")})
    assert keys is not None and keys.ids == ["new", "old"] and keys.current.id == "new"
    assert "secret" not in repr(keys.current) or "b'" not in repr(keys.current)

    file = tmp_path / "keys"
    file.write_text(f"# rotated 2026-11\n{new_key('k2')}\n{new_key('k1')}\n")
    file.chmod(0o644)
    with pytest.raises(ConfigurationError, match="readable by others; chmod 600"):
        KeyRing.from_env({"SMYTH_ENCRYPTION_KEY_FILE": str(file)})
    file.chmod(0o600)
    from_file = KeyRing.from_env({"SMYTH_ENCRYPTION_KEY_FILE": str(file)})
    assert from_file is not None and from_file.ids == ["k2", "k1"]
    with pytest.raises(ConfigurationError, match="not both"):
        KeyRing.from_env(
            {"SMYTH_ENCRYPTION_KEY_FILE": str(file), "SMYTH_ENCRYPTION_KEYS": ring("a")}
        )


def test_a_key_provider_is_the_kms_hook() -> None:
    class Kms:
        calls = 0

        def key_ring(self) -> KeyRing:
            Kms.calls += 1
            return KeyRing([EncryptionKey("kms-1", bytes(range(32)))])

    codec = EncryptionCodec(Kms())
    assert Kms.calls == 1 and codec.keys.current.id == "kms-1"
    assert codec.open(codec.seal(PLAIN)) == PLAIN


# --- the codec -------------------------------------------------------------------------


def test_a_sealed_payload_reveals_nothing_and_opens_again() -> None:
    codec = EncryptionCodec(KeyRing.parse(ring("k1")))
    box = codec.seal(PLAIN)
    assert SSN.encode() not in box.SerializeToString()
    assert box.metadata["encoding"] == b"binary/smyth-encrypted"
    assert box.metadata["smyth-key-id"] == b"k1"
    assert codec.open(box) == PLAIN
    # Equal payloads seal equally (the store keeps each once), different ones do not.
    assert codec.seal(PLAIN) == box
    other = Payload(metadata={"encoding": b"json/plain"}, data=b'"other"')
    assert codec.seal(other).data != box.data
    # Sealing twice does nothing; an unsealed payload is refused (see below).
    assert codec.seal(box) == box
    assert codec.open(PLAIN) != PLAIN


def test_an_unsealed_payload_is_refused_unless_a_migration_accepts_plaintext() -> None:
    codec = EncryptionCodec(KeyRing.parse(ring("k1")), namespace="default")
    refused = codec.open(PLAIN)
    assert refused.metadata["encoding"] == REFUSED_ENCODING
    assert SSN.encode() in refused.data  # kept as sent, for whoever inspects it
    assert codec.open(refused) == refused
    # Refused, not raised: raising would fail the activation, and a signal carrying it
    # would wedge every replay. Reading it is what fails, with a clear message.
    converter = SealedPayloadConverter()
    with pytest.raises(PayloadDecryptionError, match=r"unsealed \(plaintext\) payload was refused"):
        converter.from_payloads([refused])
    assert converter.from_payloads([PLAIN]) == [{"ssn": SSN}]
    assert codec.with_context(_Context("other")).open(PLAIN) == refused

    relaxed = EncryptionCodec(KeyRing.parse(ring("k1")), accept_plaintext=True)
    assert relaxed.open(PLAIN) == PLAIN
    assert relaxed.with_context(_Context("other")).open(PLAIN) == PLAIN
    assert codec.accepting_plaintext().open(PLAIN) == PLAIN
    keys = {"SMYTH_ENCRYPTION_KEYS": ring("k1")}
    from_env = EncryptionCodec.from_env
    assert not from_env(keys).accepts_plaintext  # type: ignore[union-attr]
    assert from_env({**keys, "SMYTH_ACCEPT_PLAINTEXT": "on"}).accepts_plaintext  # type: ignore[union-attr]
    with pytest.raises(ConfigurationError, match="SMYTH_ACCEPT_PLAINTEXT must be 'on' or 'off'"):
        from_env({**keys, "SMYTH_ACCEPT_PLAINTEXT": "maybe"})


@dataclasses.dataclass(frozen=True)
class _Context:
    namespace: str


def test_compression_happens_before_encryption() -> None:
    keys = KeyRing.parse(ring("k1"))
    big = Payload(metadata={"encoding": b"json/plain"}, data=b'"' + b"lorem ipsum " * 500 + b'"')
    plain_box = EncryptionCodec(keys).seal(big)
    packed_box = EncryptionCodec(keys, compress=True).seal(big)
    assert packed_box.metadata["smyth-compression"] == b"zlib"
    assert len(packed_box.data) < len(plain_box.data) / 10
    assert EncryptionCodec(keys).open(packed_box) == big  # any reader opens it


def _flip_data(box: Payload) -> None:
    box.data = box.data[:-1] + bytes([box.data[-1] ^ 1])


def _other_key_id(box: Payload) -> None:
    box.metadata["smyth-key-id"] = b"k2"


def _drop_compression(box: Payload) -> None:
    del box.metadata["smyth-compression"]


def _other_namespace(box: Payload) -> None:
    box.metadata["smyth-namespace"] = b"staging"


@pytest.mark.parametrize(
    "tamper",
    [_flip_data, _other_key_id, _drop_compression, _other_namespace],
    ids=["ciphertext", "key id", "compression flag", "namespace"],
)
def test_a_tampered_payload_fails_loudly(tamper: object) -> None:
    keys = KeyRing.parse(ring("k1", "k2"))
    codec = EncryptionCodec(keys, compress=True, namespace="production")
    big = Payload(metadata={"encoding": b"json/plain"}, data=SSN.encode() * 100)
    box = codec.seal(big)
    assert callable(tamper)
    tamper(box)
    reader = EncryptionCodec(keys)  # unbound: only authentication can catch it
    with pytest.raises(PayloadDecryptionError, match=r"failed authentication|altered"):
        reader.open(box)


def test_a_payload_cannot_move_to_another_namespace() -> None:
    keys = KeyRing.parse(ring("k1"))
    box = EncryptionCodec(keys, namespace="staging").seal(PLAIN)
    with pytest.raises(PayloadDecryptionError, match="sealed for namespace 'staging'"):
        EncryptionCodec(keys, namespace="production").open(box)
    assert EncryptionCodec(keys, namespace="staging").open(box) == PLAIN
    assert EncryptionCodec(keys).open(box) == PLAIN  # the codec server's view


def test_rotation_keeps_old_payloads_readable() -> None:
    k1 = new_key("k1")
    old = EncryptionCodec(KeyRing.parse(k1)).seal(PLAIN)
    rotated = EncryptionCodec(KeyRing.parse(f"{new_key('k2')},{k1}"))
    assert rotated.open(old) == PLAIN
    assert rotated.seal(PLAIN).metadata["smyth-key-id"] == b"k2"
    dropped = EncryptionCodec(KeyRing.parse(new_key("k2")))
    with pytest.raises(PayloadDecryptionError, match="key 'k1', which this process does not"):
        dropped.open(old)


def test_the_plugin_encrypts_when_a_key_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SMYTH_ENCRYPTION_KEYS", raising=False)
    monkeypatch.delenv("SMYTH_ENCRYPTION_KEY_FILE", raising=False)
    assert SmythPlugin(payload_storage=None).data_converter.payload_codec is None  # type: ignore[union-attr]
    monkeypatch.setenv("SMYTH_ENCRYPTION_KEYS", ring("k1"))
    converter = SmythPlugin(payload_storage=None).data_converter
    assert isinstance(converter.payload_codec, EncryptionCodec)  # type: ignore[union-attr]
    assert converter.payload_converter_class is SealedPayloadConverter  # type: ignore[union-attr]
    assert SmythPlugin(encryption=None).data_converter.payload_codec is None  # type: ignore[union-attr]


# --- a real run ------------------------------------------------------------------------


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "payloads"
    monkeypatch.setenv("SMYTH_PAYLOAD_PATH", str(root))
    yield root


def sealed_client(env: WorkflowEnvironment, keys: str, monkeypatch: pytest.MonkeyPatch) -> Client:
    monkeypatch.setenv("SMYTH_ENCRYPTION_KEYS", keys)
    return Client(
        env.client.service_client, namespace=env.client.namespace, plugins=[SmythPlugin()]
    )


def store_files(root: Path) -> list[Path]:
    """The store's payload files (not its records of namespaces, which are empty files)."""
    return sorted(p for p in root.rglob("*") if p.is_file() and p.stat().st_size > 0)


async def test_a_run_is_ciphertext_in_history_and_store(
    env: WorkflowEnvironment, task_queue: str, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = sealed_client(env, ring("k1"), monkeypatch)
    model = ScriptedModel(
        [
            tool_call("customer_file", account=CLOSED),
            tool_call("customer_file", account=ACCOUNT),
            summarize,
        ]
    )
    async with agent_worker(client, Clerk, model=model, task_queue=task_queue):
        agents = AgentClient(client, task_queue=task_queue)
        handle = await agents.start(Clerk, f"Summarize the file of the customer with SSN {SSN}")
        result = await agents.result(handle.id)
    # With the codec, everything reads as before.
    assert result.output == f"summary for {SSN}: file read"

    # Without it, history (as the server holds it and the UI shows it) is ciphertext.
    history = await env.client.get_workflow_handle(handle.id).fetch_history()
    failed = [
        e for e in history.events if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED
    ]
    assert failed, "the closed account's call should have failed in history"
    assert failed[0].activity_task_failed_event_attributes.failure.message == "Encoded failure"
    proto = History(events=history.events)
    raw = MessageToJson(proto) + proto.SerializeToString().hex()
    for marker in MARKERS:
        assert marker not in raw and marker.encode().hex() not in raw
    assert (
        "binary/smyth-encrypted" in raw
        or base64.b64encode(b"binary/smyth-encrypted").decode() in raw
    )

    # The store holds only ciphertext, named by the SHA-256 of that ciphertext: the
    # chunks are sealed one by one; tree nodes (binary/smyth-tree) list digests only.
    files = store_files(store)
    assert files, "the tool result should have gone to the store"
    encodings = []
    for file in files:
        blob = file.read_bytes()
        assert file.name == hashlib.sha256(blob).hexdigest()
        for marker in MARKERS:
            assert marker.encode() not in blob
        encodings.append(Payload.FromString(blob).metadata["encoding"])
    assert set(encodings) == {b"binary/smyth-encrypted", b"binary/smyth-tree"}

    # A client without the key cannot read the result; with the wrong key it fails loudly.
    with pytest.raises(Exception, match=r"encoding|smyth-encrypted|decode"):
        await AgentClient(env.client).result(handle.id)
    stranger = sealed_client(env, ring("k1"), monkeypatch)  # same id, another key
    with pytest.raises(PayloadDecryptionError, match="failed authentication"):
        await AgentClient(stranger).result(handle.id)


async def test_a_tampered_store_file_fails_loudly(
    env: WorkflowEnvironment, task_queue: str, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = sealed_client(env, ring("k1"), monkeypatch)
    model = ScriptedModel([tool_call("customer_file", account=ACCOUNT), summarize])
    async with agent_worker(client, Clerk, model=model, task_queue=task_queue):
        agents = AgentClient(client, task_queue=task_queue)
        handle = await agents.start(Clerk, "Summarize")
        await agents.result(handle.id)
    biggest = max(store_files(store), key=lambda p: p.stat().st_size)
    blob = bytearray(biggest.read_bytes())
    blob[-1] ^= 0xFF
    biggest.write_bytes(bytes(blob))
    # The codec server and a replaying worker read the history through the store:
    history = await client.get_workflow_handle(handle.id).fetch_history()
    failures = []
    for event in history.events:
        for payload in payloads_in(event):
            if payload.metadata.get("encoding") == b"json/plain":
                continue  # search attributes and patch markers: never through the codec
            try:
                await client.data_converter.decode([payload])
            except Exception as exc:
                failures.append(str(exc))
    assert len(failures) >= 1
    assert all("is corrupted" in f and str(biggest) in f for f in failures), failures


async def test_rotation_with_a_run_that_started_before(
    env: WorkflowEnvironment, task_queue: str, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    k1 = new_key("k1")
    before = sealed_client(env, k1, monkeypatch)
    model = ScriptedModel([tool_call("sell", symbol="ACME", quantity=10), reply("done")])
    async with agent_worker(before, Trader, model=model, task_queue=task_queue):
        agents = AgentClient(before, task_queue=task_queue)
        handle = await agents.start(Trader, f"Sell ACME for {SSN}")
        for _ in range(100):
            state = await agents.state(handle.id)
            if state.pending_approvals:
                break
            await asyncio.sleep(0.1)
        assert state.pending_approvals
    # The key rotates while the run waits; the new worker and client have both keys.
    after = sealed_client(env, f"{new_key('k2')},{k1}", monkeypatch)
    async with agent_worker(after, Trader, model=model, task_queue=task_queue):
        agents = AgentClient(after, task_queue=task_queue)
        await agents.approve(handle.id, by="alice")
        result = await agents.result(handle.id)
    assert result.output == "done"
    history = await env.client.get_workflow_handle(handle.id).fetch_history()
    key_ids = {
        payload.metadata["smyth-key-id"]
        for event in history.events
        for payload in payloads_in(event)
        if "smyth-key-id" in payload.metadata
    }
    assert key_ids == {b"k1", b"k2"}  # started under k1, finished under k2
    assert SSN not in MessageToJson(History(events=history.events))


def test_the_store_and_the_codec_compose(tmp_path: Path) -> None:
    # The data converter runs the codec before the store (temporalio's order): pinned
    # here because the promise "the store only ever holds ciphertext" rests on it.
    codec = EncryptionCodec(KeyRing.parse(ring("k1")))
    storage = ExternalStorage(
        drivers=[ContentAddressedFileDriver(tmp_path)], payload_size_threshold=10
    )
    converter = dataclasses.replace(
        pydantic_data_converter, payload_codec=codec, external_storage=storage
    )
    [reference] = asyncio.run(converter.encode([f"{SSN} " * 50]))
    assert SSN.encode() not in reference.SerializeToString()
    [file] = store_files(tmp_path)
    assert SSN.encode() not in file.read_bytes()
    assert asyncio.run(converter.decode([reference])) == [f"{SSN} " * 50]


async def test_an_encrypted_history_replays(
    env: WorkflowEnvironment, task_queue: str, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The Replayer reads under a placeholder namespace unless told the real one: a
    # history downloaded from the server must replay, and with the real one it does too.
    client = sealed_client(env, ring("k1"), monkeypatch)
    model = ScriptedModel([tool_call("customer_file", account=ACCOUNT), summarize])
    async with agent_worker(client, Clerk, model=model, task_queue=task_queue):
        agents = AgentClient(client, task_queue=task_queue)
        handle = await agents.start(Clerk, f"SSN {SSN}")
        await agents.result(handle.id)
    history = await client.get_workflow_handle(handle.id).fetch_history()
    for namespace in ({}, {"namespace": client.namespace}):
        replayer = Replayer(workflows=[Clerk], plugins=[SmythPlugin()], **namespace)
        assert (await replayer.replay_workflow(history)).replay_failure is None
    wrong = Replayer(workflows=[Clerk], plugins=[SmythPlugin()], namespace="elsewhere")
    failed = await wrong.replay_workflow(history, raise_on_replay_failure=False)
    assert failed.replay_failure is not None  # sealed for another namespace: refused


def temporal_cli(address: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [find_binary("temporal"), *arguments, "--address", address],
        capture_output=True,
        text=True,
        timeout=60,
    )


async def test_a_plaintext_decision_from_the_temporal_cli_is_refused_and_the_run_goes_on(
    env: WorkflowEnvironment,
    address: str,
    task_queue: str,
    sealed_env: dict[str, str],
    ledger: Path,
) -> None:
    # Anyone with access to Temporal but no key tries to approve a sale with the
    # official CLI: as an update (answered) and as a signal (fire and forget).
    client = Client(
        env.client.service_client, namespace=env.client.namespace, plugins=[SmythPlugin()]
    )
    model = ScriptedModel([tool_call("sell", symbol="ACME", quantity=10), reply("done")])
    async with agent_worker(client, Trader, model=model, task_queue=task_queue):
        agents = AgentClient(client, task_queue=task_queue)
        handle = await agents.start(Trader, "Sell ACME")
        state = await wait_for_pending(agents, handle.id, 1)
        forged = json.dumps(
            {"request_id": state.pending_approvals[0].id, "approved": True, "by": "mallory"}
        )
        target = ("--workflow-id", handle.id, "--input", forged)
        update = await asyncio.to_thread(
            temporal_cli,
            address,
            "workflow",
            "update",
            "execute",
            "--name",
            APPROVAL_UPDATE,
            *target,
        )
        signal = await asyncio.to_thread(
            temporal_cli, address, "workflow", "signal", "--name", APPROVAL_SIGNAL, *target
        )
        assert update.returncode != 0, update.stdout
        assert "PayloadDecryptionError" in update.stderr, update.stderr
        assert signal.returncode == 0, signal.stderr  # accepted by the server, not the agent
        # The signal is in history now: the worker must read past it, every replay too.
        history = await client.get_workflow_handle(handle.id).fetch_history()
        assert any(
            e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED for e in history.events
        )
        after = await wait_for_pending(agents, handle.id, 1)
        assert after.status == "awaiting_approval" and after.approvals[0].decision is None
        assert read_ledger(ledger) == []  # nothing was sold

        # The run is intact: a decision with the key goes through.
        await agents.approve(handle.id, by="alice")
        result = await agents.result(handle.id)
        final = await agents.state(handle.id)
    assert result.output == "done"
    assert [e["tool"] for e in read_ledger(ledger)] == ["sell"]
    assert final.approvals[0].decision is not None
    assert final.approvals[0].decision.by == "alice"
    history = await client.get_workflow_handle(handle.id).fetch_history()
    assert not any(
        e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED for e in history.events
    )
    # The CLI showed the update rejected with PayloadDecryptionError (its message is
    # sealed with the rest of the failure; the codec server shows it).


async def test_a_forged_sealed_decision_is_refused_and_the_run_goes_on(
    env: WorkflowEnvironment,
    task_queue: str,
    sealed_env: dict[str, str],
    ledger: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Someone with Temporal access and a key of their own, named like the deployment's
    # ("k1"): their decision looks sealed but fails authentication. Raising in the codec
    # would fail every workflow task after the signal (the run wedged for good).
    client = Client(
        env.client.service_client, namespace=env.client.namespace, plugins=[SmythPlugin()]
    )
    model = ScriptedModel([tool_call("sell", symbol="ACME", quantity=10), reply("done")])
    async with agent_worker(client, Trader, model=model, task_queue=task_queue):
        agents = AgentClient(client, task_queue=task_queue)
        handle = await agents.start(Trader, "Sell ACME")
        state = await wait_for_pending(agents, handle.id, 1)
        decision = ApprovalDecision(
            request_id=state.pending_approvals[0].id, approved=True, by="mallory"
        )
        forger = sealed_client(env, ring("k1"), monkeypatch)  # same key id, another key
        monkeypatch.setenv("SMYTH_ENCRYPTION_KEYS", sealed_env["SMYTH_ENCRYPTION_KEYS"])
        forged = forger.get_workflow_handle(handle.id)
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await forged.execute_update(APPROVAL_UPDATE, decision)
        assert "PayloadDecryptionError" in repr(refused.value.cause) or refused.value.cause
        await forged.signal(APPROVAL_SIGNAL, decision)

        after = await wait_for_pending(agents, handle.id, 1)
        assert after.status == "awaiting_approval" and after.approvals[0].decision is None
        assert read_ledger(ledger) == []  # nothing was sold
        await agents.approve(handle.id, by="alice")
        result = await agents.result(handle.id)
    assert result.output == "done"
    assert [e["tool"] for e in read_ledger(ledger)] == ["sell"]
    history = await client.get_workflow_handle(handle.id).fetch_history()
    assert not any(
        e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED for e in history.events
    )


async def test_decode_refuses_forged_payloads_and_waits_for_missing_keys() -> None:
    k1 = new_key("k1")
    box = EncryptionCodec(KeyRing.parse(k1)).seal(PLAIN)
    forged = EncryptionCodec(KeyRing.parse(new_key("k1"))).seal(PLAIN)  # same id, other key
    worker = EncryptionCodec(KeyRing.parse(k1))
    [opened, refused] = await worker.decode([box, forged])
    assert opened == PLAIN
    error = refusal(refused)
    assert error is not None and "failed authentication" in str(error)
    # A key this worker lacks is a rotation not finished: raise (the task is retried).
    rotated = EncryptionCodec(KeyRing.parse(new_key("k2")))
    with pytest.raises(PayloadDecryptionError, match="key 'k1', which this process does not"):
        await rotated.decode([box])
    # The codec server's display codec answers with the reason instead.
    with pytest.raises(PayloadDecryptionError, match="failed authentication"):
        await worker.accepting_plaintext().decode([forged])
