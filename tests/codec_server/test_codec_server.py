"""The codec server: the HTTP protocol, and the real ``temporal`` CLI reading through it."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from google.protobuf.json_format import MessageToDict
from temporalio.api.common.v1 import Payload, Payloads
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from smyth_temporal import AgentClient, SmythPlugin
from smyth_temporal.codec_server import PayloadTranslator, create_codec_app
from smyth_temporal.codec_server._app import REFUSED_TEXT
from smyth_temporal.devserver import find_binary
from smyth_temporal.security import EncryptionCodec, KeyRing, new_key
from smyth_temporal.testing import ScriptedModel, agent_worker, tool_call
from tests.conftest import CODEC_TOKEN as TOKEN
from tests.helpers.cli_support import free_port
from tests.security.test_encryption import ACCOUNT, DOSSIER, SSN, Clerk, summarize

UI = "http://localhost:8233"


def as_json(*payloads: Payload) -> dict[str, object]:
    return MessageToDict(Payloads(payloads=payloads))


def from_json(body: dict[str, object]) -> list[Payload]:
    from google.protobuf.json_format import ParseDict

    return list(ParseDict(body, Payloads()).payloads)


PLAIN = Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(SSN).encode())


@pytest.fixture
def codec() -> EncryptionCodec:
    return EncryptionCodec(KeyRing.parse(new_key("k1")))


@pytest.fixture
async def http(codec: EncryptionCodec, tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    app = create_codec_app(PayloadTranslator(codec, None), token=TOKEN, ui_origins=[UI])
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://codec") as client:
        yield client


BEARER = {"Authorization": f"Bearer {TOKEN}"}


async def test_decode_needs_the_token(http: httpx.AsyncClient, codec: EncryptionCodec) -> None:
    body = as_json(codec.seal(PLAIN), codec.seal(PLAIN))
    for headers in (
        {},
        {"Authorization": "Bearer wrong-token-wrong-token"},
        {"Authorization": TOKEN},
    ):
        # A browser (the UI) gets the 401; so does every encode.
        answer = await http.post("/decode", json=body, headers={**headers, "Origin": UI})
        assert answer.status_code == 401
        assert SSN not in answer.text
        answer = await http.post("/encode", json=as_json(PLAIN), headers=headers)
        assert answer.status_code == 401
        # The temporal CLI retries any other status until its deadline: it gets what it
        # can show instead, one stand-in per payload, and nothing decoded.
        answer = await http.post("/decode", json=body, headers=headers)
        assert answer.status_code == 200 and answer.headers["x-smyth-codec-refused"] == "401"
        assert SSN not in answer.text
        stand_ins = from_json(answer.json())
        assert [json.loads(p.data) for p in stand_ins] == [REFUSED_TEXT] * 2
    answer = await http.post("/decode", json=body, headers=BEARER)
    assert answer.status_code == 200
    assert from_json(answer.json()) == [PLAIN, PLAIN]
    # The UI's form: the token as the segment before /decode (any prefix is allowed).
    assert (await http.post(f"/{TOKEN}/decode", json=body)).status_code == 200
    assert (await http.post(f"/codec/{TOKEN}/decode", json=body)).status_code == 200
    wrong = await http.post("/not-the-token-at-all/decode", json=body, headers={"Origin": UI})
    assert wrong.status_code == 401


async def test_encode_round_trips(http: httpx.AsyncClient) -> None:
    encoded = await http.post("/encode", json=as_json(PLAIN), headers=BEARER)
    assert encoded.status_code == 200
    [sealed] = from_json(encoded.json())
    assert sealed.metadata["encoding"] == b"binary/smyth-encrypted"
    decoded = await http.post("/decode", json=encoded.json(), headers=BEARER)
    assert from_json(decoded.json()) == [PLAIN]


async def test_an_unsealed_payload_is_shown_as_it_is(http: httpx.AsyncClient) -> None:
    # Workers refuse unsealed payloads; the codec server only displays, and history
    # holds some by design (patch markers, search attributes) or as refused input.
    marker = Payload(metadata={"encoding": b"json/plain"}, data=b'{"id":"smyth-call-ids"}')
    answer = await http.post("/decode", json=as_json(PLAIN, marker), headers=BEARER)
    assert answer.status_code == 200
    assert from_json(answer.json()) == [PLAIN, marker]


async def test_cors_admits_the_ui_origin_only(http: httpx.AsyncClient) -> None:
    preflight = {
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type,x-namespace",
    }
    allowed = await http.options("/decode", headers={"Origin": UI, **preflight})
    assert allowed.status_code == 200  # browsers send no credentials on a preflight
    assert allowed.headers["access-control-allow-origin"] == UI
    refused = await http.options("/decode", headers={"Origin": "http://evil.example", **preflight})
    assert "access-control-allow-origin" not in refused.headers


async def test_bad_requests_get_clear_errors(
    http: httpx.AsyncClient, codec: EncryptionCodec
) -> None:
    answer = await http.post("/decode", content=b"{not json", headers=BEARER)
    assert answer.status_code == 400 and "protobuf JSON" in answer.json()["error"]
    answer = await http.post("/decode", json={"payloads": "nope"}, headers=BEARER)
    assert answer.status_code == 400
    huge = b"x" * (9 * 1024 * 1024)
    answer = await http.post("/decode", content=huge, headers=BEARER)
    assert answer.status_code == 413
    box = codec.seal(PLAIN)
    box.data = box.data[:-1] + bytes([box.data[-1] ^ 1])
    answer = await http.post("/decode", json=as_json(box), headers=BEARER)
    assert answer.status_code == 422 and "failed authentication" in answer.json()["error"]
    assert SSN not in answer.text


async def test_a_payload_of_another_namespace_is_refused(
    http: httpx.AsyncClient, codec: EncryptionCodec
) -> None:
    sealed = EncryptionCodec(codec.keys, namespace="staging").seal(PLAIN)
    answer = await http.post(
        "/decode", json=as_json(sealed), headers={**BEARER, "X-Namespace": "production"}
    )
    assert answer.status_code == 422 and "staging" in answer.json()["error"]
    answer = await http.post(
        "/decode", json=as_json(sealed), headers={**BEARER, "X-Namespace": "staging"}
    )
    assert from_json(answer.json()) == [PLAIN]


def test_the_server_refuses_to_start_without_a_token_or_keys(tmp_path: Path) -> None:
    smyth = str(Path(sys.executable).with_name("smyth"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SMYTH_")}
    done = subprocess.run([smyth, "codec-server"], env=env, capture_output=True, text=True)
    assert done.returncode == 1 and "SMYTH_CODEC_TOKEN is not set" in done.stderr
    env["SMYTH_CODEC_TOKEN"] = TOKEN
    done = subprocess.run([smyth, "codec-server"], env=env, capture_output=True, text=True)
    assert done.returncode == 1 and "SMYTH_ENCRYPTION_KEYS" in done.stderr
    env["SMYTH_CODEC_TOKEN"] = "short"
    env["SMYTH_ENCRYPTION_KEYS"] = new_key("k1")
    done = subprocess.run([smyth, "codec-server"], env=env, capture_output=True, text=True)
    assert done.returncode == 1 and "at least 16 characters" in done.stderr


# --- with the real temporal CLI --------------------------------------------------------


def wait_for_port(port: int, process: subprocess.Popen[str]) -> None:
    for _ in range(200):
        if process.poll() is not None:
            raise AssertionError(
                f"the codec server exited: {process.stderr.read() if process.stderr else ''}"
            )
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError("the codec server did not listen")


def start_codec_server(port: int, env: dict[str, str], origin: str = UI) -> subprocess.Popen[str]:
    smyth = str(Path(sys.executable).with_name("smyth"))
    process = subprocess.Popen(
        [smyth, "codec-server", "--port", str(port), "--ui-origin", origin],
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for_port(port, process)
    return process


async def sealed_run(env: WorkflowEnvironment, task_queue: str) -> str:
    client = Client(
        env.client.service_client, namespace=env.client.namespace, plugins=[SmythPlugin()]
    )
    model = ScriptedModel([tool_call("customer_file", account=ACCOUNT), summarize])
    async with agent_worker(client, Clerk, model=model, task_queue=task_queue):
        agents = AgentClient(client, task_queue=task_queue)
        handle = await agents.start(Clerk, f"Summarize the file of the customer with SSN {SSN}")
        await agents.result(handle.id)
    return handle.id


def temporal_show(address: str, workflow_id: str, *codec: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            find_binary("temporal"),
            "workflow",
            "show",
            "--address",
            address,
            "--workflow-id",
            workflow_id,
            "--output",
            "json",
            *codec,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )


def decoded_text(output: str) -> str:
    """The CLI's JSON with every base64 ``data`` field decoded, so markers can be found."""
    found: list[str] = [output]

    def walk(value: object) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key == "data" and isinstance(item, str):
                    with contextlib.suppress(ValueError):
                        found.append(base64.b64decode(item).decode(errors="replace"))
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(json.loads(output))
    return "\n".join(found)


async def test_the_temporal_cli_reads_through_the_codec_server(
    env: WorkflowEnvironment, address: str, task_queue: str, sealed_env: dict[str, str]
) -> None:
    workflow_id = await sealed_run(env, task_queue)
    port = free_port()
    server = start_codec_server(port, sealed_env)
    try:
        endpoint = ["--codec-endpoint", f"http://127.0.0.1:{port}"]
        plain = await asyncio.to_thread(temporal_show, address, workflow_id)
        assert plain.returncode == 0, plain.stderr
        for marker in (SSN, ACCOUNT, DOSSIER):
            assert marker not in decoded_text(plain.stdout)

        shown = await asyncio.to_thread(
            temporal_show, address, workflow_id, *endpoint, "--codec-auth", f"Bearer {TOKEN}"
        )
        assert shown.returncode == 0, shown.stderr
        readable = decoded_text(shown.stdout)
        # The prompt, the tool's arguments and its (stored) result are all back.
        for marker in (SSN, ACCOUNT, DOSSIER):
            assert marker in readable

        # A wrong token: shown by the CLI at once (it sat 10 s, then printed "context
        # deadline exceeded": the Go SDK retries any status but 200 until its deadline).
        refused = await asyncio.to_thread(
            temporal_show, address, workflow_id, *endpoint, "--codec-auth", "Bearer wrong-token-x"
        )
        assert refused.returncode == 0, refused.stderr
        assert "deadline" not in refused.stderr
        assert REFUSED_TEXT in decoded_text(refused.stdout)
        assert SSN not in refused.stdout + refused.stderr
    finally:
        server.terminate()
        server.wait(timeout=10)
