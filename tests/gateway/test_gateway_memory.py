"""Memory and schedules through the gateway: each key sees its own tenant's only."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.client import Client

from smyth_temporal import AgentClient
from smyth_temporal.memory import EdgeStore, HashEmbedder, MemoryManager
from smyth_temporal.models import ModelRequest, ModelResponse
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from tests.helpers.gateway_support import TENANT, Keys, bearer, gateway, make_keys
from tests.helpers.memory_agents import Researcher

FACT = "ACME reports earnings on May 3"


@pytest.fixture
def keys(tmp_path: Path) -> Keys:
    return make_keys(tmp_path / "keys.json")


def remember_the_prompt(request: ModelRequest) -> ModelResponse:
    prompt = next(m.content for m in request.messages if m.role == "user")
    return tool_call("remember", text=prompt or "", kind="fact")


async def test_memory_is_searched_listed_and_forgotten_within_the_tenant(
    client: Client, task_queue: str, keys: Keys, tmp_path: Path
) -> None:
    model = ScriptedModel([remember_the_prompt, reply("Noted.")])
    memory = MemoryManager(EdgeStore(tmp_path / "memory"), HashEmbedder(64))
    async with (
        agent_worker(client, Researcher, model=model, task_queue=task_queue, memory=memory),
        gateway(client, task_queue, keys) as running,
    ):
        http, viewer, intruder = running.http, keys.headers("viewer"), bearer(keys.other)
        started = await http.post(
            "/v1/agents/Researcher/runs", json={"prompt": FACT}, headers=keys.headers("operator")
        )
        await http.get(f"/v1/runs/{started.json()['workflow_id']}/result", headers=viewer)

        listed = await http.get(
            "/v1/memory", params={"namespace": "research", "kind": "fact"}, headers=viewer
        )
        everything = await http.get("/v1/memory", headers=viewer)  # every namespace
        found = await http.get("/v1/memory/search", params={"q": "ACME earnings"}, headers=viewer)
        theirs_listed = await http.get("/v1/memory", headers=intruder)
        theirs_found = await http.get(
            "/v1/memory/search", params={"q": "ACME earnings"}, headers=intruder
        )
        [fact] = listed.json()["memories"]
        url = f"/v1/memory/{fact['id']}"
        theirs_forget = await http.delete(url, params={"namespace": "research"}, headers=intruder)
        forgotten = await http.delete(
            url, params={"namespace": "research"}, headers=keys.headers("admin")
        )
        again = await http.delete(
            url, params={"namespace": "research"}, headers=keys.headers("admin")
        )
    await memory.close()

    assert (fact["text"], fact["scope"]["tenant"]) == (FACT, TENANT)
    assert {m["kind"] for m in everything.json()["memories"]} == {"fact", "episode"}
    assert found.json()["hits"][0]["record"]["id"] == fact["id"]
    assert theirs_listed.json() == {"memories": []}
    assert theirs_found.json() == {"hits": []}
    assert theirs_forget.status_code == 404
    assert theirs_forget.json()["type"] == "urn:smyth:error:MemoryNotFoundError"
    assert (forgotten.status_code, forgotten.json()) == (200, {"count": 1})
    assert again.status_code == 404


async def test_schedules_are_listed_for_the_tenant_only(
    client: Client, agents: AgentClient, task_queue: str, keys: Keys
) -> None:
    ours = await agents.schedules.create(
        Researcher, every=timedelta(hours=1), prompt="Summarize.", tenant=TENANT, paused=True
    )
    theirs = await agents.schedules.create(
        Researcher, every=timedelta(hours=1), prompt="Summarize.", tenant="globex", paused=True
    )
    try:
        async with gateway(client, task_queue, keys) as running:
            listed = await running.http.get("/v1/schedules", headers=keys.headers("viewer"))
    finally:
        for schedule in (ours, theirs):
            await agents.schedules.delete(schedule)
    ids = [s["id"] for s in listed.json()["schedules"]]
    assert ours in ids and theirs not in ids
    assert all(s["tenant"] == TENANT for s in listed.json()["schedules"])
