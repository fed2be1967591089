"""The gateway's HTTP API on a real dev server: keys, roles, tenancy, runs, problem details."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.requests import ClientDisconnect, Request
from structlog.testing import capture_logs
from temporalio.client import Client

from smyth_temporal import AgentClient, AgentInput
from smyth_temporal.exceptions import InvalidDecisionError
from smyth_temporal.gateway import GatewayOptions, Permission, Principal, create_app
from smyth_temporal.gateway._gateway import while_connected
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from tests.helpers.agents import Analyst
from tests.helpers.gateway_support import (
    OTHER,
    SERVED,
    TENANT,
    Keys,
    bearer,
    gateway,
    history_length,
    make_keys,
    sse,
    until,
)
from tests.helpers.trader import Trader

ANSWER = "ACME trades at 101.5; nothing to do."
ROLES = ("viewer", "operator", "approver", "admin")


@pytest.fixture
def keys(tmp_path: Path) -> Keys:
    return make_keys(tmp_path / "keys.json")


@pytest.fixture
async def asgi(agents: AgentClient, keys: Keys) -> AsyncIterator[httpx.AsyncClient]:
    """The app without a server, for routes that need no worker."""
    app = create_app(agents, SERVED, keys=keys.store, options=GatewayOptions(auth_burst=1000))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as http:
        yield http


def chat(model: str) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": "hi"}], "user": "s1"}


def message(answer: httpx.Response) -> str:
    """The error's message: problem details, or OpenAI's shape under /openai."""
    body = answer.json()
    return str(body["error"]["message"] if "error" in body else body["detail"])


AG_UI_RUN = {
    "threadId": "t",
    "runId": "r",
    "messages": [{"id": "m", "role": "user", "content": "hi"}],
}

# Every route, what it needs, and a request that passes authorization but touches no run.
ROUTES: list[tuple[str, str, dict[str, Any] | None, Permission]] = [
    ("POST", "/v1/agents/Nobody/runs", {"prompt": "hi"}, "operate"),
    ("GET", "/v1/runs", None, "read"),
    ("GET", "/v1/runs/nope", None, "read"),
    ("GET", "/v1/runs/nope/result", None, "read"),
    ("GET", "/v1/runs/nope/events", None, "read"),
    ("POST", "/v1/runs/nope/interrupt", {"reason": "stop"}, "operate"),
    ("POST", "/v1/runs/nope/fork", {"at_step": 1}, "operate"),
    ("POST", "/v1/runs/nope/rewind", {"to_step": 1}, "operate"),
    ("POST", "/v1/agents/Nobody/sessions/s1/messages", {"text": "hi"}, "operate"),
    ("GET", "/v1/approvals", None, "read"),
    ("POST", "/v1/runs/nope/approvals/r1", {"approved": False}, "approve"),
    ("GET", "/v1/memory", None, "read"),
    ("GET", "/v1/memory/search?q=acme", None, "read"),
    ("DELETE", "/v1/memory/m1?namespace=research", None, "admin"),
    ("GET", "/v1/schedules", None, "read"),
    ("GET", "/v1/whoami", None, "read"),
    ("GET", "/openai/v1/models", None, "read"),
    ("POST", "/openai/v1/chat/completions", chat("Nobody"), "operate"),
    ("POST", "/openai/v1/responses", {"model": "Nobody", "input": "hi"}, "operate"),
    ("GET", "/openai/v1/responses/resp_nope", None, "read"),
    ("POST", "/openai/v1/responses/resp_nope/cancel", None, "operate"),
    ("POST", "/ag-ui/Nobody", AG_UI_RUN, "operate"),
]


@pytest.mark.parametrize(("method", "path", "body", "needs"), ROUTES, ids=[r[1] for r in ROUTES])
async def test_every_route_refuses_the_roles_without_its_permission(
    asgi: httpx.AsyncClient,
    keys: Keys,
    method: str,
    path: str,
    body: dict[str, Any] | None,
    needs: Permission,
) -> None:
    for role in ROLES:
        answer = await asgi.request(method, path, json=body, headers=keys.headers(role))
        allowed = Principal("k", TENANT, role).may(needs)  # type: ignore[arg-type]
        assert (answer.status_code == 403) == (not allowed), (role, answer.text)
        assert answer.status_code != 401, answer.text
        if not allowed:
            # The client's refusal, word for word (AgentClient.acting_for, the CLI, MCP).
            assert f"key '{TENANT}-{role}' (role {role}) may not" in message(answer)
            error = answer.json().get("error", answer.json())  # OpenAI's shape, or problem
            assert error.get("code", error.get("type")).endswith("AccessDeniedError")
    # No key at all: 401 everywhere.
    assert (await asgi.request(method, path, json=body)).status_code == 401


async def test_no_bad_or_revoked_key_is_401_and_health_needs_none(
    asgi: httpx.AsyncClient, keys: Keys
) -> None:
    for headers in ({}, bearer("smyth_not-a-key"), {"Authorization": "Basic eDp5"}):
        answer = await asgi.get("/v1/approvals", headers=headers)
        assert answer.status_code == 401
        assert answer.headers["www-authenticate"] == "Bearer"
        assert answer.headers["content-type"] == "application/problem+json"
    assert (await asgi.get("/v1/approvals", headers=keys.headers("viewer"))).status_code == 200
    keys.store.revoke(f"{TENANT}-viewer")  # the app's store sees the file change
    answer = await asgi.get("/v1/approvals", headers=keys.headers("viewer"))
    assert (answer.status_code, answer.json()["detail"]) == (401, "invalid or revoked API key")
    assert (await asgi.get("/healthz")).json() == {"status": "ok"}


async def test_failed_authentications_are_throttled_and_a_valid_key_never_is(
    agents: AgentClient, keys: Keys
) -> None:
    app = create_app(
        agents,
        SERVED,
        keys=keys.store,
        options=GatewayOptions(auth_burst=2, auth_refill_per_second=0.01),
    )
    # One proxy in front of everyone: bad guesses from it must not lock out real keys.
    transport = httpx.ASGITransport(app=app, client=("10.1.2.3", 5000))
    elsewhere = httpx.ASGITransport(app=app, client=("10.9.9.9", 5000))
    async with (
        httpx.AsyncClient(transport=transport, base_url="http://g") as http,
        httpx.AsyncClient(transport=elsewhere, base_url="http://g") as other,
    ):
        with capture_logs() as logs:
            codes = [
                (await http.get("/v1/approvals", headers=bearer(f"smyth_guessing-{n}"))).status_code
                for n in range(3)
            ]
            valid = [
                (await http.get("/v1/approvals", headers=keys.headers(role))).status_code
                for role in ("admin", "viewer", "admin")
            ]
            missing = await http.get("/v1/approvals")
            # One key's first characters tried from elsewhere: its own bucket runs dry too.
            same_prefix = [
                (
                    await other.get("/v1/approvals", headers=bearer(f"smyth_guessing-{n}"))
                ).status_code
                for n in range(3, 5)
            ]
        unaffected = await other.get("/v1/approvals", headers=bearer("smyth_another-guess"))
    assert codes == [401, 401, 429]
    assert valid == [200, 200, 200]
    assert missing.status_code == 429 and int(missing.headers["retry-after"]) >= 1
    assert same_prefix == [429, 429]
    assert unaffected.status_code == 401
    events = [(e["event"], e["client"]) for e in logs]
    assert (
        events
        == [("gateway.auth_failed", "10.1.2.3")] * 2
        + [("gateway.auth_throttled", "10.1.2.3")] * 2
        + [("gateway.auth_throttled", "10.9.9.9")] * 2
    )
    assert "guessing" not in repr(logs)


async def test_openapi_documents_every_route_with_problem_details(
    asgi: httpx.AsyncClient,
) -> None:
    spec = (await asgi.get("/openapi.json")).json()
    assert set(spec["paths"]) == {
        "/healthz",
        "/v1/agents/{agent}/runs",
        "/v1/runs",
        "/v1/runs/{workflow_id}",
        "/v1/runs/{workflow_id}/result",
        "/v1/runs/{workflow_id}/events",
        "/v1/runs/{workflow_id}/interrupt",
        "/v1/runs/{workflow_id}/fork",
        "/v1/runs/{workflow_id}/rewind",
        "/v1/agents/{agent}/sessions/{session_id}/messages",
        "/v1/approvals",
        "/v1/approvals/decisions",
        "/v1/runs/{workflow_id}/approvals/{request_id}",
        "/v1/memory",
        "/v1/memory/search",
        "/v1/memory/{memory_id}",
        "/v1/schedules",
        "/v1/whoami",
        "/openai/v1/models",
        "/openai/v1/chat/completions",
        "/openai/v1/responses",
        "/openai/v1/responses/{response_id}",
        "/openai/v1/responses/{response_id}/cancel",
        "/ag-ui/{agent}",
        "/.well-known/agent-card.json",
        "/a2a/{agent}/.well-known/agent-card.json",
        "/a2a/{agent}",
    }
    assert spec["components"]["securitySchemes"]["ApiKey"]["scheme"] == "bearer"
    schemas = spec["components"]["schemas"]
    assert set(schemas["Problem"]["required"]) == {"title", "status", "detail"}
    assert "HTTPValidationError" not in schemas
    state = spec["paths"]["/v1/runs/{workflow_id}"]["get"]
    assert state["security"] == [{"ApiKey": []}]
    assert state["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/AgentState"
    }
    assert "application/problem+json" in state["responses"]["4XX"]["content"]
    events = spec["paths"]["/v1/runs/{workflow_id}/events"]["get"]
    assert "text/event-stream" in events["responses"]["200"]["content"]
    assert {p["name"] for p in events["parameters"]} >= {"after", "last-event-id"}
    decide = spec["paths"]["/v1/runs/{workflow_id}/approvals/{request_id}"]["post"]
    assert "arguments_sha256" in schemas["Decision"]["properties"]
    assert "tenant" not in schemas["StartRequest"]["properties"]  # the key names it
    # One entry for every client error, validation (422) included: all problem details.
    assert set(decide["responses"]) == {"200", "4XX", "5XX"}
    assert "application/problem+json" in decide["responses"]["4XX"]["content"]


async def test_bad_requests_are_problem_details_without_tracebacks(
    client: Client, task_queue: str, keys: Keys
) -> None:
    headers = {**keys.headers("admin"), "Content-Type": "application/json"}
    async with gateway(client, task_queue, keys) as running:
        http = running.http
        malformed = await http.post(
            "/v1/agents/Analyst/runs", content=b'{"prompt": ', headers=headers
        )
        missing = await http.post("/v1/agents/Analyst/runs", json={}, headers=headers)
        tenant = await http.post(
            "/v1/agents/Analyst/runs", json={"prompt": "hi", "tenant": OTHER}, headers=headers
        )
        unknown = await http.post("/v1/agents/Nobody/runs", json={"prompt": "hi"}, headers=headers)
        unpinned = await http.post(
            "/v1/runs/x/approvals/r1", json={"approved": True}, headers=headers
        )
        big = b'{"prompt": "' + b"x" * (1024 * 1024) + b'"}'
        declared = await http.post("/v1/agents/Analyst/runs", content=big, headers=headers)

        async def chunks() -> AsyncIterator[bytes]:
            for _ in range(20):
                yield b"x" * 100_000

        chunked = await http.post("/v1/agents/Analyst/runs", content=chunks(), headers=headers)

    for answer in (malformed, missing, tenant, unknown, unpinned, declared, chunked):
        assert answer.headers["content-type"] == "application/problem+json"
        problem = answer.json()
        assert problem["status"] == answer.status_code
        assert set(problem) >= {"type", "title", "status", "detail"}
        assert "Traceback" not in answer.text
    assert (malformed.status_code, malformed.json()["detail"]) == (
        400,
        "the request body is not valid JSON",
    )
    assert missing.status_code == 422 and "body.prompt: Field required" in missing.json()["detail"]
    assert missing.json()["errors"][0]["loc"] == ["body", "prompt"]
    assert tenant.status_code == 422 and "body.tenant: Extra inputs" in tenant.json()["detail"]
    assert unknown.status_code == 404
    assert unknown.json()["type"] == "urn:smyth:error:UnknownAgentError"
    assert unknown.json()["detail"] == (
        "unknown agent 'Nobody'; this gateway serves: Analyst, Operator, Trader, Researcher"
    )
    assert unpinned.status_code == 422 and "approving needs arguments_sha256" in unpinned.text
    assert declared.status_code == chunked.status_code == 413


async def test_a_run_over_http_start_events_state_result(
    client: Client, task_queue: str, keys: Keys
) -> None:
    model = ScriptedModel([tool_call("get_quote", symbol="ACME"), reply(ANSWER)], piece_delay=0.02)
    async with (
        agent_worker(client, Analyst, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        http = running.http
        started = await http.post(
            "/v1/agents/Analyst/runs",
            json={"prompt": "How is ACME?", "metadata": {"desk": "equities"}},
            headers=keys.headers("operator"),
        )
        assert started.status_code == 201, started.text
        run = started.json()
        assert started.headers["location"] == f"/v1/runs/{run['workflow_id']}"
        assert (run["agent"], run["tenant"]) == ("Analyst", TENANT)
        base = f"/v1/runs/{run['workflow_id']}"
        async with http.stream("GET", f"{base}/events", headers=keys.headers("viewer")) as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            events = [e async for e in sse(stream)]  # ends when the run ends
        result = await http.get(f"{base}/result", headers=keys.headers("viewer"))
        state = await http.get(base, headers=keys.headers("viewer"))
        direct = [
            e async for e in AgentClient(client, task_queue=task_queue).events(run["workflow_id"])
        ]

    assert [int(e.id or -1) for e in events] == [e.offset for e in direct]
    assert [e.event for e in events] == [e.kind for e in direct]
    assert [e.json()["kind"] for e in events] == [e.event for e in events]
    assert events[-1].event == "run_finished"
    assert result.json()["output"] == ANSWER and result.json()["status"] == "completed"
    assert (state.json()["tenant"], state.json()["status"]) == (TENANT, "completed")


async def test_another_tenants_run_is_not_found_and_left_untouched(
    client: Client, task_queue: str, keys: Keys
) -> None:
    model = ScriptedModel([tool_call("sell", symbol="ACME", quantity=10), reply("sold")])
    async with (
        agent_worker(client, Trader, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        http = running.http
        started = await http.post(
            "/v1/agents/Trader/runs", json={"prompt": "Sell ACME"}, headers=keys.headers("operator")
        )
        workflow_id = started.json()["workflow_id"]
        pending: list[dict[str, Any]] = []

        async def listed() -> bool:
            answer = await http.get("/v1/approvals", headers=keys.headers("approver"))
            # Other tests' runs on this server may wait for approvals too: take this one's.
            pending[:] = [a for a in answer.json()["approvals"] if a["workflow_id"] == workflow_id]
            return bool(pending)

        await until(listed, "the approval request listed")
        request = pending[0]["request"]
        assert pending[0]["tenant"] == TENANT
        before = await history_length(client, workflow_id)

        intruder = bearer(keys.other)
        decision = {"approved": True, "arguments_sha256": request["arguments_sha256"]}
        base, nowhere = f"/v1/runs/{workflow_id}", "/v1/runs/no-such-run"
        probes = {
            "state": ("GET", "", None),
            "result": ("GET", "/result", None),
            "events": ("GET", "/events", None),
            "interrupt": ("POST", "/interrupt", {"reason": "mine now"}),
            "decide": ("POST", f"/approvals/{request['id']}", decision),
        }
        for what, (method, suffix, body) in probes.items():
            theirs = await http.request(method, base + suffix, json=body, headers=intruder)
            missing = await http.request(method, nowhere + suffix, json=body, headers=intruder)
            assert theirs.status_code == missing.status_code == 404, what
            # Word for word what a run that does not exist gets: nothing confirms it exists.
            assert (
                theirs.json()["detail"].replace(workflow_id, "no-such-run")
                == missing.json()["detail"]
            )
        listed_for_them = await http.get("/v1/approvals", headers=intruder)
        assert listed_for_them.json()["approvals"] == []
        assert await history_length(client, workflow_id) == before

        # The owner's approver: a hash of other arguments is refused, without a trace...
        wrong = {"approved": True, "arguments_sha256": "0" * 64}
        refused = await http.post(
            f"{base}/approvals/{request['id']}", json=wrong, headers=keys.headers("approver")
        )
        assert refused.status_code == 409, refused.text
        assert refused.json()["type"] == "urn:smyth:error:InvalidDecisionError"
        assert "sha256" in refused.json()["detail"]
        assert await history_length(client, workflow_id) == before
        # ...the hash of what was shown is taken, recorded under the key's name.
        decided = await http.post(
            f"{base}/approvals/{request['id']}",
            json={**decision, "comment": "fine"},
            headers=keys.headers("approver"),
        )
        assert decided.status_code == 200, decided.text
        result = await http.get(f"{base}/result", headers=keys.headers("viewer"))

    outcome = decided.json()["request"]
    assert outcome["status"] == "approved"
    assert (outcome["decision"]["by"], outcome["decision"]["comment"]) == (
        f"{TENANT}-approver",
        "fine",
    )
    assert result.json()["output"] == "sold"


async def test_a_wait_ends_when_its_client_leaves() -> None:
    left = asyncio.Event()

    async def receive() -> dict[str, Any]:
        await left.wait()
        return {"type": "http.disconnect"}

    request = Request({"type": "http", "method": "GET", "path": "/", "headers": []}, receive)
    cancelled = asyncio.Event()

    async def forever() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    waiting = asyncio.create_task(while_connected(request, forever()))
    await asyncio.sleep(0.05)
    assert not waiting.done()
    left.set()
    with pytest.raises(ClientDisconnect):
        await waiting
    assert cancelled.is_set()  # the long poll behind it was given up

    async def stays() -> dict[str, Any]:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    staying = Request({"type": "http", "method": "GET", "path": "/", "headers": []}, stays)
    assert await while_connected(staying, asyncio.sleep(0.01, "answer")) == "answer"


def test_the_gateway_exports() -> None:
    import smyth_temporal.gateway as gateway_package

    assert sorted(gateway_package.__all__) == [
        "AnnouncingServer",
        "ApiKey",
        "BodyLimit",
        "DEV_HOST",
        "Gateway",
        "GatewayOptions",
        "KEYS_FILE_ENV",
        "KeyStore",
        "Permission",
        "Principal",
        "Problem",
        "ROLES",
        "Role",
        "create_app",
        "default_keys_path",
        "require_keys",
        "serve",
    ]
    for name in gateway_package.__all__:
        assert hasattr(gateway_package, name), name


async def test_deciding_on_a_finished_run_is_a_conflict_on_every_interface(
    client: Client, task_queue: str, keys: Keys
) -> None:
    model = ScriptedModel([reply(ANSWER)])
    async with (
        agent_worker(client, Analyst, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        agents = AgentClient(client, task_queue=task_queue)
        handle = await agents.start(Analyst, AgentInput(prompt="How is ACME?", tenant=TENANT))
        await agents.result(handle.id)
        decision = {"approved": True, "arguments_sha256": "0" * 64}
        answer = await running.http.post(
            f"/v1/runs/{handle.id}/approvals/apr-1-x", json=decision, headers=keys.headers("admin")
        )
        with pytest.raises(InvalidDecisionError) as refused:
            await agents.approve(handle.id, "apr-1-x", by="alice")

    expected = (
        f"agent run {handle.id!r} has already ended (completed); there is nothing left to decide"
    )
    assert str(refused.value) == expected
    # The README's promise: a refused decision is a 409, in the client's words.
    assert answer.status_code == 409, answer.text
    assert answer.json()["type"] == "urn:smyth:error:InvalidDecisionError"
    assert answer.json()["detail"] == expected
