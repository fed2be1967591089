"""A scripted model playing one monitoring session, so the example runs offline.

Turn ``n`` of the agent gets step ``n`` of ``SESSION``. The turn comes from the request,
so after a worker crash the replacement worker's model picks up at the right turn. The
tool calls are what a model would decide on this snapshot of the market; the alert,
the sale (and the reason given for it) and the report are written from what the tools
actually returned.

Serve it with ``smyth worker examples.market_monitor.workflows:MarketMonitor
--model examples.market_monitor.script:model``.
"""

from __future__ import annotations

import json
from typing import Any

from examples.market_monitor import POSITION_SHARES, WATCHLIST
from smyth_temporal import Message, ToolCall
from smyth_temporal.models import ModelRequest, ModelResponse
from smyth_temporal.testing import ScriptedModel, ScriptStep, reply, tool_call

__all__ = [
    "SESSION",
    "alert_unusual_moves",
    "model",
    "report",
    "scripted_model",
    "sell_on_crashes",
    "tool_errors",
    "tool_results",
]

UNUSUAL_SIGMAS = 2.0
"""A move of this many standard deviations or more gets an alert (as the prompt says)."""

CRASH_SIGMAS = -3.0
"""A drop of this many standard deviations or more halves the position (as the prompt says)."""


def alert_unusual_moves(request: ModelRequest) -> ModelResponse:
    """Turn 5: alert on every move of 2 sigma or more, with its likely cause."""
    if _called(request, "send_alert"):
        return sell_on_crashes(request)
    volatility = tool_results(request, "get_volatility")
    news = tool_results(request, "get_news")
    calls: list[ToolCall] = []
    for symbol, measured in volatility.items():
        sigmas = measured["move_sigmas"]
        if abs(sigmas) < UNUSUAL_SIGMAS:
            continue
        headlines = news.get(symbol) or []
        cause = f" Likely cause: {headlines[0]['title']}." if headlines else ""
        message = (
            f"{symbol} {measured['change_pct']:+.2f}% today, {sigmas:+.1f} sigma against "
            f"its 30-day volatility.{cause}"
        )
        severity = "critical" if abs(sigmas) >= 3 else "warning"
        alert = tool_call("send_alert", symbol=symbol, message=message, severity=severity)
        calls += alert.message.tool_calls
    if not calls:
        return sell_on_crashes(request)
    return ModelResponse(message=Message(role="assistant", tool_calls=calls))


def sell_on_crashes(request: ModelRequest) -> ModelResponse:
    """Turn 6: sell half of the position in every stock that dropped 3 sigma or more.

    The text of the turn says why: the agent shows it to the trader asked to approve.
    """
    if _called(request, "sell_position"):
        return report(request)
    volatility = tool_results(request, "get_volatility")
    news = tool_results(request, "get_news")
    calls: list[ToolCall] = []
    reasons: list[str] = []
    for symbol, measured in volatility.items():
        sigmas = measured["move_sigmas"]
        if sigmas > CRASH_SIGMAS:
            continue
        quantity = POSITION_SHARES // 2
        headlines = news.get(symbol) or []
        cause = f", after: {headlines[0]['title']}" if headlines else ""
        reasons.append(
            f"{symbol} is down {abs(measured['change_pct']):.2f}% today, {sigmas:+.1f} sigma "
            f"against its 30-day volatility{cause}. As the task says for a drop of "
            f"{abs(CRASH_SIGMAS):g} sigma or more, I am selling half of our position: "
            f"{quantity:,} of {POSITION_SHARES:,} shares."
        )
        calls += tool_call("sell_position", symbol=symbol, quantity=quantity).message.tool_calls
    if not calls:
        return report(request)
    return ModelResponse(
        message=Message(role="assistant", content=" ".join(reasons), tool_calls=calls)
    )


def report(request: ModelRequest) -> ModelResponse:
    """Turn 7: the report, one line per symbol, from the tool results in the conversation."""
    quotes = tool_results(request, "get_quote")
    volatility = tool_results(request, "get_volatility")
    news = tool_results(request, "get_news")
    alerts = tool_results(request, "send_alert")
    as_of = next((quote["as_of"] for quote in quotes.values()), "now")
    lines = [f"Market report ({as_of})"]
    for symbol in WATCHLIST:
        quote = quotes.get(symbol)
        if quote is None:
            lines.append(f"- {symbol}: no quote")
            continue
        line = f"- {symbol} {quote['price']:.2f} {quote['currency']} ({quote['change_pct']:+.2f}%)"
        if symbol in volatility:
            line += f", {volatility[symbol]['move_sigmas']:+.1f} sigma"
        if symbol in alerts:
            line += f": ALERT {alerts[symbol]['severity']} ({alerts[symbol]['alert_id']})"
        elif symbol in volatility:
            line += ": within its usual range"
        else:
            line += ": quiet"
        if news.get(symbol):
            line += f". {news[symbol][0]['title']}"
        lines.append(line)
    lines.append(f"Alerts sent: {len(alerts)}")
    trades = tool_results(request, "sell_position")
    refused = tool_errors(request, "sell_position")
    sales = [
        f"{trade['quantity']:,} {symbol} at {trade['price']:.2f} {trade['currency']} "
        f"(trade {trade['trade_id']})"
        for symbol, trade in trades.items()
    ]
    # A sale that was rejected (or whose request expired) is reported, not hidden.
    sales += [f"{symbol} not sold ({error})" for symbol, error in refused.items()]
    lines.append(f"Sales: {'; '.join(sales) or 'none'}")
    return reply("\n".join(lines))


SESSION: list[ScriptStep] = [
    # 1. All quotes in one turn: read-only calls of a turn run concurrently.
    [tool_call("get_quote", symbol=symbol) for symbol in WATCHLIST],
    # 2. The news of the two symbols that moved 3% or more.
    [tool_call("get_news", symbol="ACME"), tool_call("get_news", symbol="INITECH")],
    # 3-4. How unusual each move is: the slow tool (`smyth demo` kills the worker here).
    tool_call("get_volatility", symbol="ACME"),
    tool_call("get_volatility", symbol="INITECH"),
    # 5-7. Written from the tool results. The sale of turn 6 waits for an approval.
    alert_unusual_moves,
    sell_on_crashes,
    report,
]
"""The session, one step per model turn."""


def scripted_model() -> ScriptedModel:
    """A fresh scripted model playing ``SESSION``."""
    return ScriptedModel(SESSION)


model = scripted_model()
"""The scripted model, for ``smyth worker --model examples.market_monitor.script:model``."""


def tool_results(request: ModelRequest, tool: str) -> dict[str, Any]:
    """The parsed results of ``tool`` in the conversation, by the ``symbol`` it was called with.

    Results that are errors (not JSON) are left out; see ``tool_errors``.
    """
    return _results(request, tool)[0]


def tool_errors(request: ModelRequest, tool: str) -> dict[str, str]:
    """The results of ``tool`` that are errors (not JSON), by symbol.

    They are the agent's words for a failed call, or for a call that was rejected and
    so never ran.
    """
    return _results(request, tool)[1]


def _results(request: ModelRequest, tool: str) -> tuple[dict[str, Any], dict[str, str]]:
    symbols = {
        call.id: json.loads(call.arguments).get("symbol")
        for message in request.messages
        for call in message.tool_calls
        if call.name == tool
    }
    results: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for message in request.messages:
        if message.role != "tool" or message.tool_call_id not in symbols:
            continue
        symbol = symbols[message.tool_call_id]
        try:
            results[symbol] = json.loads(message.content or "")
        except json.JSONDecodeError:
            errors[symbol] = message.content or ""
    return results, errors


def _called(request: ModelRequest, tool: str) -> bool:
    """Whether the model already called ``tool`` in this conversation."""
    return any(call.name == tool for message in request.messages for call in message.tool_calls)
