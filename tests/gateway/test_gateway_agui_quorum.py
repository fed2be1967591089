"""AG-UI resume with one vote of a quorum: the run ends at the same interrupt, no hang."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.client import Client

from smyth_temporal import AgentClient
from smyth_temporal.gateway import create_app
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from tests.gateway.test_gateway_agui import EVENTS, run_input, text_of
from tests.helpers.gateway_support import FAST, TENANT, Keys, bearer, make_keys, serving, sse
from tests.helpers.policy_agents import CarefulTrader

TIMEOUT = 30


@pytest.fixture
def keys(tmp_path: Path) -> Keys:
    return make_keys(tmp_path / "keys.json")


async def _run(http: httpx.AsyncClient, key: str, body: dict[str, Any]) -> list[Any]:
    headers = {**bearer(key), "Accept": "text/event-stream"}
    async with asyncio.timeout(TIMEOUT):
        async with http.stream("POST", "/ag-ui/CarefulTrader", json=body, headers=headers) as r:
            assert r.status_code == 200, await r.aread()
            return [EVENTS.validate_python(e.json()) async for e in sse(r)]


async def test_a_resume_that_leaves_a_quorum_short_ends_at_the_same_interrupt(
    client: Client, task_queue: str, keys: Keys
) -> None:
    # CarefulTrader's sell needs two approvers: the first vote decides nothing yet.
    model = ScriptedModel([tool_call("sell", symbol="ACME", quantity=1), reply("Sold.")])
    app = create_app(
        AgentClient(client, task_queue=task_queue), [CarefulTrader], keys=keys.store, options=FAST
    )
    _, second = keys.store.create(tenant=TENANT, role="approver", name="acme-approver-2")
    thread = f"agui-quorum-{uuid.uuid4().hex[:8]}"
    async with (
        agent_worker(client, CarefulTrader, model=model, task_queue=task_queue),
        serving(app) as url,
        httpx.AsyncClient(base_url=url) as http,
    ):
        stopped = await _run(http, keys.by_role["operator"], run_input(thread, "Sell 1 ACME."))
        [interrupt] = stopped[-1].outcome.interrupts
        request = interrupt.metadata["smyth"]
        decision = {"approved": True, "arguments_sha256": request["arguments_sha256"]}
        resume = [{"interruptId": interrupt.id, "status": "resolved", "payload": decision}]
        short = await _run(http, keys.by_role["approver"], run_input(thread, None, resume=resume))
        [again] = short[-1].outcome.interrupts
        resume = [{"interruptId": again.id, "status": "resolved", "payload": decision}]
        done = await _run(http, second, run_input(thread, None, resume=resume))

    assert short[-1].outcome.type == "interrupt"
    # The same request, still pending (an interrupt id is ``<request id>@<offset>``).
    assert again.id.rpartition("@")[0] == interrupt.id.rpartition("@")[0]
    assert done[-1].outcome.type == "success" and text_of(done) == "Sold."
    assert len(model.requests) == 2
