"""The gateway's streamed paths without their extra ownership calls, still tenant-tight.

A streamed Responses continuation checks its session beside the read of where the
stream ends (no describe before it); A2A's start is its own deduplication (no lookup
before it). A key of another tenant still gets a 404 (or A2A's not-found) for a
session or task id that another tenant's run holds, and nothing reaches the model.
"""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path

import openai
import pytest
from temporalio.client import Client

from smyth_temporal import AgentClient
from smyth_temporal.gateway._a2a_tasks import task_id_for
from smyth_temporal.security import Principal
from smyth_temporal.testing import ScriptedModel, agent_worker, reply
from smyth_temporal.types.sessions import session_workflow_id
from tests.gateway.test_gateway_a2a import A2A_HEADERS, _rpc, a2a_client, send, user_message
from tests.gateway.test_gateway_responses import openai_client
from tests.helpers.gateway_support import OTHER, TENANT, Keys, bearer, gateway, make_keys
from tests.helpers.live_agents import Operator

NOWHERE = "no-worker-polls-this-queue"
ACME = Principal(name="acme-operator", tenant=TENANT, role="operator")


@pytest.fixture
def keys(tmp_path: Path) -> Keys:
    return make_keys(tmp_path / "keys.json")


def _response_id(tenant: str, agent: str, session_id: str, step: int) -> str:
    fields = json.dumps([tenant, agent, session_id, step]).encode()
    return "resp_" + base64.urlsafe_b64encode(fields).decode().rstrip("=")


async def test_a_streamed_continuation_of_a_session_another_tenant_holds_is_a_404(
    client: Client, task_queue: str, keys: Keys
) -> None:
    model = ScriptedModel([reply("Hello, Alice."), reply("You are Alice.")])
    # An acme run holding the id globex's session "taken" would have, never run.
    taken = f"taken-{uuid.uuid4().hex[:8]}"
    squatter = session_workflow_id("Operator", OTHER, taken)
    acme = AgentClient(client, task_queue=NOWHERE, principal=ACME)
    await acme.start(Operator, "Hello.", id=squatter)
    async with (
        agent_worker(client, Operator, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        ours = openai_client(running.url, keys.by_role["operator"])
        theirs = openai_client(running.url, keys.other)
        first = await ours.responses.create(model="Operator", input="I am Alice.")
        refused = []
        # globex's ids: of the session acme's run holds, and of acme's session's name.
        _, agent, session_id, step = _fields(first.id)
        for forged in (
            _response_id(OTHER, "Operator", taken, 0),
            _response_id(OTHER, str(agent), str(session_id), int(str(step))),
        ):
            with pytest.raises(openai.NotFoundError) as error:
                await theirs.responses.create(
                    model="Operator", input="Who am I?", previous_response_id=forged, stream=True
                )
            refused.append(error.value)
        async with ours.responses.stream(
            model="Operator", input="Who am I?", previous_response_id=first.id
        ) as stream:
            final = await stream.get_final_response()
    squatted = await client.get_workflow_handle(squatter).describe()
    await client.get_workflow_handle(squatter).terminate("test over")

    assert final.output_text == "You are Alice."
    assert all(e.status_code == 404 and "no response 'resp_" in e.message for e in refused)
    assert len(model.requests) == 2  # nothing of globex's reached the model
    assert squatted.status is not None and squatted.history_length <= 2  # took no message


def _fields(response_id: str) -> list[object]:
    body = response_id.removeprefix("resp_")
    fields: list[object] = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    return fields


async def test_a2a_dedup_by_start_answers_the_same_task_and_never_another_tenants(
    client: Client, task_queue: str, keys: Keys
) -> None:
    model = ScriptedModel([reply("ACME trades at 42 today.")])
    # An acme run holding the task id globex's message "m-<random>" would start.
    message_id = f"m-{uuid.uuid4().hex[:8]}"
    squatter = task_id_for(OTHER, "Operator", message_id)
    await AgentClient(client, task_queue=NOWHERE, principal=ACME).start(
        Operator, "Hello.", id=squatter
    )
    async with (
        agent_worker(client, Operator, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        async with a2a_client(running, keys.by_role["operator"]) as a2a:
            message = user_message("How is ACME?")
            [first] = await send(a2a, message)
            [again] = await send(a2a, message)  # the same message id: the same task
        params = {"message": {"messageId": message_id, "role": "ROLE_USER", "parts": []}}
        params["message"]["parts"] = [{"text": "How is ACME?"}]
        theirs = await running.http.post(
            "/a2a/Operator",
            json=_rpc("SendMessage", params),
            headers={**bearer(keys.other), **A2A_HEADERS},
        )
    squatted = await client.get_workflow_handle(squatter).describe()
    await client.get_workflow_handle(squatter).terminate("test over")

    assert first.task.id == again.task.id and len(model.requests) == 1
    assert first.task.artifacts == again.task.artifacts
    assert theirs.status_code == 200, theirs.text
    error = theirs.json()["error"]
    assert error["code"] == -32001 and "no task" in error["message"]  # TaskNotFoundError
    assert squatted.history_length <= 2  # acme's run took nothing of globex's
