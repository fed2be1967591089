"""Approval policies through the gateway: a 2-of-3 quorum decided by three approver keys,
refusals for a viewer and for the run's own starter, and bulk decisions (each answered
on its own; one arriving after its request was settled refused without a trace)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from smyth_temporal import AgentClient
from smyth_temporal.gateway import create_app
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from tests.helpers.agents import read_ledger
from tests.helpers.gateway_support import (
    FAST,
    TENANT,
    Keys,
    bearer,
    history_length,
    make_keys,
    serving,
    until,
)
from tests.helpers.policy_agents import Treasurer


@pytest.fixture
def keys(tmp_path: Path) -> Keys:
    return make_keys(tmp_path / "keys.toml")


@contextlib.asynccontextmanager
async def treasury(client: Client, task_queue: str, keys: Keys) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(
        AgentClient(client, task_queue=task_queue), [Treasurer], keys=keys.store, options=FAST
    )
    async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
        yield http


async def start(http: httpx.AsyncClient, headers: dict[str, str], prompt: str) -> str:
    started = await http.post("/v1/agents/Treasurer/runs", json={"prompt": prompt}, headers=headers)
    assert started.status_code == 201, started.text
    workflow_id: str = started.json()["workflow_id"]
    return workflow_id


async def pending_request(
    http: httpx.AsyncClient, headers: dict[str, str], workflow_id: str
) -> dict[str, Any]:
    found: list[dict[str, Any]] = []

    async def listed() -> bool:
        answer = await http.get(f"/v1/runs/{workflow_id}", headers=headers)
        found[:] = [a for a in answer.json()["approvals"] if a["status"] == "pending"]
        return bool(found)

    await until(listed, "the approval request")
    return found[0]


def paid(ledger: Path) -> list[int]:
    return [e["amount"] for e in read_ledger(ledger) if e["tool"] == "pay"]


async def test_two_of_three_approver_keys_run_a_payment_the_starter_and_a_viewer_may_not(
    client: Client, task_queue: str, keys: Keys, ledger: Path
) -> None:
    approvers = [keys.headers("approver")] + [
        bearer(keys.store.create(tenant=TENANT, role="approver", name=f"{TENANT}-approver-{n}")[1])
        for n in (2, 3)
    ]
    starter = keys.headers("admin")  # may operate and approve, but started this run
    model = ScriptedModel([tool_call("pay", amount=25_000, to="acme"), reply("paid")])
    async with (
        agent_worker(client, Treasurer, model=model, task_queue=task_queue),
        treasury(client, task_queue, keys) as http,
    ):
        workflow_id = await start(http, starter, "Pay acme")
        request = await pending_request(http, keys.headers("viewer"), workflow_id)
        decide = f"/v1/runs/{workflow_id}/approvals/{request['id']}"
        approve = {"approved": True, "arguments_sha256": request["arguments_sha256"]}

        first = await http.post(decide, json=approve, headers=approvers[0])
        assert first.status_code == 200, first.text
        assert first.json()["request"]["status"] == "pending"
        assert [v["by"] for v in first.json()["request"]["votes"]] == [f"{TENANT}-approver"]
        assert [v["role"] for v in first.json()["request"]["votes"]] == ["approver"]

        before = await history_length(client, workflow_id)
        again = await http.post(decide, json=approve, headers=approvers[0])
        viewer = await http.post(decide, json=approve, headers=keys.headers("viewer"))
        own = await http.post(decide, json=approve, headers=starter)
        assert (again.status_code, viewer.status_code, own.status_code) == (409, 403, 409)
        assert "already approved it; each approver counts once (1 of 2)" in again.json()["detail"]
        assert "started the run and may not decide its own request" in own.json()["detail"]
        # Refused decisions leave no trace in the run's history, and nothing ran.
        assert await history_length(client, workflow_id) == before
        assert paid(ledger) == []

        second = await http.post(decide, json=approve, headers=approvers[1])
        assert second.status_code == 200, second.text
        assert second.json()["request"]["status"] == "approved"
        late = await http.post(decide, json=approve, headers=approvers[2])
        # Settled by its quorum (or the run has ended since): refused, nothing changed.
        assert late.status_code == 409 and "already" in late.json()["detail"]
        result = await http.get(f"/v1/runs/{workflow_id}/result", headers=starter)

    assert result.json()["output"] == "paid"
    assert paid(ledger) == [25_000]


async def test_a_bulk_decision_approves_two_requests_and_refuses_a_settled_one(
    client: Client, task_queue: str, keys: Keys, ledger: Path
) -> None:
    model = ScriptedModel([tool_call("pay", amount=20_000, to="acme"), reply("paid")])
    approver = keys.headers("approver")
    second = bearer(keys.store.create(tenant=TENANT, role="approver", name="acme-approver-2")[1])
    async with (
        agent_worker(client, Treasurer, model=model, task_queue=task_queue),
        treasury(client, task_queue, keys) as http,
    ):
        runs = [await start(http, keys.headers("operator"), f"Pay {n}") for n in range(2)]
        requests = [await pending_request(http, approver, run) for run in runs]
        decisions = [
            {
                "workflow_id": run,
                "request_id": request["id"],
                "approved": True,
                "arguments_sha256": request["arguments_sha256"],
            }
            for run, request in zip(runs, requests, strict=True)
        ]
        first = await http.post(
            "/v1/approvals/decisions", json={"decisions": decisions}, headers=approver
        )
        assert first.status_code == 200, first.text
        assert [r["status"] for r in first.json()["results"]] == [200, 200]
        assert [r["outcome"]["request"]["status"] for r in first.json()["results"]] == [
            "pending",
            "pending",
        ]
        both = await http.post(
            "/v1/approvals/decisions", json={"decisions": decisions}, headers=second
        )
        assert [r["outcome"]["request"]["status"] for r in both.json()["results"]] == [
            "approved",
            "approved",
        ]
        # Decided by its quorum meanwhile: refused, said why, and nothing written.
        late = await http.post(
            "/v1/approvals/decisions", json={"decisions": decisions[:1]}, headers=approver
        )
        [refused] = late.json()["results"]
        assert refused["status"] == 409 and refused["outcome"] is None
        assert "already" in refused["problem"]["detail"]  # approved, or the run ended
        for run in runs:
            await http.get(f"/v1/runs/{run}/result", headers=approver)
        history = await client.get_workflow_handle(runs[0]).fetch_history()

    accepted = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
    assert [e.event_type for e in history.events].count(accepted) == 2
    assert paid(ledger) == [20_000, 20_000]


async def test_a_bulk_decision_must_pin_each_approval_to_its_arguments(
    client: Client, task_queue: str, keys: Keys
) -> None:
    async with treasury(client, task_queue, keys) as http:
        unpinned = {"workflow_id": "w", "request_id": "r", "approved": True}
        answer = await http.post(
            "/v1/approvals/decisions",
            json={"decisions": [unpinned]},
            headers=keys.headers("approver"),
        )
        viewer = await http.post(
            "/v1/approvals/decisions",
            json={"decisions": [{**unpinned, "approved": False}]},
            headers=keys.headers("viewer"),
        )
    assert answer.status_code == 422 and "arguments_sha256" in answer.text
    assert viewer.status_code == 403


async def test_a_decision_after_its_request_expired_is_refused_saying_so(
    client: Client, task_queue: str, keys: Keys, ledger: Path
) -> None:
    # One turn, two gated calls: hotfix expires after 4 s while deploy still waits,
    # so the run is alive when the late decision arrives.
    turn = [tool_call("hotfix", service="db"), tool_call("deploy", service="api")]
    model = ScriptedModel([turn, reply("done")])
    approver = keys.headers("approver")
    async with (
        agent_worker(client, Treasurer, model=model, task_queue=task_queue),
        treasury(client, task_queue, keys) as http,
    ):
        workflow_id = await start(http, keys.headers("operator"), "Patch and deploy")
        hotfix = await pending_request(http, approver, workflow_id)
        assert hotfix["tool"] == "hotfix"
        deploy: dict[str, Any] = {}

        async def expired() -> bool:
            state = (await http.get(f"/v1/runs/{workflow_id}", headers=approver)).json()
            waiting = [a for a in state["approvals"] if a["status"] == "pending"]
            deploy.update(waiting[0] if waiting and waiting[0]["tool"] == "deploy" else {})
            return bool(deploy)

        await until(expired, "the hotfix request expired", timeout=30)
        before = await history_length(client, workflow_id)
        late = await http.post(
            "/v1/approvals/decisions",
            json={
                "decisions": [
                    {
                        "workflow_id": workflow_id,
                        "request_id": hotfix["id"],
                        "approved": True,
                        "arguments_sha256": hotfix["arguments_sha256"],
                    }
                ]
            },
            headers=approver,
        )
        [refused] = late.json()["results"]
        assert refused["status"] == 409
        assert refused["problem"]["detail"] == (
            f"request {hotfix['id']} is already expired (by system:timeout)"
        )
        assert await history_length(client, workflow_id) == before
        rejected = await http.post(
            f"/v1/runs/{workflow_id}/approvals/{deploy['id']}",
            json={"approved": False, "comment": "not today"},
            headers=approver,
        )
        assert rejected.status_code == 200
        await http.get(f"/v1/runs/{workflow_id}/result", headers=approver)
    assert [e for e in read_ledger(ledger) if e["tool"] in ("hotfix", "deploy")] == []
