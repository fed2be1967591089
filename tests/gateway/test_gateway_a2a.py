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
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)
from google.protobuf.json_format import MessageToDict, ParseDict
from temporalio.client import Client

from smyth_temporal import AgentClient
from smyth_temporal.gateway import create_app
from smyth_temporal.gateway._a2a_tasks import task_id_for
from smyth_temporal.models import ModelResponse
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from tests.helpers.agents import Rater
from tests.helpers.gateway_support import (
    FAST,
    TENANT,
    Keys,
    Running,
    bearer,
    flag,
    gateway,
    make_keys,
    serving,
    until,
)
from tests.helpers.live_agents import GatedModel, Operator
from tests.helpers.policy_agents import CarefulTrader

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


def _saying(step: ModelResponse, text: str) -> ModelResponse:
    return step.model_copy(update={"message": step.message.model_copy(update={"content": text})})


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
    assert not card["capabilities"].get("pushNotifications")  # subscribe or poll instead
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
    rejection = {
        **message,
        "taskId": "a2a-Operator-nope",
        "parts": [{"data": {"decision": {"approved": False}}}],
    }
    async with (
        agent_worker(client, Operator, model=ScriptedModel([]), task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):

        async def post(path: str, role: str = "operator", **kwargs: Any) -> httpx.Response:
            role_headers = {**keys.headers(role), **A2A_HEADERS}
            return await running.http.post(path, headers=role_headers, **kwargs)

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
            "decision for no task": await post(
                "/a2a/Operator",
                "approver",
                json=_rpc("SendMessage", {"message": rejection}),
            ),
            "push config": await post(
                "/a2a/Operator",
                json=_rpc(
                    "CreateTaskPushNotificationConfig",
                    {"taskId": "a2a-Operator-nope", "url": "https://example.com/hook"},
                ),
            ),
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
        "decision for no task": 200,
        "push config": 200,
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
        "decision for no task": -32001,
        "push config": -32003,  # PushNotificationNotSupportedError
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


async def test_list_tasks_pages_the_callers_tasks_of_the_agent_and_no_other_tenants(
    client: Client, task_queue: str, keys: Keys
) -> None:
    model = ScriptedModel([reply(ANSWER)])  # every task is one step: this reply
    async with (
        agent_worker(client, Operator, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
        a2a_client(running, keys.by_role["operator"]) as mine,
        a2a_client(running, keys.other) as theirs,
    ):
        sent = [await send(mine, user_message(f"Task {n}.")) for n in range(3)]
        [other] = await send(theirs, user_message("Theirs."))
        ids = {final_task(responses).id for responses in sent}
        pages: list[ListTasksResponse] = []
        token = ""
        while True:  # a page may be short and still go on: follow the token to its end
            pages.append(
                await mine.list_tasks(
                    ListTasksRequest(page_size=2, page_token=token, include_artifacts=True)
                )
            )
            token = pages[-1].next_page_token
            if not token:
                break
        by_context = await mine.list_tasks(
            ListTasksRequest(context_id=final_task(sent[0]).context_id, history_length=1)
        )
        waiting = await mine.list_tasks(
            ListTasksRequest(status=TaskState.TASK_STATE_INPUT_REQUIRED)
        )
        their_list = await theirs.list_tasks(ListTasksRequest())
        headers = {**keys.headers("viewer"), **A2A_HEADERS}
        refused = {
            what: (
                await running.http.post(
                    "/a2a/Operator", json=_rpc("ListTasks", params), headers=headers
                )
            ).json()["error"]["code"]
            for what, params in {
                "forged token": {"pageToken": "not-a-token"},
                "page too big": {"pageSize": 101},
                "page too small": {"pageSize": 0},
                "negative history": {"historyLength": -1},
            }.items()
        }

    listed = [task for page in pages for task in page.tasks]
    assert sorted(task.id for task in listed) == sorted(ids)  # each once, no other's
    assert all(len(page.tasks) <= 2 for page in pages)
    assert all(t.status.state == TaskState.TASK_STATE_COMPLETED for t in listed)
    assert all(get_artifact_text(t.artifacts[0]) == ANSWER for t in listed)
    [one] = by_context.tasks
    assert one.id == final_task(sent[0]).id and len(one.history) == 1 and not one.artifacts
    assert list(waiting.tasks) == []
    assert [t.id for t in their_list.tasks] == [other.task.id]
    assert refused == dict.fromkeys(refused, -32602)  # InvalidParamsError


async def test_subscribe_re_attaches_to_a_running_task_and_sends_only_what_follows(
    client: Client, task_queue: str, keys: Keys
) -> None:
    steps = [_saying(tool_call("get_quote", symbol="ACME"), "Looking it up."), reply(ANSWER)]
    model = GatedModel(steps, held={2})  # the answer waits until the subscriber is there
    async with (
        agent_worker(client, Operator, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
        a2a_client(running, keys.by_role["operator"]) as operator,
        a2a_client(running, keys.by_role["viewer"], streaming=True) as viewer,
    ):
        config = SendMessageConfiguration(return_immediately=True)
        request = SendMessageRequest(message=user_message("Quote ACME."), configuration=config)
        [started] = [r async for r in operator.send_message(request)]
        task_id = final_task([started]).id
        await until(flag(lambda: model.waiting == {2}), "the second model call held")
        async with asyncio.timeout(TIMEOUT):
            stream = viewer.subscribe(SubscribeToTaskRequest(id=task_id))
            first = await anext(stream)
            model.release.set()
            rest = [response async for response in stream]
        ended = await running.http.post(
            "/a2a/Operator",
            json=_rpc("SubscribeToTask", {"id": task_id}),
            headers={**keys.headers("viewer"), **A2A_HEADERS},
        )
        theirs = await running.http.post(
            "/a2a/Operator",
            json=_rpc("SubscribeToTask", {"id": task_id}),
            headers={**bearer(keys.other), **A2A_HEADERS},
        )

    # First the task as it was: working, the interim answer already in its history.
    assert first.task.id == task_id
    assert first.task.status.state == TaskState.TASK_STATE_WORKING
    assert [get_message_text(m) for m in first.task.history] == ["Quote ACME.", "Looking it up."]
    texts = [
        get_message_text(r.status_update.status.message)
        for r in rest
        if r.HasField("status_update") and r.status_update.status.HasField("message")
    ]
    assert texts == [ANSWER]  # not "Looking it up." again
    [artifact] = [r.artifact_update.artifact for r in rest if r.HasField("artifact_update")]
    assert get_artifact_text(artifact) == ANSWER
    assert rest[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    # An ended task has nothing to stream; another tenant's is not found.
    assert "has ended" in _sse_error(ended)["message"]
    assert _sse_error(ended)["code"] == -32004  # UnsupportedOperationError
    assert _sse_error(theirs)["code"] == -32001  # TaskNotFoundError


async def test_subscribing_to_a_task_that_waits_for_approval_gives_the_task_and_closes(
    client: Client, task_queue: str, keys: Keys
) -> None:
    model = ScriptedModel([tool_call("sell", symbol="ACME", quantity=5), reply("Sold.")])
    async with (
        agent_worker(client, Operator, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
        a2a_client(running, keys.by_role["viewer"], streaming=True) as viewer,
        a2a_client(running, keys.by_role["operator"]) as operator,
    ):
        [waiting] = await send(operator, user_message("Sell 5 ACME."))
        async with asyncio.timeout(TIMEOUT):
            got = [r async for r in viewer.subscribe(SubscribeToTaskRequest(id=waiting.task.id))]

    [only] = got
    assert only.task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert "Waiting for approval" in get_message_text(only.task.status.message)


def _sse_error(answer: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC error a streaming method answered (as JSON, or as its one SSE event)."""
    text = answer.text
    if text.lstrip().startswith("{"):
        error: dict[str, Any] = json.loads(text)["error"]
        return error
    data = next(line for line in text.splitlines() if line.startswith("data:"))
    error = json.loads(data.removeprefix("data:"))["error"]
    return error


async def test_a_task_the_worker_lacks_the_agent_for_is_terminated_and_refused(
    client: Client, task_queue: str, keys: Keys
) -> None:
    # The pickup check of a whole SendMessage waits until the result is late: a run no
    # worker can take is still found out, terminated and refused, not left waiting.
    app = create_app(AgentClient(client, task_queue=task_queue), [Rater], keys=keys.store)
    verdict = {"symbol": "ACME", "action": "buy", "confidence": 0.8}
    async with serving(app) as url:
        async with agent_worker(
            client, Rater, model=ScriptedModel([reply(json.dumps(verdict))]), task_queue=task_queue
        ):
            served = await _post_send(url, keys, "Rate ACME.")
        # Redeployed without Rater: the gateway's earlier answer is out of date.
        async with agent_worker(client, Operator, model=ScriptedModel([]), task_queue=task_queue):
            lost = await _post_send(url, keys, "Rate ACME again.")
            runs = [
                e
                async for e in client.list_workflows(
                    f"WorkflowType = 'Rater' AND TaskQueue = '{task_queue}'"
                )
            ]

    assert served.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    error = lost.json()["error"]
    assert "no worker" in error["message"] and "Rater" in error["message"], error
    [terminated] = [
        e for e in runs if e.id.startswith("a2a-") and e.id != served.json()["result"]["task"]["id"]
    ]
    assert terminated.status is not None and terminated.status.name == "TERMINATED"


async def _post_send(url: str, keys: Keys, text: str) -> httpx.Response:
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}]}
    async with httpx.AsyncClient(timeout=60) as http:
        return await http.post(
            f"{url}/a2a/Rater",
            json=_rpc("SendMessage", {"message": message}),
            headers={**keys.headers("operator"), **A2A_HEADERS},
        )


async def test_a_streamed_vote_that_leaves_a_quorum_short_ends_at_input_required(
    client: Client, task_queue: str, keys: Keys
) -> None:
    # One vote of a two-approver quorum leaves the request pending: the streamed answer
    # closes at input-required (it once waited for a decision event that never comes).
    model = ScriptedModel([tool_call("sell", symbol="ACME", quantity=1), reply("Sold.")])
    app = create_app(
        AgentClient(client, task_queue=task_queue), [CarefulTrader], keys=keys.store, options=FAST
    )
    _, second = keys.store.create(tenant=TENANT, role="approver", name="acme-approver-2")
    async with (
        agent_worker(client, CarefulTrader, model=model, task_queue=task_queue),
        serving(app) as url,
        httpx.AsyncClient(base_url=url) as http,
    ):
        running = Running(app, url, http)
        async with a2a_client(running, keys.by_role["operator"], agent="CarefulTrader") as a2a:
            [waiting] = await send(a2a, user_message("Sell 1 ACME."))
        async with a2a_client(
            running, keys.by_role["approver"], streaming=True, agent="CarefulTrader"
        ) as first:
            short = await send(first, decision_message(waiting.task))
        async with a2a_client(running, second, streaming=True, agent="CarefulTrader") as other:
            done = await send(other, decision_message(waiting.task))

    [still] = short
    assert still.task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert done[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
