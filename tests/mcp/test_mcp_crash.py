"""A worker SIGKILLed in the middle of an MCP tool call, and the one that takes over.

The worker (``tests.helpers.worker_process``, script ``crash-mcp``) runs the stdio ledger
server (``tests.helpers.mcp_ledger_server``) as its child; the server writes every call, with
the idempotency key it found in ``_meta`` and its worker's pid, to the test's ledger.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from temporalio.client import Client

from smyth_temporal import AgentClient
from smyth_temporal.agent.tooling import idempotency_key
from tests.agent.test_crash_recovery import RESULT_TIMEOUT, Spawn, entries, spawn, wait_for_entry
from tests.helpers.agents import read_ledger
from tests.helpers.mcp_agents import Scribe

__all__ = ["spawn"]  # the fixture, shared with the crash-recovery tests


async def test_only_the_call_in_flight_runs_again_with_its_key(
    client: Client, agents: AgentClient, ledger: Path, spawn: Spawn
) -> None:
    first = await spawn("crash-mcp")
    handle = await agents.start(Scribe, "Write three lines.")
    key = idempotency_key(handle.id, handle.first_execution_run_id or "", 2, "call_2_0")

    await wait_for_entry(ledger, lambda e: e["tool"] == "slow_write.start")
    state = await agents.state(handle.id)
    assert [c.name for c in state.pending_tool_calls] == ["slow_write"]  # shown like any tool

    first.kill()
    second = await spawn("crash-mcp")
    result = await asyncio.wait_for(agents.result(handle.id), RESULT_TIMEOUT)
    assert result.output == "wrote before | wrote in flight | wrote after"

    # Done before the kill: once, on the first worker's server.
    [before] = entries(ledger, "write", text="before")
    assert before["worker_pid"] == first.pid
    # In flight: again on the new worker's server, with the same key in _meta.
    starts = entries(ledger, "slow_write.start")
    assert [(e["worker_pid"], e["key"]) for e in starts] == [(first.pid, key), (second.pid, key)]
    finished = [e for e in entries(ledger, "slow_write") if e["worker_pid"] == second.pid]
    assert [e["key"] for e in finished] == [key]
    # After: once, on the new worker, with the next step's key.
    [after] = entries(ledger, "write", text="after")
    assert (after["worker_pid"], after["key"]) == (
        second.pid,
        idempotency_key(handle.id, handle.first_execution_run_id or "", 3, "call_3_0"),
    )
    assert len([e for e in read_ledger(ledger) if e["tool"] == "model"]) == 4
