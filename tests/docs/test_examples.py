"""The examples run, with the scripted model, against the session's Temporal server."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from examples.market_monitor import (
    EXECUTIONS_FILE,
    LEDGER_ENV,
    POSITION_SHARES,
    PROMPT,
    TRADES_FILE,
    WATCHLIST,
    starter,
    tools,
)
from examples.market_monitor.script import SESSION, scripted_model
from examples.market_monitor.tools import read_ledger, sell_position, send_alert
from examples.market_monitor.workflows import MarketMonitor
from smyth_temporal import AgentClient, AgentNotFoundError, AgentResult, AgentState
from smyth_temporal.activities.tools import tool_activities
from smyth_temporal.demo import find_example
from smyth_temporal.testing import agent_worker
from smyth_temporal.types import arguments_sha256
from smyth_temporal.types.tools import ToolInvocation

SALE = {"symbol": "ACME", "quantity": POSITION_SHARES // 2}
"""The sale the scripted session asks for: half of the ACME position."""


@pytest.fixture
def ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "demo" / "alerts.jsonl"
    monkeypatch.setenv(LEDGER_ENV, str(path))
    return path


async def wait_for_request(agents: AgentClient, workflow_id: str) -> AgentState:
    """The run's state once it waits for an approval (the worker runs in-process)."""
    for _ in range(300):
        # The starter task may not have started the run at the first look.
        with contextlib.suppress(AgentNotFoundError):
            state = await agents.state(workflow_id)
            if state.pending_approvals:
                return state
        await asyncio.sleep(0.05)
    raise AssertionError(f"{workflow_id} never asked for an approval")


async def test_market_monitor(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    workflow_id = f"market-monitor-test-{uuid.uuid4().hex[:8]}"
    async with agent_worker(client, MarketMonitor, model=scripted_model(), task_queue=task_queue):
        run = asyncio.create_task(
            starter.main(client, task_queue=task_queue, workflow_id=workflow_id)
        )
        state = await wait_for_request(agents, workflow_id)
        (request,) = state.pending_approvals
        # The sale waits: it has not run, and the agent says why it wants it.
        assert state.status == "awaiting_approval"
        assert (request.tool, request.step, request.arguments) == ("sell_position", 6, SALE)
        assert request.arguments_sha256 == arguments_sha256(SALE)
        assert request.reason is not None
        assert request.reason.startswith("ACME is down 6.80% today, -3.6 sigma")
        assert "selling half of our position: 5,000 of 10,000 shares" in request.reason
        assert request.deadline - request.requested_at == tools.SALE_APPROVAL_TIMEOUT
        assert not read_ledger(ledger.with_name(TRADES_FILE))
        assert "sell_position" not in {e["tool"] for e in executions(ledger)}

        approved_at = time.time()
        outcome = await agents.approve(
            workflow_id, by="test-trader", arguments_sha256=request.arguments_sha256
        )
        assert outcome is not None and outcome.request.status == "approved"
        result: AgentResult = await run
        final = await agents.state(workflow_id)

    assert result.status == "completed"
    assert result.steps == len(SESSION) == 7
    assert result.usage.tool_calls == 9  # 3 quotes, 2 news, 2 volatility, 1 alert, 1 sale
    lines = result.output.splitlines()
    assert lines[0] == "Market report (2025-01-15T15:30:00Z)"
    assert lines[1].startswith("- ACME 101.50 USD (-6.80%), -3.6 sigma: ALERT critical (")
    assert lines[1].endswith("). ACME cuts full-year revenue guidance on weaker industrial demand")
    assert lines[2] == "- GLOBEX 42.00 USD (+0.41%): quiet"
    assert lines[3].startswith("- INITECH 7.25 USD (+5.99%), +1.3 sigma: within its usual range.")
    assert lines[4] == "Alerts sent: 1"

    # One alert, about ACME, its id in the report, its message from the tool results.
    alerts = read_ledger(ledger)
    assert [a["symbol"] for a in alerts] == ["ACME"]
    assert f"ALERT critical ({alerts[0]['alert_id']})" in lines[1]
    assert alerts[0]["message"].startswith("ACME -6.80% today, -3.6 sigma against its 30-day")
    assert alerts[0]["key"].endswith("/5/call_5_0")

    # One sale, made after the approval, in the report with its trade id.
    (trade,) = read_ledger(ledger.with_name(TRADES_FILE))
    assert (trade["symbol"], trade["quantity"], trade["price"]) == ("ACME", 5000, 101.5)
    assert trade["key"].startswith(f"{workflow_id}/") and trade["key"].endswith("/6/call_6_0")
    assert lines[5] == f"Sales: 5,000 ACME at 101.50 USD (trade {trade['trade_id']})"
    started, ended = [e for e in executions(ledger) if e["tool"] == "sell_position"]
    assert (started["event"], ended["event"]) == ("start", "end")
    assert started["time"] >= approved_at
    assert started["arguments"] == SALE

    # The audit trail, in the state and in history.
    (audit,) = final.approvals
    assert audit.status == "approved" and audit.decision is not None
    assert audit.decision.by == "test-trader"
    assert audit.decision.arguments_sha256 == audit.arguments_sha256
    assert audit.executed_arguments_sha256 == audit.arguments_sha256
    assert final.pending_approvals == []
    events = [e async for e in client.get_workflow_handle(workflow_id).fetch_history_events()]
    accepted = [
        e.event_id
        for e in events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
    ]
    sold = [
        e.event_id
        for e in events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name
        == "smyth.tool.sell_position"
    ]
    assert len(accepted) == 1 and len(sold) == 1
    assert accepted[0] < sold[0]

    # Every tool call ran exactly once: one start and one end per idempotency key.
    starts = [e for e in executions(ledger) if e["event"] == "start"]
    ends = [e for e in executions(ledger) if e["event"] == "end"]
    assert len(starts) == len(ends) == 9
    assert len({e["key"] for e in starts}) == 9
    assert {e["arguments"]["symbol"] for e in starts if e["tool"] == "get_quote"} == set(WATCHLIST)
    assert all("error" not in e for e in ends)
    # The three quotes were asked for in one turn.
    assert [e["step"] for e in starts if e["tool"] == "get_quote"] == [1, 1, 1]


async def test_a_rejected_sale_is_not_made_and_is_reported(
    client: Client,
    agents: AgentClient,
    task_queue: str,
    ledger: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tools, "VOLATILITY_SECONDS", 0.0)  # the worker runs in-process
    workflow_id = f"market-monitor-test-{uuid.uuid4().hex[:8]}"
    async with agent_worker(client, MarketMonitor, model=scripted_model(), task_queue=task_queue):
        run = asyncio.create_task(
            starter.main(client, task_queue=task_queue, workflow_id=workflow_id)
        )
        await wait_for_request(agents, workflow_id)
        await agents.reject(workflow_id, by="test-trader", comment="we hedge with options")
        result = await run

    assert result.status == "completed" and result.steps == 7
    assert not read_ledger(ledger.with_name(TRADES_FILE))
    assert "sell_position" not in {e["tool"] for e in executions(ledger)}
    sales = result.output.splitlines()[-1]
    assert sales.startswith("Sales: ACME not sold (Error: the call to 'sell_position' was not run")
    assert "rejected by test-trader: we hedge with options" in sales


def test_only_large_sales_need_an_approval() -> None:
    limit = tools.APPROVAL_ABOVE_SHARES
    assert sell_position.needs_approval({"symbol": "ACME", "quantity": POSITION_SHARES // 2})
    assert sell_position.needs_approval({"symbol": "ACME", "quantity": limit + 1})
    assert not sell_position.needs_approval({"symbol": "ACME", "quantity": limit})
    assert sell_position.effect == "side_effect"
    assert sell_position.on_timeout == "reject"
    # The prompt's "sell half" is above the limit: the demo's sale always waits.
    assert f"{POSITION_SHARES:,} shares" in PROMPT and limit < POSITION_SHARES // 2


async def test_send_alert_is_deduplicated_by_its_idempotency_key(ledger: Path) -> None:
    (activity,) = tool_activities([send_alert])
    invocation = ToolInvocation(
        tool="send_alert",
        call_id="call_5_0",
        arguments={"symbol": "ACME", "message": "ACME fell", "severity": "warning"},
        idempotency_key="market-monitor-1/5/call_5_0",
        agent="MarketMonitor",
        step=5,
        tenant="default",
    )
    first = await ActivityEnvironment().run(activity, invocation)
    # A retry after a crash: the same call, the same key.
    retry = await ActivityEnvironment().run(activity, invocation)
    assert '"status":"sent"' in first.content
    assert '"status":"already_sent"' in retry.content
    assert first.content.replace('"sent"', '"already_sent"') == retry.content
    assert len(read_ledger(ledger)) == 1
    # Both executions are on the record; the alert went out once.
    assert [e["event"] for e in executions(ledger)] == ["start", "end"] * 2


async def test_sell_position_is_deduplicated_by_its_idempotency_key(ledger: Path) -> None:
    (activity,) = tool_activities([sell_position])
    invocation = ToolInvocation(
        tool="sell_position",
        call_id="call_6_0",
        arguments=SALE,
        idempotency_key="market-monitor-1/6/call_6_0",
        agent="MarketMonitor",
        step=6,
        tenant="default",
    )
    first = await ActivityEnvironment().run(activity, invocation)
    retry = await ActivityEnvironment().run(activity, invocation)
    assert '"status":"filled"' in first.content
    assert first.content.replace('"filled"', '"already_filled"') == retry.content
    assert [t["quantity"] for t in read_ledger(ledger.with_name(TRADES_FILE))] == [5000]

    too_many = invocation.model_copy(
        update={"arguments": {"symbol": "ACME", "quantity": POSITION_SHARES + 1}}
    )
    with pytest.raises(ApplicationError, match="the desk holds 10,000") as raised:
        await ActivityEnvironment().run(activity, too_many)
    assert raised.value.non_retryable


async def test_unknown_symbol_fails_for_good(ledger: Path) -> None:
    (activity,) = tool_activities([MarketMonitor.config.tool("get_quote")])  # type: ignore[list-item]
    invocation = ToolInvocation(
        tool="get_quote",
        call_id="call_1_0",
        arguments={"symbol": "NOPE"},
        idempotency_key="k",
        agent="MarketMonitor",
        step=1,
        tenant="default",
    )
    with pytest.raises(ApplicationError, match="unknown symbol 'NOPE'") as raised:
        await ActivityEnvironment().run(activity, invocation)
    assert raised.value.non_retryable


def test_demo_reads_the_constants_of_the_example() -> None:
    # `smyth demo` loads them from the example's __init__ rather than importing it.
    example = find_example()
    assert example.prompt == PROMPT
    assert (example.ledger_env, example.executions_file, example.trades_file) == (
        LEDGER_ENV,
        EXECUTIONS_FILE,
        TRADES_FILE,
    )


def executions(ledger: Path) -> list[dict[str, Any]]:
    return read_ledger(ledger.with_name(EXECUTIONS_FILE))
