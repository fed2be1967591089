"""Fork over HTTP (``POST /v1/runs/{id}/fork``) and a run's lineage in ``GET /v1/runs/{id}``."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from temporalio.client import Client, WorkflowHandle

from smyth_temporal import AgentClient, AgentInput
from smyth_temporal.gateway import GatewayOptions, create_app
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from tests.helpers.agents import Analyst
from tests.helpers.console_agents import Reporter
from tests.helpers.gateway_support import OTHER, SERVED, TENANT, Keys, bearer, make_keys

SCRIPT = [
    tool_call("get_quote", symbol="ACME"),
    tool_call("get_quote", symbol="GLOBEX"),
    reply("Both are up."),
]


async def _started(client: Client, workflow_id: str) -> bool:
    try:
        await client.get_workflow_handle(workflow_id).describe()
    except Exception:
        return False
    return True


@dataclass(frozen=True)
class _Served:
    http: httpx.AsyncClient
    keys: Keys
    model: ScriptedModel
    run: WorkflowHandle[Any, Any]


@contextlib.asynccontextmanager
async def _answered_over_http(
    client: Client, agents: AgentClient, task_queue: str, tmp_path: Path
) -> AsyncIterator[_Served]:
    """A keyed gateway, a worker for ``Analyst`` and a run of it that answered ``SCRIPT``."""
    keys: Keys = make_keys(tmp_path / "keys.json")
    app = create_app(
        AgentClient(client, task_queue=task_queue),
        SERVED,
        keys=keys.store,
        options=GatewayOptions(auth_burst=1000, worker_timeout=15.0),
    )
    model = ScriptedModel(SCRIPT)
    async with (
        agent_worker(client, Analyst, model=model, task_queue=task_queue),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gw") as http,
    ):
        run = await agents.start(Analyst, AgentInput(prompt="ACME and GLOBEX?", tenant=TENANT))
        await agents.result(run.id)
        yield _Served(http, keys, model, run)


async def test_an_operator_forks_over_http_and_viewers_other_tenants_and_bad_steps_start_nothing(
    client: Client, agents: AgentClient, task_queue: str, tmp_path: Path
) -> None:
    async with _answered_over_http(client, agents, task_queue, tmp_path) as served:
        http, keys, model, parent = served.http, served.keys, served.model, served.run
        fork_path = f"/v1/runs/{parent.id}/fork"
        refused = {
            "viewer": await http.post(
                fork_path, json={"at_step": 1, "id": "by-viewer"}, headers=keys.headers("viewer")
            ),
            "other tenant": await http.post(
                fork_path, json={"at_step": 1, "id": "by-other"}, headers=bearer(keys.other)
            ),
            "beyond": await http.post(
                fork_path, json={"at_step": 4, "id": "beyond"}, headers=keys.headers("operator")
            ),
            "negative": await http.post(
                fork_path, json={"at_step": -1, "id": "negative"}, headers=keys.headers("operator")
            ),
            "empty prompt": await http.post(
                fork_path,
                json={"at_step": 1, "prompt": "", "id": "empty"},
                headers=keys.headers("operator"),
            ),
        }
        # A run of an agent this gateway does not serve: its fork would wait for ever.
        unserved = await agents.start(Reporter, AgentInput(prompt="Report", tenant=TENANT))
        refused["unserved agent"] = await http.post(
            f"/v1/runs/{unserved.id}/fork",
            json={"at_step": 0, "id": "unserved"},
            headers=keys.headers("operator"),
        )
        await unserved.terminate()
        fork_id = f"{parent.id}-http"
        created = await http.post(
            fork_path,
            json={"at_step": 1, "prompt": "Only GLOBEX now.", "id": fork_id},
            headers=keys.headers("operator"),
        )
        again = await http.post(
            fork_path, json={"at_step": 2, "id": fork_id}, headers=keys.headers("admin")
        )
        fork_result = await agents.result(fork_id)
        parent_state = await http.get(f"/v1/runs/{parent.id}", headers=keys.headers("viewer"))
        fork_state = await http.get(f"/v1/runs/{fork_id}", headers=keys.headers("viewer"))
        hidden = await http.get(f"/v1/runs/{parent.id}", headers=bearer(keys.other))

    statuses = {name: answer.status_code for name, answer in refused.items()}
    assert statuses == {
        "viewer": 403,
        "other tenant": 404,
        "beyond": 409,
        "negative": 422,
        "empty prompt": 422,
        "unserved agent": 404,
    }
    assert "unknown agent 'Reporter'" in refused["unserved agent"].json()["detail"]
    assert "has taken 3 steps" in refused["beyond"].json()["detail"]
    assert "role viewer" in refused["viewer"].json()["detail"]
    for name in ("by-viewer", "by-other", "beyond", "negative", "empty", "unserved"):
        assert not await _started(client, name), name

    assert created.status_code == 201, created.text
    assert created.headers["location"] == f"/v1/runs/{fork_id}"
    assert created.json() == {
        "workflow_id": fork_id,
        "run_id": created.json()["run_id"],
        "agent": "Analyst",
        "tenant": TENANT,
    }
    assert again.status_code == 409 and "exists already" in again.json()["detail"]
    # The fork's turns: steps 2 and 3 only, after the new prompt.
    assert [r.step for r in model.requests] == [1, 2, 3, 2, 3]
    assert fork_result.output == "Both are up."

    [fork] = parent_state.json()["forks"]
    assert (fork["workflow_id"], fork["step"], fork["status"]) == (fork_id, 1, "completed")
    assert fork_state.json()["fork_of"]["workflow_id"] == parent.id
    assert fork_state.json()["forks"] == [] and fork_state.json()["rewinds"] == []
    assert hidden.status_code == 404 and OTHER not in hidden.text


async def test_an_operator_rewinds_over_http_and_viewers_other_tenants_and_bad_steps_reset_nothing(
    client: Client, agents: AgentClient, task_queue: str, tmp_path: Path
) -> None:
    async with _answered_over_http(client, agents, task_queue, tmp_path) as served:
        http, keys, run = served.http, served.keys, served.run
        first_run = (await run.describe()).run_id
        path = f"/v1/runs/{run.id}/rewind"
        refused = {
            "viewer": await http.post(path, json={"to_step": 1}, headers=keys.headers("viewer")),
            "other tenant": await http.post(path, json={"to_step": 1}, headers=bearer(keys.other)),
            "beyond": await http.post(path, json={"to_step": 7}, headers=keys.headers("operator")),
            "negative": await http.post(
                path, json={"to_step": -1}, headers=keys.headers("operator")
            ),
        }
        untouched = (await run.describe()).run_id
        done = await http.post(
            path, json={"to_step": 1, "prompt": "Once more."}, headers=keys.headers("operator")
        )
        await agents.result(run.id)
        state = await http.get(f"/v1/runs/{run.id}", headers=keys.headers("viewer"))

    statuses = {name: answer.status_code for name, answer in refused.items()}
    assert statuses == {"viewer": 403, "other tenant": 404, "beyond": 409, "negative": 422}
    assert untouched == first_run  # nothing was reset
    assert done.status_code == 200, done.text
    body = done.json()
    assert (body["workflow_id"], body["abandoned_run_id"], body["to_step"]) == (
        run.id,
        first_run,
        1,
    )
    assert body["run_id"] != first_run
    [rewind] = state.json()["rewinds"]
    assert (rewind["to_step"], rewind["by"], rewind["run_id"]) == (
        1,
        f"{TENANT}-operator",
        body["run_id"],
    )
