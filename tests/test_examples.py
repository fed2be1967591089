"""The examples run, with the scripted model, against the session's Temporal server."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from examples.market_monitor import EXECUTIONS_FILE, LEDGER_ENV, PROMPT, WATCHLIST, starter
from examples.market_monitor.script import SESSION, scripted_model
from examples.market_monitor.tools import read_ledger, send_alert
from examples.market_monitor.workflows import MarketMonitor
from smyth_temporal.cli import _demo
from smyth_temporal.testing import agent_worker
from smyth_temporal.tools._activity import tool_activities
from smyth_temporal.tools._types import ToolInvocation


@pytest.fixture
def ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "demo" / "alerts.jsonl"
    monkeypatch.setenv(LEDGER_ENV, str(path))
    return path


async def test_market_monitor(client: Client, task_queue: str, ledger: Path) -> None:
    async with agent_worker(client, MarketMonitor, model=scripted_model(), task_queue=task_queue):
        result = await starter.main(client, task_queue=task_queue)

    assert result.status == "completed"
    assert result.steps == len(SESSION) == 6
    assert result.usage.tool_calls == 8  # 3 quotes, 2 news, 2 volatility, 1 alert
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

    # Every tool call ran exactly once: one start and one end per idempotency key.
    executions = read_ledger(ledger.with_name(EXECUTIONS_FILE))
    starts = [e for e in executions if e["event"] == "start"]
    ends = [e for e in executions if e["event"] == "end"]
    assert len(starts) == len(ends) == 8
    assert len({e["key"] for e in starts}) == 8
    assert {e["arguments"]["symbol"] for e in starts if e["tool"] == "get_quote"} == set(WATCHLIST)
    assert all("error" not in e for e in ends)
    # The three quotes were asked for in one turn.
    assert [e["step"] for e in starts if e["tool"] == "get_quote"] == [1, 1, 1]


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
    assert [e["event"] for e in read_ledger(ledger.with_name(EXECUTIONS_FILE))] == [
        "start",
        "end",
    ] * 2


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
    example = _demo.find_example()
    assert example.prompt == PROMPT
    assert (example.ledger_env, example.executions_file) == (LEDGER_ENV, EXECUTIONS_FILE)
