"""``smyth audit``: an agent's trail, read from history, compared against that history."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from smyth_temporal import AgentClient, AgentInput, AgentNotFoundError
from smyth_temporal.agent.tooling import idempotency_key
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from smyth_temporal.types import arguments_sha256
from smyth_temporal.types.model import MODEL_ACTIVITY
from tests.agent.test_approvals import wait_for_pending
from tests.agent.test_crash_recovery import (
    EVENT_TIMEOUT,
    RESULT_TIMEOUT,
    Spawn,
    spawn,
    wait_for_entry,
)
from tests.context.test_context import digest_script, memory_at
from tests.helpers.agents import PRICES, Analyst
from tests.helpers.chains import chain_histories
from tests.helpers.cli_support import assert_one_error_line, run_smyth
from tests.helpers.context_agents import Digest, Relay
from tests.helpers.trader import Trader

__all__ = ["spawn"]  # the crash test's fixture, shared


async def scheduled(client: Client, workflow_id: str) -> dict[str, int]:
    """How many activities of each type every run of ``workflow_id`` scheduled."""
    counts: dict[str, int] = {}
    for history in await chain_histories(client, workflow_id):
        for event in history.events:
            if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
                name = event.activity_task_scheduled_event_attributes.activity_type.name
                counts[name] = counts.get(name, 0) + 1
    return counts


async def test_an_approval_with_edited_arguments(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = ScriptedModel([tool_call("sell", symbol="ACME", quantity=10), reply("sold")])
    edited = {"symbol": "ACME", "quantity": 4}
    async with agent_worker(client, Trader, model=model, task_queue=task_queue):
        handle = await agents.start(Trader, "Sell ACME")
        state = await wait_for_pending(agents, handle.id, 1)
        asked = state.pending_approvals[0]
        await agents.approve(
            handle.id, by="alice", arguments=edited, arguments_sha256=asked.arguments_sha256
        )
        await agents.result(handle.id)
    trail = await agents.audit(handle.id)

    assert [e.kind for e in trail.entries] == [
        "run_started",
        "model_call",
        "approval_decided",
        "tool_call",
        "model_call",
        "run_finished",
    ]
    [decided] = trail.of("approval_decided")
    assert decided.fields["by"] == "alice" and decided.fields["approved"] is True
    assert decided.fields["pinned_sha256"] == asked.arguments_sha256  # what alice saw
    assert decided.fields["edited_arguments_sha256"] == arguments_sha256(edited)
    [call] = trail.of("tool_call")
    # The tool ran with the edited arguments: the audit shows their hash, not the model's.
    assert call.fields["arguments_sha256"] == arguments_sha256(edited)
    assert call.fields["idempotency_key"] == idempotency_key(
        handle.id, handle.first_execution_run_id or "", 1, asked.call_id
    )
    assert (call.fields["outcome"], call.fields["attempts"]) == ("completed", 1)
    assert [e.fields["model"] for e in trail.of("model_call")] == ["test-model"] * 2
    assert all(e.fields["input_tokens"] > 0 for e in trail.of("model_call"))
    assert trail.entries[0].fields["tenant"] == "default"

    # The CLI shows the same, as a table and as JSON.
    address = client.service_client.config.target_host
    table = await asyncio.to_thread(run_smyth, "audit", handle.id, "--address", address)
    assert table.code == 0, table.err
    assert "approved by alice" in table.out and "sell" in table.out
    document = await asyncio.to_thread(
        run_smyth, "audit", handle.id, "--json", "--address", address
    )
    assert json.loads(document.out)["entries"][2]["fields"]["by"] == "alice"


async def test_compaction_memory_writes_and_continue_as_new(
    client: Client, agents: AgentClient, task_queue: str, tmp_path: Path
) -> None:
    memory = memory_at(tmp_path / "memory")
    async with agent_worker(
        client, Digest, model=digest_script(), task_queue=task_queue, memory=memory
    ):
        digest = await agents.start(Digest, AgentInput(prompt="Digest.", tenant="t1"))
        await agents.result(digest.id)
    await memory.close()
    trail = await agents.audit(digest.id)
    counts = await scheduled(client, digest.id)
    assert len(trail.of("model_call")) == counts[MODEL_ACTIVITY]
    assert any(e.fields.get("purpose") == "summary" for e in trail.of("model_call"))
    writes = trail.of("memory_write")
    assert len(writes) == counts["smyth.memory.remember"] >= 2
    for write in writes:  # compaction archived transcripts, each with its provenance
        assert write.fields["memory_kind"] == "transcript"
        assert write.fields["provenance"]["workflow_id"] == digest.id
        assert write.fields["tenant"] == "t1"

    steps = 5
    model = ScriptedModel(
        [*(tool_call("daily_report", day=d) for d in range(1, steps)), reply("ok")]
    )
    async with agent_worker(client, Relay, model=model, task_queue=task_queue):
        relay = await agents.start(Relay, AgentInput(prompt="Read."))
        await agents.result(relay.id)
    trail = await agents.audit(relay.id)
    chain = await chain_histories(client, relay.id)
    assert trail.runs == [h.run_id for h in chain] and len(trail.runs) >= 2
    assert len(trail.of("continued_as_new")) == len(trail.runs) - 1
    assert len(trail.of("run_started")) == len(trail.runs)
    assert [e.fields["outcome"] for e in trail.of("run_finished")] == ["completed"]
    assert len(trail.of("tool_call")) == steps - 1
    # In order: every run's entries come after the previous run's.
    order = [trail.runs.index(e.run_id) for e in trail.entries]
    assert order == sorted(order)


async def test_a_crash_shows_as_a_retried_call(
    agents: AgentClient, ledger: Path, spawn: Spawn
) -> None:
    first = await spawn("crash-tool")
    handle = await agents.start(Analyst, AgentInput(prompt="Buy ACME, then look around"))
    await wait_for_entry(ledger, lambda e: e["tool"] == "slow_lookup.start")
    first.kill()
    await spawn("crash-tool")
    await asyncio.wait_for(agents.result(handle.id), RESULT_TIMEOUT)
    trail = await asyncio.wait_for(agents.audit(handle.id), EVENT_TIMEOUT)

    [lookup] = [e for e in trail.of("tool_call") if e.fields["tool"] == "slow_lookup"]
    assert lookup.fields["attempts"] == 2
    assert "timeout" in lookup.fields["retried_after"].lower()  # the dead worker's attempt
    assert lookup.fields["outcome"] == "completed"
    others = [e for e in trail.of("tool_call") if e.fields["tool"] != "slow_lookup"]
    assert all(e.fields["attempts"] == 1 for e in others)


async def test_an_unknown_id_is_refused_clearly(agents: AgentClient, client: Client) -> None:
    try:
        await agents.audit("no-such-agent")
    except AgentNotFoundError as exc:
        assert "no-such-agent" in str(exc)
    else:
        raise AssertionError("expected AgentNotFoundError")
    address = client.service_client.config.target_host
    shown = await asyncio.to_thread(run_smyth, "audit", "no-such-agent", "--address", address)
    assert_one_error_line(shown, "no agent run with workflow id 'no-such-agent'")


async def test_a_forks_replayed_model_turns_are_marked_apart_from_the_paid_ones(
    client: Client,
    agents: AgentClient,
    task_queue: str,
    ledger: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    quotes = [tool_call("get_quote", symbol=s) for s in ("ACME", "GLOBEX")]
    model = ScriptedModel([*quotes, reply("done"), reply("done, GLOBEX changed")])
    async with agent_worker(client, Analyst, model=model, task_queue=task_queue):
        handle = await agents.start(Analyst, "Quote ACME and GLOBEX.")
        await agents.result(handle.id)
        # GLOBEX's quote changes: the fork's turns 1-2 match the record, turn 3 does not.
        monkeypatch.setitem(PRICES, "GLOBEX", 99.0)
        fork = await agents.fork(handle.id, at_step=0, replay_model_turns=True)
        await agents.result(fork.id)
    calls = (await agents.audit(fork.id)).of("model_call")

    assert [(c.fields["step"], c.fields.get("replayed", False)) for c in calls] == [
        (1, True),
        (2, True),
        (3, False),
    ]
    assert all(c.fields["input_tokens"] == 0 for c in calls[:2])
    assert calls[2].fields["input_tokens"] > 0
    assert not any(c.fields.get("replayed") for c in (await agents.audit(handle.id)).entries)
