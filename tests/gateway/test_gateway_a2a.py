"""A2A 1.0 at ``/a2a/{agent}``, driven by the ``a2a-sdk`` client (JSON-RPC binding)."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.client.client import Client as A2AClient
from a2a.helpers import get_artifact_text, get_message_text
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)
from google.protobuf.json_format import MessageToDict, ParseDict
from temporalio.client import Client

from smyth_temporal import AgentClient
from smyth_temporal.gateway import create_app
from smyth_temporal.gateway._a2a_tasks import task_id_for
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from tests.helpers.agents import Rater
from tests.helpers.gateway_support import (
    TENANT,
    Keys,
    Running,
    bearer,
    gateway,
    make_keys,
    serving,
)
from tests.helpers.live_agents import Operator

ANSWER = "ACME trades at 42 today."
TIMEOUT = 30


@pytest.fixture
def keys(tmp_path: Path) -> Keys:
    return make_keys(tmp_path / "keys.json")


@asynccontextmanager
async def a2a_client(
    running: Running, key: str, *, streaming: bool = False, agent: str = "Operator"
) -> AsyncIterator[A2AClient]:
    """The SDK's client for ``agent``, from its card, sending ``key`` as bearer."""
    async with httpx.AsyncClient(headers=bearer(key), timeout=60) as http:
        config = ClientConfig(httpx_client=http, streaming=streaming)
        client = await create_client(f"{running.url}/a2a/{agent}", client_config=config)
        yield client


def user_message(text: str | None = None, **fields: Any) -> Message:
    message = Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER, **fields)
    if text is not None:
        message.parts.append(Part(text=text))
    return message


def decision_message(task: Task, approved: bool = True) -> Message:
    [request] = MessageToDict(task.status.message.parts[1].data)["approval_requests"]
    message = user_message(task_id=task.id, context_id=task.context_id)
    part = Part()
    decision = {"approved": approved, "arguments_sha256": request["arguments_sha256"]}
    ParseDict({"decision": decision}, part.data)
    message.parts.append(part)
    return message


async def send(client: A2AClient, message: Message) -> list[StreamResponse]:
    async with asyncio.timeout(TIMEOUT):
        return [r async for r in client.send_message(SendMessageRequest(message=message))]


def final_task(responses: list[StreamResponse]) -> Task:
    tasks = [r.task for r in responses if r.HasField("task")]
    assert tasks, responses
    return tasks[-1]


async def test_card_fetched_a_message_sent_and_the_task_completes_with_the_answer(
    client: Client, task_queue: str, keys: Keys
) -> None:
    model = ScriptedModel([reply(ANSWER)])
    async with (
        agent_worker(client, Operator, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        card = (await running.http.get("/a2a/Operator/.well-known/agent-card.json")).json()
        root = (await running.http.get("/.well-known/agent-card.json")).json()
        async with a2a_client(running, keys.by_role["operator"]) as a2a:
            message = user_message("How is ACME doing?")
            [response] = await send(a2a, message)
            again = await send(a2a, message)  # the same messageId: the same task, no new run
            got = await a2a.get_task(GetTaskRequest(id=response.task.id))

    assert card["name"] == "Operator"
    assert card["supportedInterfaces"][0]["url"] == f"{running.url}/a2a/Operator"
    assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "Bearer"
    assert {s["id"] for s in card["skills"]} >= {"Operator", "get_quote", "sell"}
    assert card["capabilities"]["streaming"] is True
    assert root["name"] == "Analyst" and "/a2a/Operator/.well-known" in root["description"]

    task = response.task
    assert task.id == task_id_for(TENANT, "Operator", message.message_id)
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert get_artifact_text(task.artifacts[0]) == ANSWER
    assert [get_message_text(m) for m in task.history] == ["How is ACME doing?", ANSWER]
    assert final_task(again).id == task.id and len(model.requests) == 1
    assert got.status.state == TaskState.TASK_STATE_COMPLETED and got.context_id


async def test_a_streamed_task_sends_the_answer_then_completes(
    client: Client, task_queue: str, keys: Keys
) -> None:
    model = ScriptedModel([tool_call("get_quote", symbol="ACME"), reply(ANSWER)])
    async with (
        agent_worker(client, Operator, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
        a2a_client(running, keys.by_role["operator"], streaming=True) as a2a,
    ):
        responses = await send(a2a, user_message("Quote ACME."))

    kinds = [r.WhichOneof("payload") for r in responses]
    assert kinds[0] == "task" and kinds[-1] == "status_update"
    texts = [
        get_message_text(r.status_update.status.message)
        for r in responses
        if r.HasField("status_update") and r.status_update.status.HasField("message")
    ]
    assert ANSWER in texts
    [artifact] = [r.artifact_update.artifact for r in responses if r.HasField("artifact_update")]
    assert get_artifact_text(artifact) == ANSWER
    assert responses[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED


async def test_an_approval_is_input_required_then_the_decision_completes_the_task(
    client: Client, task_queue: str, keys: Keys
) -> None:
    model = ScriptedModel([tool_call("sell", symbol="ACME", quantity=5), reply("Sold 5 ACME.")])
    async with (
        agent_worker(client, Operator, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        async with a2a_client(running, keys.by_role["operator"]) as operator:
            [waiting] = await send(operator, user_message("Sell 5 ACME."))
            task = waiting.task
            # An operator may start tasks, not decide: refused before anything is sent.
            refused = await running.http.post(
                "/a2a/Operator",
                json=_rpc("SendMessage", {"message": MessageToDict(decision_message(task))}),
                headers={**keys.headers("operator"), **A2A_HEADERS},
            )
        async with a2a_client(running, keys.by_role["approver"], streaming=True) as approver:
            resumed = await send(approver, decision_message(task))

    assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    text = get_message_text(task.status.message)
    assert "Waiting for approval" in text and "(sell)" in text
    assert refused.status_code == 403 and "may not decide" in refused.json()["error"]["message"]
    assert resumed[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    artifact = next(r.artifact_update.artifact for r in resumed if r.HasField("artifact_update"))
    assert get_artifact_text(artifact) == "Sold 5 ACME."
    # Only what followed the decision was streamed, not the turn before it again.
    texts = [
        get_message_text(r.status_update.status.message)
        for r in resumed[1:-1]
        if r.HasField("status_update")
    ]
    assert texts == ["Sold 5 ACME."]


async def test_a_cancelled_task_ends_canceled_and_its_approval_is_withdrawn(
    client: Client, task_queue: str, keys: Keys
) -> None:
    model = ScriptedModel([tool_call("sell", symbol="ACME", quantity=5), reply("never")])
    async with (
        agent_worker(client, Operator, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
        a2a_client(running, keys.by_role["operator"]) as a2a,
    ):
        [waiting] = await send(a2a, user_message("Sell 5 ACME."))
        async with asyncio.timeout(TIMEOUT):
            cancelled = await a2a.cancel_task(CancelTaskRequest(id=waiting.task.id))
        again = await running.http.post(
            "/a2a/Operator",
            json=_rpc("CancelTask", {"id": waiting.task.id}),
            headers={**keys.headers("operator"), **A2A_HEADERS},
        )

    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
    assert again.json()["error"]["code"] == -32002  # TaskNotCancelableError
    assert len(model.requests) == 1


async def test_another_tenants_task_is_not_found(
    client: Client, task_queue: str, keys: Keys
) -> None:
    model = ScriptedModel([reply(ANSWER)])
    async with (
        agent_worker(client, Operator, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
        a2a_client(running, keys.by_role["operator"]) as a2a,
    ):
        [done] = await send(a2a, user_message("Hi."))
        theirs = await running.http.post(
            "/a2a/Operator",
            json=_rpc("GetTask", {"id": done.task.id}),
            headers={**bearer(keys.other), **A2A_HEADERS},
        )
        forged = await running.http.post(
            "/a2a/Operator",
            json=_rpc("GetTask", {"id": "a2a-Operator-nothing"}),
            headers={**keys.headers("viewer"), **A2A_HEADERS},
        )
        other_agent = await running.http.post(
            "/a2a/Analyst",
            json=_rpc("GetTask", {"id": done.task.id}),
            headers={**keys.headers("viewer"), **A2A_HEADERS},
        )

    for answer in (theirs, forged, other_agent):
        assert answer.status_code == 200, answer.text
        error = answer.json()["error"]
        assert error["code"] == -32001 and "no task" in error["message"]  # TaskNotFoundError


def _rpc(method: str, params: Any, id: Any = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params}


A2A_HEADERS = {"A2A-Version": "1.0"}


async def test_bad_input_is_a_json_rpc_error_and_starts_nothing(
    client: Client, task_queue: str, keys: Keys
) -> None:
    message_id = uuid.uuid4().hex
    message = {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": "Hi."}]}
    send_params = {"message": message}
    async with (
        agent_worker(client, Operator, model=ScriptedModel([]), task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        headers = {**keys.headers("operator"), **A2A_HEADERS}

        async def post(path: str, **kwargs: Any) -> httpx.Response:
            return await running.http.post(path, headers=headers, **kwargs)

        answers = {
            "unknown agent": await post("/a2a/Nobody", json=_rpc("SendMessage", send_params)),
            "not json": await post("/a2a/Operator", content=b"{not json"),
            "no method": await post("/a2a/Operator", json={"jsonrpc": "2.0", "id": 1}),
            "unknown method": await post("/a2a/Operator", json=_rpc("Nope", {})),
            "bad params": await post("/a2a/Operator", json=_rpc("SendMessage", {"message": 7})),
            "no text": await post(
                "/a2a/Operator",
                json=_rpc("SendMessage", {"message": {**message, "parts": []}}),
            ),
            "unknown task": await post("/a2a/Operator", json=_rpc("GetTask", {"id": "nope"})),
            "oversize": await post(
                "/a2a/Operator",
                json=_rpc(
                    "SendMessage", {"message": {**message, "parts": [{"text": "x" * 2**21}]}}
                ),
            ),
        }
        no_key = await running.http.post("/a2a/Operator", json=_rpc("SendMessage", send_params))
        viewer = await running.http.post(
            "/a2a/Operator", json=_rpc("SendMessage", send_params), headers=keys.headers("viewer")
        )
        # Nothing started: the task the message would have started does not exist.
        task_id = task_id_for(TENANT, "Operator", message_id)
        run = await running.http.get(f"/v1/runs/{task_id}", headers=keys.headers("admin"))

    statuses = {name: answer.status_code for name, answer in answers.items()}
    assert statuses == {
        "unknown agent": 404,
        "not json": 200,
        "no method": 200,
        "unknown method": 200,
        "bad params": 200,
        "no text": 200,
        "unknown task": 200,
        "oversize": 413,
    }
    codes = {name: answer.json()["error"]["code"] for name, answer in answers.items()}
    assert codes == {
        "unknown agent": -32600,
        "not json": -32700,
        "no method": -32600,
        "unknown method": -32601,
        "bad params": -32602,
        "no text": -32602,
        "unknown task": -32001,
        "oversize": -32600,
    }
    assert "unknown agent 'Nobody'" in answers["unknown agent"].json()["error"]["message"]
    assert no_key.status_code == 401 and no_key.json()["error"]["code"] == -32600
    assert viewer.status_code == 403 and "viewer" in viewer.json()["error"]["message"]
    assert run.status_code == 404


async def test_a_typed_output_is_a_data_artifact_beside_the_answer(
    client: Client, task_queue: str, keys: Keys
) -> None:
    verdict = {"symbol": "ACME", "action": "buy", "confidence": 0.8}
    model = ScriptedModel([reply(json.dumps(verdict))])
    app = create_app(AgentClient(client, task_queue=task_queue), [Rater], keys=keys.store)
    async with (
        agent_worker(client, Rater, model=model, task_queue=task_queue),
        serving(app) as url,
        httpx.AsyncClient(headers=keys.headers("operator"), timeout=60) as http,
    ):
        config = ClientConfig(httpx_client=http, streaming=False)
        a2a = await create_client(f"{url}/a2a/Rater", client_config=config)
        [response] = await send(a2a, user_message("Rate ACME."))

    task = response.task
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    answer, output = task.artifacts
    assert (answer.artifact_id, output.artifact_id) == ("answer", "output")
    assert MessageToDict(output.parts[0].data) == verdict
    assert output.parts[0].media_type == "application/json"


async def test_an_operator_cannot_decide_by_spelling_task_id_the_proto_way(
    client: Client, task_queue: str, keys: Keys
) -> None:
    # The dispatcher's protobuf parser takes ``task_id`` as well as ``taskId``: a role
    # check that looked only at ``taskId`` let an operator's decision through as a "new
    # message" (the client's own check then refused it, as an internal error).
    model = ScriptedModel([tool_call("sell", symbol="ACME", quantity=5), reply("Sold.")])
    async with (
        agent_worker(client, Operator, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
        a2a_client(running, keys.by_role["operator"]) as a2a,
    ):
        [waiting] = await send(a2a, user_message("Sell 5 ACME."))
        decision = MessageToDict(decision_message(waiting.task), preserving_proto_field_name=True)
        assert "task_id" in decision and "taskId" not in decision
        refused = await running.http.post(
            "/a2a/Operator",
            json=_rpc("SendMessage", {"message": decision}),
            headers={**keys.headers("operator"), **A2A_HEADERS},
        )
        still = await a2a.get_task(GetTaskRequest(id=waiting.task.id))

    assert refused.status_code == 403, refused.text
    assert "may not decide" in refused.json()["error"]["message"]
    assert still.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert len(model.requests) == 1
