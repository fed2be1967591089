"""A monitoring agent that runs for 30 simulated days on the time-skipping server."""

from __future__ import annotations

import asyncio
import re
from datetime import timedelta
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from smyth_temporal import AgentClient, AgentInput
from smyth_temporal.memory import EdgeStore, HashEmbedder, MemoryManager
from smyth_temporal.models import ModelRequest, ModelResponse
from smyth_temporal.testing import (
    ScriptedModel,
    agent_worker,
    new_task_queue,
    reply,
    tool_call,
)
from tests.helpers.chains import chain_histories
from tests.helpers.context_agents import APPROVAL_CYCLE, HourlyMonitor, Napper

CYCLES = int(__import__("os").environ.get("SMYTH_TEST_CYCLES", "720"))
MAX_RUN_HISTORY_BYTES = 4 * 1024 * 1024


def monitor_turn(request: ModelRequest) -> ModelResponse:
    """The scripted monitor: check the price, act once, report."""
    last = request.messages[-1]
    if last.role == "user":
        cycle = int(re.findall(r"Cycle (\d+)", last.content or "")[0])
        if cycle == APPROVAL_CYCLE:
            return tool_call("place_order", symbol="ACME", quantity=10)
        return tool_call("check_price", symbol="ACME")
    cycle = max(
        int(m)
        for m in re.findall(r"Cycle (\d+)", " ".join(x.content or "" for x in request.messages))
    )
    return reply(f"Cycle {cycle} report: {(last.content or '')[:40]}")


async def test_a_monitor_runs_for_thirty_simulated_days(
    skipping: WorkflowEnvironment, tmp_path: Path
) -> None:
    queue = new_task_queue()
    agents = AgentClient(skipping.client, task_queue=queue)
    model = ScriptedModel([monitor_turn] * (CYCLES * 2 + 10))
    memory = MemoryManager(EdgeStore(tmp_path / "memory"), HashEmbedder(64))
    async with agent_worker(
        skipping.client, HourlyMonitor, model=model, task_queue=queue, memory=memory
    ):
        started = await skipping.get_current_time()
        handle = await agents.start(
            HourlyMonitor,
            AgentInput(prompt="Watch ACME.", tenant="fund", metadata={"cycles": CYCLES}),
        )
        # Run to the order in cycle 100, then leave the request waiting two days.
        await skipping.sleep(timedelta(hours=APPROVAL_CYCLE, minutes=30))
        for _ in range(600):
            state = await agents.state(handle.id)
            if state.pending_approvals:
                break
            await asyncio.sleep(0.05)
        [request] = state.pending_approvals
        await skipping.sleep(timedelta(days=2))
        assert (await agents.state(handle.id)).status == "awaiting_approval"
        await agents.approve(handle.id, request.id, by="pm", comment="after the weekend")
        # The start handle lets the time-skipping server skip while it waits.
        result = await handle.result()
        final = await agents.state(handle.id)
        ended = await skipping.get_current_time()
        daily = await agents.memory.list_memories(
            tenant="fund", namespace="monitor", kinds=["daily"], limit=100
        )
        transcripts = await agents.memory.list_memories(
            tenant="fund", namespace="monitor", kinds=["transcript"], limit=10_000
        )
    await memory.close()

    assert result.status == "completed"
    assert result.output.startswith(f"{CYCLES} cycles; last: Cycle {CYCLES} report")
    assert ended - started >= timedelta(hours=CYCLES, days=2)  # 720 cycles: 32 days
    assert final.data["cycle"] == CYCLES
    # The order waited two simulated days for its approval, then ran once.
    [decided] = [r for r in final.approvals if r.tool == "place_order"]
    assert decided.status == "approved" and decided.decided_at is not None
    assert decided.decided_at - decided.requested_at >= timedelta(days=2)
    orders = [m for r in model.requests for m in r.messages if m.name == "place_order"]
    assert orders and all(m.content == "ordered 10 ACME" for m in orders)
    # Memory grew: a note a day, and the compacted turns archived as transcripts.
    assert len(daily) == CYCLES // 24
    assert len(transcripts) > 100
    assert final.compactions and final.compactions[-1].first_step == 1
    # Several runs, none with a history over a few MB.
    histories = await chain_histories(skipping.client, handle.id)
    sizes = [sum(event.ByteSize() for event in h.events) for h in histories]
    print(f"runs={len(sizes)} history bytes per run={sizes}")
    assert len(sizes) >= 5
    assert max(sizes) < MAX_RUN_HISTORY_BYTES
    assert final.generation == len(sizes)


async def test_a_sleeping_agent_needs_no_worker_and_no_cache(
    skipping: WorkflowEnvironment,
) -> None:
    queue = new_task_queue()
    agents = AgentClient(skipping.client, task_queue=queue)
    model = ScriptedModel(
        [
            step
            for day in range(1, 4)
            for step in (tool_call("daily_report", day=day), reply(f"day {day} ok"))
        ]
    )
    # Workers that cache nothing: every wake-up replays the (short) history. (Caching
    # would also leave the run on the first worker's sticky queue, which this test
    # server never times out, so a stopped worker would keep it.)
    async with agent_worker(
        skipping.client, Napper, model=model, task_queue=queue, max_cached_workflows=0
    ):
        handle = await agents.start(Napper, AgentInput(prompt="Check daily.", metadata={"days": 3}))
        for _ in range(100):
            if (await agents.state(handle.id)).status == "sleeping":
                break
            await asyncio.sleep(0.05)
    # No worker at all while it sleeps: the agent is nothing but its history.
    await skipping.sleep(timedelta(hours=6))
    async with agent_worker(
        skipping.client, Napper, model=model, task_queue=queue, max_cached_workflows=0
    ):
        result = await handle.result()
        state = await agents.state(handle.id)
    assert result.output == "checked 3 days"
    assert state.generation == 4
    # The last turn saw the earlier days' answers, carried over three switches.
    said = [m.content for m in model.requests[-1].messages if m.role == "assistant" and m.content]
    assert said == ["day 1 ok", "day 2 ok"]
