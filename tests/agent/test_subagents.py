"""Sub-agents: tool intersection, budgets, usage, approvals, restarts and cancellation."""

from __future__ import annotations

import asyncio

from temporalio.client import Client, WorkflowExecutionStatus

from smyth_temporal import AgentClient, AgentInput, tool
from smyth_temporal.agent.delegation import _qualified
from smyth_temporal.agent.tooling import limited
from smyth_temporal.models import ModelRequest, ModelResponse
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from smyth_temporal.tools import MCPTool
from smyth_temporal.types import AgentLimits
from tests.helpers.subagent_agents import Helper, Lead, Manager


def last_tool(request: ModelRequest) -> ModelResponse:
    return reply([m.content for m in request.messages if m.role == "tool"][-1] or "")


def models(helper: ScriptedModel, lead: ScriptedModel) -> dict[str, ScriptedModel]:
    return {"helper-model": helper, "lead-model": lead}


async def test_the_model_delegates_and_the_child_gets_only_shared_tools(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    helper = ScriptedModel(
        [tool_call("check_price", symbol="ACME"), tool_call("daily_report", day=2), last_tool]
    )
    lead = ScriptedModel([tool_call("delegate", agent="Helper", task="Read day 2."), last_tool])
    async with agent_worker(
        client, Lead, Helper, model=models(helper, lead), task_queue=task_queue
    ):
        handle = await agents.start(Lead, AgentInput(prompt="Get day 2.", tenant="t9"))
        result = await agents.result(handle.id)
        child = await agents.state(f"{handle.id}/Helper-1")

    # The child was offered only what both have, and its own extra tool was refused.
    offered = {t["function"]["name"] for t in helper.requests[0].tools}
    assert offered == {"daily_report", "place_order"}
    refused = helper.requests[1].messages[-1].content or ""
    assert "unknown tool 'check_price'" in refused
    assert child.tenant == "t9" and child.status == "completed"
    # The lead's answer is the child's, and usage adds up: 2 lead turns + 3 child turns.
    assert "Report for day 2" in result.output
    assert result.usage.requests == 5
    assert result.usage.tool_calls == 1 + 1  # delegate, and the child's one allowed call
    assert "delegate" in {t["function"]["name"] for t in lead.requests[0].tools}


async def test_code_delegation_passes_a_step_budget(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    helper = ScriptedModel([tool_call("daily_report", day=d) for d in range(1, 9)])
    async with agent_worker(
        client, Manager, Helper, model=models(helper, ScriptedModel([])), task_queue=task_queue
    ):
        result = await agents.run(Manager, "Read every day.")
    assert result.output.startswith("max_steps: ")
    assert len(helper.requests) == 2
    assert {t["function"]["name"] for t in helper.requests[0].tools} == {"daily_report"}


async def wait_for_pending(agents: AgentClient, workflow_id: str) -> str:
    for _ in range(200):
        pending = [p for p in await agents.pending_approvals() if p.workflow_id == workflow_id]
        if pending:
            return pending[0].request.id
        await asyncio.sleep(0.05)
    raise AssertionError(f"{workflow_id} never asked for approval")


async def test_a_child_waits_for_approval_across_a_worker_restart(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    helper = ScriptedModel([tool_call("place_order", symbol="ACME", quantity=1), last_tool])
    lead = ScriptedModel([tool_call("delegate", agent="Helper", task="Buy 1 ACME."), last_tool])
    workers = models(helper, lead)
    async with agent_worker(client, Lead, Helper, model=workers, task_queue=task_queue):
        handle = await agents.start(Lead, "Buy one share.")
        child_id = f"{handle.id}/Helper-1"
        # The child's request is listed like any agent's.
        request_id = await wait_for_pending(agents, child_id)
    # A new worker picks both runs up; the child resumes where it waited.
    async with agent_worker(client, Lead, Helper, model=workers, task_queue=task_queue):
        await agents.approve(child_id, request_id, by="ops")
        result = await agents.result(handle.id)
    assert result.output == "[completed, 2 steps] ordered 1 ACME"


async def test_cancelling_the_parent_cancels_the_child(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    helper = ScriptedModel([tool_call("place_order", symbol="ACME", quantity=1), last_tool])
    lead = ScriptedModel([tool_call("delegate", agent="Helper", task="Buy 1 ACME."), last_tool])
    async with agent_worker(
        client, Lead, Helper, model=models(helper, lead), task_queue=task_queue
    ):
        handle = await agents.start(Lead, "Buy one share.")
        child_id = f"{handle.id}/Helper-1"
        await wait_for_pending(agents, child_id)
        await handle.cancel()
        for _ in range(100):
            child = await client.get_workflow_handle(child_id).describe()
            if child.status != WorkflowExecutionStatus.RUNNING:
                break
            await asyncio.sleep(0.05)
    assert child.status == WorkflowExecutionStatus.CANCELED


@tool
async def status(x: int) -> str:
    """A local tool that takes a name a server uses too."""
    return str(x)


def test_sub_agents_get_the_mcp_tools_both_have() -> None:
    mine = MCPTool.listed(name="log", description="", server="git", mcp_name="log")
    theirs = MCPTool.listed(name="git__log", description="", server="git", mcp_name="log")
    other = MCPTool.listed(name="log", description="", server="hg", mcp_name="log")
    # A parent names its tool as it offers it; the child's limits hold the qualified name.
    assert _qualified("log", [mine, status]) == "git.log"
    assert _qualified(status, [mine]) == "status"
    child = AgentInput(prompt="x", limits=AgentLimits(tools=["git.log", "status"]))
    assert limited([theirs, other, status], child) == [theirs, status]
