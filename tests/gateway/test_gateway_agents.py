"""Agents no worker has: refused at start-up and per request, and no run left waiting."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from temporalio.client import Client

from smyth_temporal import AgentClient, UnknownAgentError
from smyth_temporal.cli import main as cli
from smyth_temporal.gateway import KeyStore, create_app, serve
from smyth_temporal.testing import ScriptedModel, agent_worker, reply
from tests.helpers.agents import Analyst
from tests.helpers.cli_models import trader
from tests.helpers.cli_support import free_port
from tests.helpers.gateway_agents import Defaulted
from tests.helpers.gateway_support import bearer
from tests.helpers.trader import Trader


async def runs_of(client: Client, agent: str, task_queue: str) -> list[str]:
    query = f"WorkflowType = '{agent}' AND TaskQueue = '{task_queue}'"
    return [e.id async for e in client.list_workflows(query)]


async def test_an_agent_no_worker_has_is_a_404_and_no_run_of_it_is_left(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    store = KeyStore(tmp_path / "keys.json")
    headers = bearer(store.create(tenant="acme", role="operator", name="ops")[1])
    agents = AgentClient(client, task_queue=task_queue)
    app = create_app(agents, [Analyst, "Nope"], keys=store)
    model = ScriptedModel([reply("fine")])
    async with (
        agent_worker(client, Analyst, model=model, task_queue=task_queue),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://g") as http,
    ):
        first = await http.post("/v1/agents/Nope/runs", json={"prompt": "hi"}, headers=headers)
        again = await http.post("/v1/agents/Nope/runs", json={"prompt": "hi"}, headers=headers)
        # Refused by every route that would start a run of it, sessions and chat too.
        session = await http.post(
            "/v1/agents/Nope/sessions/s1/messages", json={"text": "hi"}, headers=headers
        )
        chat = await http.post(
            "/openai/v1/chat/completions",
            json={"model": "Nope", "messages": [{"role": "user", "content": "hi"}]},
            headers=headers,
        )
        served = await http.post("/v1/agents/Analyst/runs", json={"prompt": "hi"}, headers=headers)
        assert served.status_code == 201, served.text
        await agents.result(served.json()["workflow_id"])
        nope = await runs_of(client, "Nope", task_queue)

    for refused in (first, again):
        assert refused.status_code == 404, refused.text
        problem = refused.json()
        assert problem["type"] == "urn:smyth:error:UnknownAgentError"
        assert problem["detail"].startswith(
            f"no worker serves agent 'Nope' on task queue '{task_queue}'"
        )
        assert problem["detail"].endswith("the agents served here: Analyst")
    assert session.status_code == chat.status_code == 404, (session.text, chat.text)
    assert "no worker serves agent 'Nope'" in session.json()["detail"]
    assert "no worker serves agent 'Nope'" in chat.json()["error"]["message"]
    # Only the probe that asked the worker, which runs no agent code, was ever started.
    assert len(nope) == 1 and nope[0].startswith("smyth-probe-Nope-"), nope
    status = (await client.get_workflow_handle(nope[0]).describe()).status
    assert status is not None and status.name == "TERMINATED"


async def test_serve_refuses_at_start_up_an_agent_no_worker_has(
    client: Client, task_queue: str
) -> None:
    agents = AgentClient(client, task_queue=task_queue)
    async with agent_worker(client, Analyst, model=ScriptedModel([]), task_queue=task_queue):
        with pytest.raises(UnknownAgentError) as refused:
            await serve(agents, [Analyst, "Nope"], insecure_dev=True, port=free_port())
    assert str(refused.value).startswith(
        f"no worker on task queue {task_queue!r} serves Nope (they do: Analyst)"
    )


@pytest.mark.usefixtures("reset_structlog")
async def test_smyth_serve_of_an_unknown_agent_exits_with_one_error_line(
    client: Client, address: str, task_queue: str, capsys: pytest.CaptureFixture[str]
) -> None:
    command = ["serve", "Nope", "--insecure-dev", "--port", str(free_port())]
    command += ["--address", address, "--task-queue", task_queue]
    async with agent_worker(client, Analyst, model=ScriptedModel([]), task_queue=task_queue):
        code = await asyncio.to_thread(cli.main, command)
    assert code == 1
    assert (
        capsys.readouterr()
        .err.splitlines()[-1]
        .startswith(
            f"smyth: error: no worker on task queue {task_queue!r} serves Nope (they do: none)"
        )
    )


async def test_a_run_the_worker_lacks_the_agent_for_is_terminated_and_a_404(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    store = KeyStore(tmp_path / "keys.json")
    headers = bearer(store.create(tenant="acme", role="operator", name="ops")[1])
    agents = AgentClient(client, task_queue=task_queue)
    app = create_app(agents, [Analyst, Trader], keys=store)
    start = {"prompt": "sell ACME:1"}
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://g"
    ) as http:
        async with agent_worker(client, Analyst, Trader, model=trader(), task_queue=task_queue):
            served = await http.post("/v1/agents/Trader/runs", json=start, headers=headers)
        # Redeployed without Trader: the gateway's earlier answer is out of date.
        async with agent_worker(client, Analyst, model=ScriptedModel([]), task_queue=task_queue):
            lost = await http.post("/v1/agents/Trader/runs", json=start, headers=headers)
            runs = await runs_of(client, "Trader", task_queue)
    assert served.status_code == 201, served.text
    assert lost.status_code == 404, lost.text
    assert lost.json()["detail"].endswith("the agents served here: Analyst")
    others = [i for i in runs if i != served.json()["workflow_id"]]
    [terminated] = [i for i in others if not i.startswith("smyth-probe-")]
    assert f"(run {terminated} was terminated)" in lost.json()["detail"]
    status = (await client.get_workflow_handle(terminated).describe()).status
    assert status is not None and status.name == "TERMINATED"
    await client.get_workflow_handle(served.json()["workflow_id"]).terminate()


async def test_a_probe_runs_no_agent_code_even_when_the_input_has_a_default(
    client: Client, task_queue: str
) -> None:
    agents = AgentClient(client, task_queue=task_queue)
    model = ScriptedModel([reply("checked")])
    async with agent_worker(client, Defaulted, model=model, task_queue=task_queue):
        assert await agents.check_served(Defaulted) is True
        [probe] = await runs_of(client, "Defaulted", task_queue)
        history = await client.get_workflow_handle(probe).fetch_history()
    assert probe.startswith("smyth-probe-Defaulted-")  # as check_served documents it
    assert model.requests == []  # the model was never asked
    assert not any(e.HasField("activity_task_scheduled_event_attributes") for e in history.events)
