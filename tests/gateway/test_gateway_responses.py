"""OpenAI's Responses API at the gateway, driven by the real ``openai`` client on a dev server."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

import openai
import pytest
from temporalio.client import Client

from smyth_temporal import AgentClient
from smyth_temporal.gateway import create_app
from smyth_temporal.models import ModelResponse
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from smyth_temporal.types.sessions import session_workflow_id
from tests.helpers.gateway_support import (
    FAST,
    OTHER,
    TENANT,
    Keys,
    gateway,
    make_keys,
    serving,
    until,
)
from tests.helpers.live_agents import Operator
from tests.helpers.policy_agents import CarefulTrader

INTERIM = "Let me look the quote up first."
ANSWER = "ACME trades at 42, up two percent since the open this morning."


@pytest.fixture
def keys(tmp_path: Path) -> Keys:
    return make_keys(tmp_path / "keys.json")


def openai_client(url: str, key: str) -> openai.AsyncOpenAI:
    # Strict: every response must validate against the client's own models.
    return openai.AsyncOpenAI(
        base_url=f"{url}/openai/v1", api_key=key, max_retries=0, _strict_response_validation=True
    )


def _saying(step: ModelResponse, text: str) -> ModelResponse:
    return step.model_copy(update={"message": step.message.model_copy(update={"content": text})})


def _fields(response_id: str) -> list[Any]:
    body = response_id.removeprefix("resp_")
    fields: list[Any] = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    return fields


def _id(*fields: Any) -> str:
    return "resp_" + base64.urlsafe_b64encode(json.dumps(fields).encode()).decode().rstrip("=")


def _forged(response_id: str, tenant: str) -> str:
    """``response_id`` naming the same agent, session and step in ``tenant``."""
    return _id(tenant, *_fields(response_id)[1:])


def _session(response_id: str) -> str:
    session: str = _fields(response_id)[2]
    return session


async def test_a_second_response_by_previous_response_id_remembers_the_first(
    client: Client, task_queue: str, keys: Keys
) -> None:
    model = ScriptedModel([reply("Hello, Alice."), reply("Your name is Alice.")], tokens_per_turn=5)
    async with (
        agent_worker(client, Operator, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        ai = openai_client(running.url, keys.by_role["operator"])
        first = await ai.responses.create(model="Operator", input="I am Alice.")
        second = await ai.responses.create(
            model="Operator",
            input=[{"role": "user", "content": [{"type": "input_text", "text": "Who am I?"}]}],
            previous_response_id=first.id,
        )
        again = await ai.responses.retrieve(first.id)
        viewer = openai_client(running.url, keys.by_role["viewer"])
        seen_by_viewer = await viewer.responses.retrieve(second.id)

    assert (first.status, first.output_text) == ("completed", "Hello, Alice.")
    assert (second.status, second.output_text) == ("completed", "Your name is Alice.")
    assert second.previous_response_id == first.id
    # One durable session: the second turn saw the first exchange.
    conversation = [(m.role, m.content) for m in model.requests[1].messages if m.role != "system"]
    assert conversation == [
        ("user", "I am Alice."),
        ("assistant", "Hello, Alice."),
        ("user", "Who am I?"),
    ]
    assert first.usage is not None
    assert (first.usage.input_tokens, first.usage.output_tokens) == (5, 5)
    assert first.usage.total_tokens == 10
    assert (again.id, again.status, again.output_text) == (first.id, "completed", "Hello, Alice.")
    assert [item.id for item in again.output] == [item.id for item in first.output]
    assert seen_by_viewer.output_text == "Your name is Alice."


async def test_a_streamed_responses_deltas_rebuild_its_final_text(
    client: Client, task_queue: str, keys: Keys
) -> None:
    turn = [_saying(tool_call("get_quote", symbol="ACME"), INTERIM), reply(ANSWER)]
    model = ScriptedModel(turn * 2, piece_delay=0.03)
    async with (
        agent_worker(client, Operator, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        ai = openai_client(running.url, keys.by_role["operator"])
        async with ai.responses.stream(model="Operator", input="How is ACME?") as stream:
            events = [event async for event in stream]
            final = await stream.get_final_response()
        whole = await ai.responses.create(
            model="Operator", input="And now?", previous_response_id=final.id
        )

    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    for kind in (
        "response.output_item.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.output_item.done",
    ):
        assert kind in kinds
    deltas: dict[str, str] = {}
    for event in events:
        if event.type == "response.output_text.delta":
            deltas[event.item_id] = deltas.get(event.item_id, "") + event.delta
    assert len([e for e in events if e.type == "response.output_text.delta"]) > 4
    texts = [getattr(i.content[0], "text", None) for i in final.output if i.type == "message"]
    assert list(deltas.values()) == texts == [INTERIM, ANSWER]
    assert final.output_text == INTERIM + ANSWER  # the SDK joins the messages' text
    # The tool the agent ran, as a completed function call with its result.
    [call] = [item for item in final.output if item.type == "function_call"]
    assert (call.name, json.loads(call.arguments), call.status) == (
        "get_quote",
        {"symbol": "ACME"},
        "completed",
    )
    assert call.model_extra is not None and call.model_extra["output"]
    # Whole or streamed, the same items.
    shape = [(i.type, getattr(i, "phase", None)) for i in final.output]
    assert shape == [
        ("message", "commentary"),
        ("function_call", None),
        ("message", "final_answer"),
    ]
    assert [(i.type, getattr(i, "phase", None)) for i in whole.output] == shape


async def test_a_gated_tool_ends_the_response_incomplete_and_the_next_one_completes(
    client: Client, task_queue: str, keys: Keys
) -> None:
    model = ScriptedModel(
        [tool_call("sell", symbol="ACME", quantity=5), reply("Sold 5 ACME."), reply("Done.")]
    )
    async with (
        agent_worker(client, Operator, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        ai = openai_client(running.url, keys.by_role["operator"])
        stopped = await ai.responses.create(model="Operator", input="Sell 5 ACME.")
        [request] = [item for item in stopped.output if item.type == "mcp_approval_request"]
        workflow_id = session_workflow_id("Operator", TENANT, _session(stopped.id))
        state = await running.http.get(f"/v1/runs/{workflow_id}", headers=keys.headers("viewer"))
        [pending] = state.json()["pending_approvals"]
        # Before the decision the next input would wait behind it: refused, not sent.
        with pytest.raises(openai.ConflictError) as undecided:
            await ai.responses.create(
                model="Operator", input="Hurry.", previous_response_id=stopped.id
            )
        decided = await running.http.post(
            f"/v1/runs/{workflow_id}/approvals/{pending['id']}",
            json={"approved": True, "arguments_sha256": pending["arguments_sha256"]},
            headers=keys.headers("approver"),
        )
        then = await ai.responses.create(
            model="Operator", input="Thanks.", previous_response_id=stopped.id
        )
        later = await ai.responses.retrieve(stopped.id)

    assert stopped.status == "incomplete"
    assert stopped.incomplete_details is not None
    assert stopped.metadata == {"smyth_pending": pending["id"]}
    assert (request.id, request.name, json.loads(request.arguments)) == (
        pending["id"],
        "sell",
        {"symbol": "ACME", "quantity": 5},
    )
    assert stopped.output_text.startswith(f"Waiting for approval: request {pending['id']} (sell)")
    assert f"the session waits for a decision on request {pending['id']} (sell)" in (
        undecided.value.message
    )
    assert decided.status_code == 200, decided.text
    assert (then.status, then.output_text) == ("completed", "Done.")
    assert "Hurry." not in [m.content for m in model.requests[-1].messages]
    # The first response, read again once its turn went on: completed, with the sale.
    assert later.status == "completed"
    assert later.output_text == "Sold 5 ACME."
    assert [i.type for i in later.output] == ["function_call", "message"]


async def test_a_cancelled_response_withdraws_its_pending_approval(
    client: Client, task_queue: str, keys: Keys
) -> None:
    model = ScriptedModel([tool_call("sell", symbol="ACME", quantity=5), reply("Fine.")])
    async with (
        agent_worker(client, Operator, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        ai = openai_client(running.url, keys.by_role["operator"])
        stopped = await ai.responses.create(model="Operator", input="Sell 5 ACME.")
        cancelled = await ai.responses.cancel(stopped.id)
        workflow_id = session_workflow_id("Operator", TENANT, _session(stopped.id))

        async def withdrawn() -> bool:
            state = await running.http.get(
                f"/v1/runs/{workflow_id}", headers=keys.headers("viewer")
            )
            return not state.json()["pending_approvals"]

        await until(withdrawn, "the approval withdrawn")
        answered = await ai.responses.create(
            model="Operator", input="Never mind.", previous_response_id=stopped.id
        )
        with pytest.raises(openai.ConflictError) as finished:
            await ai.responses.cancel(answered.id)

    assert cancelled.status == "cancelled"
    assert answered.output_text == "Fine."
    assert "has finished: nothing to cancel" in finished.value.message


async def test_another_tenants_response_is_a_404_and_nothing_runs_for_it(
    client: Client, task_queue: str, keys: Keys
) -> None:
    model = ScriptedModel([reply("Hello, Alice.")])
    async with (
        agent_worker(client, Operator, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        ours = openai_client(running.url, keys.by_role["operator"])
        theirs = openai_client(running.url, keys.other)
        first = await ours.responses.create(model="Operator", input="I am Alice.")
        refused = []
        for response_id in (first.id, _forged(first.id, OTHER)):
            with pytest.raises(openai.NotFoundError) as continued:
                await theirs.responses.create(
                    model="Operator", input="Who am I?", previous_response_id=response_id
                )
            with pytest.raises(openai.NotFoundError) as read:
                await theirs.responses.retrieve(response_id)
            with pytest.raises(openai.NotFoundError) as cancelled:
                await theirs.responses.cancel(response_id)
            refused += [continued.value, read.value, cancelled.value]

    # The words of a missing response, whatever the id names; the model was asked once.
    assert all(e.status_code == 404 and "no response 'resp_" in e.message for e in refused)
    assert len(model.requests) == 1


async def test_bad_input_gets_an_openai_error_and_starts_nothing(
    client: Client, task_queue: str, keys: Keys
) -> None:
    model = ScriptedModel([reply("Hello.")])
    async with (
        agent_worker(client, Operator, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        ai = openai_client(running.url, keys.by_role["operator"])
        errors: dict[str, openai.APIStatusError] = {}
        attempts: dict[str, Any] = {
            "unknown agent": {"model": "Nobody", "input": "hi"},
            "no text": {"model": "Operator", "input": "  "},
            "not a message": {
                "model": "Operator",
                "input": [{"type": "function_call_output", "call_id": "c", "output": "x"}],
            },
            "an image": {
                "model": "Operator",
                "input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}],
            },
            "missing previous": {
                "model": "Operator",
                "input": "hi",
                "previous_response_id": _id(TENANT, "Operator", "nope", 0),
            },
            "garbage previous": {"model": "Operator", "input": "hi", "previous_response_id": "x"},
            "oversize": {"model": "Operator", "input": "x" * (2 * 1024 * 1024)},
        }
        for what, body in attempts.items():
            with pytest.raises(openai.APIStatusError) as refused:
                await ai.responses.create(**body)
            errors[what] = refused.value
        raw = await running.http.post(
            "/openai/v1/responses",
            json={"model": "Operator", "input": 3},
            headers=keys.headers("operator"),
        )
        viewer = openai_client(running.url, keys.by_role["viewer"])
        with pytest.raises(openai.PermissionDeniedError):
            await viewer.responses.create(model="Operator", input="hi")
        with pytest.raises(openai.AuthenticationError):
            await openai_client(running.url, "smyth_nope").responses.create(
                model="Operator", input="hi"
            )
        # One good request after the bad ones: once it is listed, nothing else is.
        good = await ai.responses.create(model="Operator", input="hi")
        started: list[str] = []

        async def listed() -> bool:
            query = f"TaskQueue = '{task_queue}'"
            started[:] = [w.id async for w in client.list_workflows(query)]
            return bool(started)

        await until(listed, "the good request's session listed")

    statuses = {what: e.status_code for what, e in errors.items()}
    assert statuses == {
        "unknown agent": 404,
        "no text": 400,
        "not a message": 400,
        "an image": 400,
        "missing previous": 404,
        "garbage previous": 404,
        "oversize": 413,
    }
    assert errors["unknown agent"].code == "UnknownAgentError"
    assert "input item type 'function_call_output' is not supported" in (
        errors["not a message"].message
    )
    for error in errors.values():  # OpenAI's shape: message, type, code
        assert isinstance(error.body, dict) and {"message", "type", "code"} <= error.body.keys()
    assert raw.status_code == 422 and set(raw.json()) == {"error"}
    assert started == [session_workflow_id("Operator", TENANT, _session(good.id))]


async def test_a_streamed_response_stopped_by_an_approval_ends_incomplete(
    client: Client, task_queue: str, keys: Keys
) -> None:
    model = ScriptedModel([tool_call("sell", symbol="ACME", quantity=5), reply("Sold.")])
    async with (
        agent_worker(client, Operator, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        ai = openai_client(running.url, keys.by_role["operator"])
        events = [
            event
            async for event in await ai.responses.create(
                model="Operator", input="Sell 5 ACME.", stream=True
            )
        ]
        stopped = events[-1]
        assert stopped.type == "response.incomplete"
        with pytest.raises(openai.ConflictError) as undecided:
            await ai.responses.create(
                model="Operator",
                input="Hurry.",
                previous_response_id=stopped.response.id,
                stream=True,
            )

    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    [request] = [i for i in stopped.response.output if i.type == "mcp_approval_request"]
    assert (request.name, stopped.response.status) == ("sell", "incomplete")
    assert f"request {request.id} (sell)" in undecided.value.message
    assert len(model.requests) == 1  # the refused input never reached the agent


def _approval(request_id: str, approve: bool, reason: str | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {
        "type": "mcp_approval_response",
        "approval_request_id": request_id,
        "approve": approve,
    }
    if reason is not None:
        item["reason"] = reason
    return item


async def test_an_mcp_approval_response_decides_the_request_and_the_turn_goes_on(
    client: Client, task_queue: str, keys: Keys
) -> None:
    model = ScriptedModel(
        [tool_call("sell", symbol="ACME", quantity=5), reply("Sold 5 ACME."), reply("Done.")]
    )
    async with (
        agent_worker(client, Operator, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        operator = openai_client(running.url, keys.by_role["operator"])
        approver = openai_client(running.url, keys.by_role["approver"])
        stopped = await operator.responses.create(model="Operator", input="Sell 5 ACME.")
        [request] = [item for item in stopped.output if item.type == "mcp_approval_request"]
        approve = [_approval(request.id, True)]
        refused: dict[str, openai.APIStatusError] = {}
        attempts = {
            "viewer": (keys.by_role["viewer"], stopped.id, approve),
            "operator": (keys.by_role["operator"], stopped.id, approve),
            "other tenant": (keys.other, stopped.id, approve),
            "forged for other tenant": (keys.other, _forged(stopped.id, OTHER), approve),
            "unknown request": (keys.by_role["approver"], stopped.id, [_approval("apr-9", True)]),
            "no previous": (keys.by_role["approver"], None, approve),
            "no approve field": (
                keys.by_role["approver"],
                stopped.id,
                [{"type": "mcp_approval_response", "approval_request_id": request.id}],
            ),
            # Text after the decision needs operate too: refused before deciding.
            "approver with text": (
                keys.by_role["approver"],
                stopped.id,
                [*approve, {"role": "user", "content": "And buy more."}],
            ),
        }
        for what, (key, previous, items) in attempts.items():
            with pytest.raises(openai.APIStatusError) as error:
                await openai_client(running.url, key).responses.create(
                    model="Operator", input=items, previous_response_id=previous
                )
            refused[what] = error.value
        still = await operator.responses.retrieve(stopped.id)
        went_on = await approver.responses.create(
            model="Operator", input=approve, previous_response_id=stopped.id
        )
        again = await approver.responses.create(  # a retry: the same decision, taken once
            model="Operator", input=approve, previous_response_id=stopped.id
        )
        then = await operator.responses.create(
            model="Operator", input="Thanks.", previous_response_id=went_on.id
        )

    statuses = {what: error.status_code for what, error in refused.items()}
    assert statuses == {
        "viewer": 403,
        "operator": 403,
        "other tenant": 404,
        "forged for other tenant": 404,
        "unknown request": 404,
        "no previous": 400,
        "no approve field": 400,
        "approver with text": 403,
    }
    assert "may not decide" in refused["operator"].message
    assert still.status == "incomplete"  # no refused attempt decided anything
    assert (went_on.status, went_on.output_text) == ("completed", "Sold 5 ACME.")
    [call] = [item for item in went_on.output if item.type == "function_call"]
    assert call.name == "sell" and json.loads(call.arguments) == {"symbol": "ACME", "quantity": 5}
    assert went_on.previous_response_id == stopped.id
    assert (again.status, again.output_text) == ("completed", "Sold 5 ACME.")
    assert (then.status, then.output_text) == ("completed", "Done.")
    assert len(model.requests) == 3  # the sale was answered once


async def test_a_streamed_rejection_by_mcp_approval_response_tells_the_model_why(
    client: Client, task_queue: str, keys: Keys
) -> None:
    model = ScriptedModel([tool_call("sell", symbol="ACME", quantity=5), reply("Not sold.")])
    async with (
        agent_worker(client, Operator, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        admin = openai_client(running.url, keys.by_role["admin"])
        stopped = await admin.responses.create(model="Operator", input="Sell 5 ACME.")
        [request] = [item for item in stopped.output if item.type == "mcp_approval_request"]
        async with admin.responses.stream(
            model="Operator",
            input=[_approval(request.id, False, "too risky today")],  # type: ignore[list-item]
            previous_response_id=stopped.id,
        ) as stream:
            kinds = [event.type async for event in stream]
            final = await stream.get_final_response()
        with pytest.raises(openai.ConflictError) as otherwise:
            await admin.responses.create(
                model="Operator",
                input=[_approval(request.id, True)],  # type: ignore[list-item]
                previous_response_id=stopped.id,
            )

    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert (final.status, final.output_text) == ("completed", "Not sold.")
    told = [m.content or "" for m in model.requests[-1].messages if m.role == "tool"]
    assert any("too risky today" in text for text in told)
    assert "is rejected, not pending" in otherwise.value.message


async def test_a_vote_that_leaves_a_quorum_short_ends_the_response_incomplete(
    client: Client, task_queue: str, keys: Keys
) -> None:
    # One vote of a two-approver quorum leaves the request pending: the response that
    # follows it stops there again (it once waited for a turn that could not go on).
    model = ScriptedModel([tool_call("sell", symbol="ACME", quantity=1), reply("Sold.")])
    app = create_app(
        AgentClient(client, task_queue=task_queue), [CarefulTrader], keys=keys.store, options=FAST
    )
    async with (
        agent_worker(client, CarefulTrader, model=model, task_queue=task_queue),
        serving(app) as url,
    ):
        operator = openai_client(url, keys.by_role["operator"])
        stopped = await operator.responses.create(model="CarefulTrader", input="Sell 1 ACME.")
        [request] = [item for item in stopped.output if item.type == "mcp_approval_request"]
        vote = [_approval(request.id, True)]
        async with asyncio.timeout(30):  # it once waited for ever
            short = await openai_client(url, keys.by_role["approver"]).responses.create(
                model="CarefulTrader", input=vote, previous_response_id=stopped.id
            )
        _, second = keys.store.create(tenant=TENANT, role="approver", name="acme-approver-2")
        done = await openai_client(url, second).responses.create(
            model="CarefulTrader", input=vote, previous_response_id=short.id
        )

    [still] = [item for item in short.output if item.type == "mcp_approval_request"]
    assert (short.status, still.id) == ("incomplete", request.id)
    assert (done.status, done.output_text) == ("completed", "Sold.")
