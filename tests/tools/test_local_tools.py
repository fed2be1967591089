"""Cheap tools as local activities: same contract as ordinary tools, no task-queue round trip."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.common import RetryPolicy
from temporalio.worker import Replayer

from smyth_temporal import (
    AgentClient,
    AgentConfig,
    AgentInput,
    AgentResult,
    AgentWorkflow,
    SmythPlugin,
    tool,
    tool_context,
)
from smyth_temporal.agent.tooling import idempotency_key
from tests.helpers.agents import read_ledger, record

# This module defines workflows, so the sandbox re-imports it; the crash tests' helpers
# (and the testing package they import, with its HTTP servers) stay outside.
with workflow.unsafe.imports_passed_through():
    from tests.agent.test_crash_recovery import RESULT_TIMEOUT, Spawn, spawn, wait_for_entry
from tests.helpers.worker_process import RecoveryProbe

__all__ = ["spawn"]  # the crash tests' fixture, shared

with workflow.unsafe.imports_passed_through():
    from smyth_temporal.models import ModelRequest, ModelResponse
    from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call


@tool(timeout=timedelta(seconds=5), retry=RetryPolicy(initial_interval=timedelta(milliseconds=10)))
async def price(symbol: str) -> str:
    """A cached price (read-only, quick: local by default).

    Args:
        symbol: The ticker.
    """
    context = tool_context()
    record("price", symbol=symbol, key=context.idempotency_key, attempt=context.attempt)
    if symbol == "FLAKY" and context.attempt == 1:
        raise RuntimeError("cache warming up")
    return f"{symbol} 101.5"


@tool(effect="side_effect", timeout=timedelta(seconds=5))
async def order(symbol: str) -> str:
    """Place an order (a side effect: never local by default).

    Args:
        symbol: The ticker.
    """
    return f"ordered {symbol}"


@tool(local=False, timeout=timedelta(seconds=5))
async def slow_price(symbol: str) -> str:
    """A price from the exchange, kept an ordinary activity on purpose.

    Args:
        symbol: The ticker.
    """
    return f"{symbol} 99.0"


@workflow.defn
class Quoter(AgentWorkflow):
    config = AgentConfig(model="test-model", tools=[price, order, slow_price], max_steps=6)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


def tool_results(request: ModelRequest) -> ModelResponse:
    return reply(" | ".join(m.content or "" for m in request.messages if m.role == "tool"))


def test_the_rule_for_local() -> None:
    assert price.local and not order.local and not slow_price.local
    forced = tool(local=True, effect="idempotent")(order.fn)
    assert forced.local


async def test_a_local_tool_call_is_a_marker_with_the_same_contract(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = ScriptedModel(
        [
            tool_call("price", symbol="FLAKY"),  # fails once, retried locally
            tool_call("price", symbol=12),  # wrong type: the model is told, nothing runs
            tool_call("slow_price", symbol="ACME"),
            tool_results,
        ]
    )
    async with agent_worker(client, Quoter, model=model, task_queue=task_queue):
        handle = await agents.start(Quoter, AgentInput(prompt="Prices?"))
        result = await agents.result(handle.id)
    history = await client.get_workflow_handle(handle.id).fetch_history()

    outputs = result.output.split(" | ")
    assert outputs[0] == "FLAKY 101.5"
    assert "symbol" in outputs[1] and "string" in outputs[1].lower()  # fed back, not run
    assert outputs[2] == "ACME 99.0"
    calls = [e for e in read_ledger(ledger) if e["tool"] == "price"]
    # Two attempts of one call, one idempotency key: the retry of an ordinary tool.
    assert [(c["attempt"], c["symbol"]) for c in calls] == [(1, "FLAKY"), (2, "FLAKY")]
    assert {c["key"] for c in calls} == {
        idempotency_key(handle.id, handle.first_execution_run_id or "", 1, "call_1_0")
    }

    kinds = [e.event_type for e in history.events]
    scheduled = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    assert "smyth.tool.price" not in scheduled  # local: a marker, no task-queue trip
    assert "smyth.tool.slow_price" in scheduled
    assert kinds.count(EventType.EVENT_TYPE_MARKER_RECORDED) >= 1

    # A recorded local call replays without running the tool again.
    replayed = await Replayer(workflows=[Quoter], plugins=[SmythPlugin()]).replay_workflow(history)
    assert replayed.replay_failure is None


async def test_a_crash_mid_call_re_runs_the_local_call_with_its_key(
    agents: AgentClient, ledger: Path, spawn: Spawn
) -> None:
    first = await spawn("crash-local")
    handle = await agents.start(RecoveryProbe, AgentInput(prompt="Look ACME up"))
    await wait_for_entry(ledger, lambda e: e["tool"] == "local_lookup.start")
    first.kill()
    second = await spawn("crash-local")
    result = await asyncio.wait_for(agents.result(handle.id), RESULT_TIMEOUT)

    assert result.output == "101.5 | ACME looked up locally | 42.0"
    starts = [e for e in read_ledger(ledger) if e["tool"] == "local_lookup.start"]
    # The call in flight ran again on the new worker, with the same idempotency key;
    # the quote done before the kill did not.
    assert [e["pid"] for e in starts] == [first.pid, second.pid]
    assert {e["key"] for e in starts} == {
        idempotency_key(handle.id, handle.first_execution_run_id or "", 2, "call_2_0")
    }
    assert [e["pid"] for e in read_ledger(ledger) if e["tool"] == "local_lookup"] == [second.pid]
    quotes = [e for e in read_ledger(ledger) if e["tool"] == "get_quote"]
    assert [(e["symbol"], e["pid"]) for e in quotes] == [
        ("ACME", first.pid),
        ("GLOBEX", second.pid),
    ]
