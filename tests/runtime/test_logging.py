"""Workflow logs are structlog events with run fields, and silent during replay."""

from __future__ import annotations

from structlog.testing import capture_logs
from temporalio.client import Client
from temporalio.worker import Replayer

from smyth_temporal import AgentClient, SmythPlugin
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from tests.helpers.agents import Analyst


async def test_events_carry_run_fields_and_replay_is_silent(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    model = ScriptedModel([tool_call("get_quote", symbol="ACME"), reply("done")])
    with capture_logs() as live:
        async with agent_worker(client, Analyst, model=model, task_queue=task_queue):
            handle = await agents.start(Analyst, "go")
            await agents.result(handle.id)

    agent_events = [e for e in live if e["event"].startswith("agent.")]
    assert [e["event"] for e in agent_events] == [
        "agent.started",
        "agent.step",
        "agent.tool_result",
        "agent.step",
        "agent.finished",
    ]
    for event in agent_events:
        assert event["workflow_id"] == handle.id
        assert event["agent"] == "Analyst"
        assert event["run_id"]
    assert agent_events[1]["tool_calls"] == ["get_quote"]
    tool_events = [e for e in live if e["event"] == "tool.completed"]
    assert tool_events[0]["tool"] == "get_quote"
    assert tool_events[0]["workflow_id"] == handle.id

    history = await client.get_workflow_handle(handle.id).fetch_history()
    with capture_logs() as replayed:
        await Replayer(workflows=[Analyst], plugins=[SmythPlugin()]).replay_workflow(history)
    assert [e for e in replayed if e["event"].startswith("agent.")] == []
