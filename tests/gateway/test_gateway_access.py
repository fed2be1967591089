"""What the gateway's access check costs: DescribeWorkflowExecution calls per approval.

Every route acts through ``AgentClient.acting_for(caller)``; a decision is an update
pinned to the chain of runs the check found, so a chain remembered from an earlier
check needs no describe at all (the server refuses the pinned update if the workflow
id names another chain by then).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.workflowservice.v1 import DescribeWorkflowExecutionRequest
from temporalio.client import Client

from smyth_temporal import AgentClient, AgentInput
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from tests.helpers.gateway_support import gateway, make_keys, until
from tests.helpers.trader import Trader


@pytest.fixture
def describes(client: Client, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The workflow ids of every DescribeWorkflowExecution this process sends."""
    service = client.workflow_service
    original = service.describe_workflow_execution
    seen: list[str] = []

    async def counting(request: DescribeWorkflowExecutionRequest, **kwargs: Any) -> Any:
        seen.append(request.execution.workflow_id)
        return await original(request, **kwargs)

    monkeypatch.setattr(service, "describe_workflow_execution", counting)
    yield seen


async def test_a_gateway_approval_costs_one_describe_and_none_when_remembered(
    client: Client, task_queue: str, tmp_path: Path, describes: list[str]
) -> None:
    # Before the one access check: 1 and 1 (the gateway's own check, then the client's
    # unchecked decide); a client with a key paid 2 and 2.
    keys = make_keys(tmp_path / "keys.json")
    model = ScriptedModel(
        [
            tool_call("sell", symbol="ACME", quantity=10),
            tool_call("sell", symbol="ACME", quantity=5),
            reply("sold twice"),
        ]
    )
    trusted = AgentClient(client, task_queue=task_queue)
    async with (
        agent_worker(client, Trader, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        # Started elsewhere: a run the gateway started itself is remembered at once.
        started = await trusted.start(Trader, AgentInput(prompt="Sell", tenant="acme"))
        workflow_id = started.id
        costs = []
        for _ in range(2):
            pending: list[Any] = []

            async def listed(found: list[Any] = pending) -> bool:
                runs = await trusted.pending_approvals(tenant="acme")
                found[:] = [p.request for p in runs if p.workflow_id == workflow_id]
                return bool(found)

            await until(listed, "a pending request")
            describes.clear()
            decided = await running.http.post(
                f"/v1/runs/{workflow_id}/approvals/{pending[0].id}",
                json={"approved": True, "arguments_sha256": pending[0].arguments_sha256},
                headers=keys.headers("approver"),
            )
            assert decided.status_code == 200, decided.text
            costs.append(describes.count(workflow_id))
        result = await trusted.result(workflow_id)
    assert costs == [1, 0]
    assert result.output == "sold twice"
