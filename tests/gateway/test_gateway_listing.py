"""The gateway's listings stay bounded and within the tenant; what viewers may read."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from structlog.testing import capture_logs
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from smyth_temporal import AgentClient, AgentInput
from smyth_temporal.gateway import ROLES, GatewayOptions, KeyStore, create_app
from smyth_temporal.testing import ScriptedModel, agent_worker, new_task_queue
from smyth_temporal.types.visibility import TENANT_ATTRIBUTE
from tests.helpers.agents import Analyst
from tests.helpers.gateway_agents import NOTES, Notetaker
from tests.helpers.gateway_support import SERVED, bearer, until


@pytest.fixture
def tenants(tmp_path: Path) -> tuple[str, str]:
    """Two tenants of this test alone (other tests share the server)."""
    tag = uuid.uuid4().hex[:8]
    return f"mine_{tag}", f"theirs_{tag}"


@pytest.fixture
def store(tmp_path: Path) -> KeyStore:
    return KeyStore(tmp_path / "keys.json")


@pytest.fixture
async def http(client: Client, store: KeyStore) -> AsyncIterator[httpx.AsyncClient]:
    # Runs start on a queue nobody serves: listings need no worker.
    agents = AgentClient(client, task_queue=new_task_queue("smyth-unserved"))
    app = create_app(agents, SERVED, keys=store, options=GatewayOptions(auth_burst=1000))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as http:
        yield http


def key(store: KeyStore, tenant: str, role: str = "viewer") -> dict[str, str]:
    return bearer(store.create(tenant=tenant, role=role, name=f"{tenant}-{role}")[1])


async def start_runs(agents: AgentClient, tenant: str, count: int) -> list[str]:
    handles = await asyncio.gather(
        *(agents.start(Analyst, AgentInput(prompt="hi", tenant=tenant)) for _ in range(count))
    )
    return [h.id for h in handles]


async def every_page(
    http: httpx.AsyncClient, path: str, field: str, headers: dict[str, str], limit: int
) -> tuple[list[dict[str, Any]], list[int]]:
    """Every item of a paginated listing, and each page's size."""
    items: list[dict[str, Any]] = []
    sizes: list[int] = []
    token: str | None = None
    while True:
        params: dict[str, Any] = {"limit": limit}
        if token is not None:
            params["page_token"] = token
        answer = await http.get(path, params=params, headers=headers)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        items += body[field]
        sizes.append(len(body[field]))
        token = body.get("next_page_token")
        if token is None:
            return items, sizes


async def test_a_run_listing_reads_one_page_and_only_the_tenants_runs(
    client: Client, http: httpx.AsyncClient, store: KeyStore, tenants: tuple[str, str]
) -> None:
    mine, theirs = tenants
    agents = AgentClient(client, task_queue=new_task_queue("smyth-unserved"))
    own = await start_runs(agents, mine, 3)
    # Newer than ours, and many more than one page: a listing that scanned every
    # tenant's runs page by page would find none of ours in its first pages.
    others = await start_runs(agents, theirs, 30)
    headers = key(store, mine)
    try:
        handle = client.get_workflow_handle(own[0])
        described = await handle.describe()
        assert described.typed_search_attributes.get(TENANT_ATTRIBUTE) == mine

        async def all_listed() -> bool:
            answer = await http.get("/v1/runs", params={"limit": 3}, headers=headers)
            return {r["workflow_id"] for r in answer.json()["runs"]} == set(own)

        await until(all_listed, "the tenant's runs listed on the first page")
        listed, sizes = await every_page(http, "/v1/runs", "runs", headers, limit=2)
    finally:
        await asyncio.gather(*(client.get_workflow_handle(i).terminate() for i in own + others))
    assert sorted(r["workflow_id"] for r in listed) == sorted(own)
    assert all(size <= 2 for size in sizes)
    assert not set(others) & {r["workflow_id"] for r in listed}


async def test_a_forged_page_token_or_limit_is_a_clear_400(
    http: httpx.AsyncClient, store: KeyStore, tenants: tuple[str, str]
) -> None:
    headers = key(store, tenants[0])
    for path in ("/v1/runs", "/v1/approvals"):
        for token in ("not base64!", "Zm9yZ2Vk", "A" * 40):
            answer = await http.get(path, params={"page_token": token}, headers=headers)
            assert answer.status_code == 400, (path, token, answer.text)
            assert answer.json()["detail"] == "invalid page_token"
        too_many = await http.get(path, params={"limit": 1000}, headers=headers)
        assert too_many.status_code == 422, too_many.text
        assert "less than or equal to 200" in too_many.json()["detail"]


async def test_the_agents_own_data_is_shown_only_to_roles_that_operate(
    client: Client, task_queue: str, store: KeyStore, tenants: tuple[str, str]
) -> None:
    mine = tenants[0]
    agents = AgentClient(client, task_queue=task_queue)
    app = create_app(agents, [*SERVED, Notetaker], keys=store)
    async with (
        agent_worker(client, Notetaker, model=ScriptedModel([]), task_queue=task_queue),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://g") as http,
    ):
        handle = await agents.start(Notetaker, AgentInput(prompt="note", tenant=mine))
        await agents.result(handle.id)
        seen = {
            role: (await http.get(f"/v1/runs/{handle.id}", headers=key(store, mine, role))).json()
            for role in ROLES
        }
    # Roles that may operate the run see it; viewers and approvers (who decide on
    # the requests they are shown, not on the agent's notes) get it empty.
    for role in ("viewer", "approver"):
        assert seen[role]["data"] == {}, role
        assert seen[role]["output"] == "noted"  # the rest of the state is theirs to read
    for role in ("operator", "admin"):
        assert seen[role]["data"] == {"notes": NOTES}, role


async def test_runs_start_where_the_namespace_has_no_tenant_attribute(
    skipping: WorkflowEnvironment,
) -> None:
    # The time-skipping server cannot register search attributes, as a cluster set up
    # before SmythTenant existed has none: runs start all the same, without it.
    agents = AgentClient(skipping.client, task_queue=new_task_queue("smyth-unserved"))
    with capture_logs() as logs:
        first = await agents.start(Analyst, AgentInput(prompt="hi", tenant="acme"))
        second = await agents.start(Analyst, AgentInput(prompt="hi", tenant="acme"))
    for handle in (first, second):
        described = await handle.describe()
        assert described.typed_search_attributes.get(TENANT_ATTRIBUTE) is None
        await handle.terminate()
    missing = [e for e in logs if e["event"] == "visibility.tenant_attribute_missing"]
    assert len(missing) == 1  # learnt once per client, not refused at every start


async def test_a_value_the_sdks_types_refuse_is_a_422_not_a_500(
    http: httpx.AsyncClient, store: KeyStore, tenants: tuple[str, str]
) -> None:
    # Found by the fuzz test: the route's schema lets any namespace through, the
    # memory scope refuses a control character, and that was an unexpected 500.
    headers = key(store, tenants[0], "admin")
    answer = await http.delete("/v1/memory/m1", params={"namespace": "\x1f"}, headers=headers)
    assert answer.status_code == 422, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    assert "namespace" in answer.json()["detail"] and "Traceback" not in answer.text
