"""A scripted model playing one monitoring session, so the example runs offline.

Turn ``n`` of the agent gets step ``n`` of ``SESSION``. The turn comes from the request,
so after a worker crash the replacement worker's model picks up at the right turn. The
tool calls are what a model would decide on this snapshot of the market; the alert
and the report are written from what the tools actually returned.

Serve it with ``smyth worker examples.market_monitor.workflows:MarketMonitor
--model examples.market_monitor.script:model``.
"""

from __future__ import annotations

import json
from typing import Any

from examples.market_monitor import WATCHLIST
from smyth_temporal import Message, ToolCall
from smyth_temporal.models import ModelRequest, ModelResponse
from smyth_temporal.testing import ScriptedModel, ScriptStep, reply, tool_call

__all__ = ["SESSION", "alert_unusual_moves", "model", "report", "scripted_model"]

UNUSUAL_SIGMAS = 2.0
"""A move of this many standard deviations or more gets an alert (as the prompt says)."""


def alert_unusual_moves(request: ModelRequest) -> ModelResponse:
    """Turn 5: alert on every move of 2 sigma or more, with its likely cause."""
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
        return report(request)
    return ModelResponse(message=Message(role="assistant", tool_calls=calls))


def report(request: ModelRequest) -> ModelResponse:
    """Turn 6: the report, one line per symbol, from the tool results in the conversation."""
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
    return reply("\n".join(lines))


SESSION: list[ScriptStep] = [
    # 1. All quotes in one turn: read-only calls of a turn run concurrently.
    [tool_call("get_quote", symbol=symbol) for symbol in WATCHLIST],
    # 2. The news of the two symbols that moved 3% or more.
    [tool_call("get_news", symbol="ACME"), tool_call("get_news", symbol="INITECH")],
    # 3-4. How unusual each move is: the slow tool (`smyth demo` kills the worker here).
    tool_call("get_volatility", symbol="ACME"),
    tool_call("get_volatility", symbol="INITECH"),
    # 5-6. Written from the tool results.
    alert_unusual_moves,
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

    Results that are errors (not JSON) are left out.
    """
    symbols = {
        call.id: json.loads(call.arguments).get("symbol")
        for message in request.messages
        for call in message.tool_calls
        if call.name == tool
    }
    results: dict[str, Any] = {}
    for message in request.messages:
        if message.role != "tool" or message.tool_call_id not in symbols:
            continue
        try:
            results[symbols[message.tool_call_id]] = json.loads(message.content or "")
        except json.JSONDecodeError:
            continue
    return results
