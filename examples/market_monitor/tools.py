"""The market monitor's tools, over a deterministic offline snapshot of a market.

Three read-only tools (quotes, news, volatility) and two with side effects: alerts,
and sales, which above a size wait for a trader's approval. Every execution of every
tool is written to an execution ledger (one line when it starts, one when it ends),
every alert to an alert ledger and every sale to a trade ledger, so that ``smyth demo``
and the tests can count exactly what ran, and how often, across worker crashes.

The ledger files are this example's stand-in for the outside world: plain JSON lines,
appended with one ``write`` each, which POSIX keeps whole under ``O_APPEND``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel
from temporalio.exceptions import ApplicationError

from examples.market_monitor import EXECUTIONS_FILE, LEDGER_ENV, POSITION_SHARES, TRADES_FILE
from smyth_temporal import tool, tool_context

__all__ = [
    "APPROVAL_ABOVE_SHARES",
    "AS_OF",
    "DEFAULT_LEDGER",
    "SALE_APPROVAL_TIMEOUT",
    "VOLATILITY_SECONDS",
    "Alert",
    "Headline",
    "Quote",
    "Trade",
    "Volatility",
    "alerts_path",
    "executions_path",
    "get_news",
    "get_quote",
    "get_volatility",
    "read_ledger",
    "sell_position",
    "send_alert",
    "trades_path",
]

AS_OF = "2025-01-15T15:30:00Z"
"""The moment of the offline snapshot every tool answers from."""

DEFAULT_LEDGER = Path(".smyth/demo/alerts.jsonl")
"""The alert ledger when ``SMYTH_DEMO_LEDGER`` is not set."""

VOLATILITY_SECONDS = 1.5
"""How long ``get_volatility`` takes: long enough to kill a worker in the middle of it."""

APPROVAL_ABOVE_SHARES = 1_000
"""A sale of more shares than this waits for a trader's approval; smaller ones go through."""

SALE_APPROVAL_TIMEOUT = timedelta(minutes=30)
"""How long a sale waits for a decision: a price moves on, so an old request is dropped."""

# symbol: (price, previous close, volume, 30-day standard deviation of daily returns in %)
_MARKET: dict[str, tuple[float, float, int, float]] = {
    "ACME": (101.50, 108.90, 18_400_000, 1.9),
    "GLOBEX": (42.00, 41.83, 3_100_000, 1.2),
    "INITECH": (7.25, 6.84, 9_800_000, 4.6),
}

_NEWS: dict[str, list[tuple[str, str, str]]] = {
    "ACME": [
        ("13:05", "Reuters", "ACME cuts full-year revenue guidance on weaker industrial demand"),
        ("14:20", "Bloomberg", "ACME shares slide in heavy trading after guidance cut"),
        ("15:02", "MarketWatch", "Northfield Research downgrades ACME to Hold"),
    ],
    "GLOBEX": [
        ("09:40", "Business Wire", "Globex to present at the Midwinter Industrials Conference"),
    ],
    "INITECH": [
        ("11:15", "PR Newswire", "INITECH wins state contract for payroll software"),
        ("14:45", "Barron's", "Small-cap software names rally as rate fears ease"),
    ],
}


class Quote(BaseModel):
    """The latest quote of a symbol."""

    symbol: str
    price: float
    previous_close: float
    change_pct: float
    """Change since the previous close, in percent."""
    volume: int
    currency: str = "USD"
    as_of: str = AS_OF


class Headline(BaseModel):
    """One news item."""

    time: str
    """Time of day (UTC) of the snapshot's date."""
    source: str
    title: str


class Volatility(BaseModel):
    """How unusual today's move of a symbol is, given its recent volatility."""

    symbol: str
    window_days: int
    daily_sigma_pct: float
    """Standard deviation of daily returns over the window, in percent."""
    annualized_pct: float
    change_pct: float
    """Today's change, in percent."""
    move_sigmas: float
    """Today's change in standard deviations: beyond 2 is unusual, beyond 3 rare."""


class Alert(BaseModel):
    """An alert as the alerting system recorded it."""

    alert_id: str
    """Derived from the call's idempotency key: the same call always gets the same id."""
    symbol: str
    severity: str
    message: str
    status: Literal["sent", "already_sent"]
    """``already_sent`` when a retry of the same call found its alert already recorded."""


class Trade(BaseModel):
    """A sale as the broker recorded it."""

    trade_id: str
    """Derived from the call's idempotency key: the same call always gets the same id."""
    symbol: str
    quantity: int
    price: float
    proceeds: float
    currency: str = "USD"
    status: Literal["filled", "already_filled"]
    """``already_filled`` when a retry of the same call found its sale already made."""


@tool
async def get_quote(symbol: str) -> Quote:
    """Get the latest price of a stock and its change since the previous close.

    Args:
        symbol: The ticker symbol, e.g. ACME.
    """
    with _execution("get_quote", symbol=symbol):
        price, previous, volume, _ = _lookup(symbol)
        change = round((price - previous) / previous * 100, 2)
        return Quote(
            symbol=symbol, price=price, previous_close=previous, change_pct=change, volume=volume
        )


@tool
async def get_news(symbol: str) -> list[Headline]:
    """Get today's news headlines about a stock, oldest first.

    Args:
        symbol: The ticker symbol, e.g. ACME.
    """
    with _execution("get_news", symbol=symbol):
        _lookup(symbol)
        return [Headline(time=t, source=s, title=title) for t, s, title in _NEWS[symbol]]


# A short heartbeat timeout (the SDK sends the heartbeats) lets Temporal notice a
# crashed worker in 2 s instead of the default 5 s, and retry this call elsewhere.
@tool(heartbeat_timeout=timedelta(seconds=2))
async def get_volatility(symbol: str) -> Volatility:
    """Measure how unusual today's move of a stock is, given its 30-day volatility.

    Args:
        symbol: The ticker symbol, e.g. ACME.
    """
    with _execution("get_volatility", symbol=symbol):
        price, previous, _, sigma = _lookup(symbol)
        # Stands in for crunching a month of ticks: the slow call of the session.
        await asyncio.sleep(VOLATILITY_SECONDS)
        change = round((price - previous) / previous * 100, 2)
        return Volatility(
            symbol=symbol,
            window_days=30,
            daily_sigma_pct=sigma,
            annualized_pct=round(sigma * 252**0.5, 1),
            change_pct=change,
            move_sigmas=round(change / sigma, 2),
        )


@tool(effect="side_effect")
async def send_alert(
    symbol: str, message: str, severity: Literal["info", "warning", "critical"] = "warning"
) -> Alert:
    """Send an alert about a stock to the trading desk.

    Args:
        symbol: The ticker symbol the alert is about.
        message: What happened and why it matters, in one or two sentences.
        severity: How urgent it is.
    """
    key = tool_context().idempotency_key
    with _execution("send_alert", symbol=symbol):
        alert = Alert(
            alert_id=hashlib.sha256(key.encode()).hexdigest()[:12],
            symbol=symbol,
            severity=severity,
            message=message,
            status="sent",
        )
        # A retry of this call (after a crash between sending and reporting back)
        # carries the same key: find the alert it already sent instead of sending twice.
        # A real alerting API would take the key as its idempotency key instead.
        if any(entry.get("key") == key for entry in read_ledger(alerts_path())):
            return alert.model_copy(update={"status": "already_sent"})
        _append(alerts_path(), {"key": key, **alert.model_dump(exclude={"status"})})
        return alert


def _large_sale(symbol: str, quantity: int) -> bool:
    """Which sales need a trader's consent (evaluated in the workflow: deterministic)."""
    return quantity > APPROVAL_ABOVE_SHARES


# A sale cannot be taken back, so a large one waits for a person. Nobody answering
# within SALE_APPROVAL_TIMEOUT means no: the model is told and the shares are kept.
@tool(
    effect="side_effect",
    requires_approval=_large_sale,
    approval_timeout=SALE_APPROVAL_TIMEOUT,
    on_timeout="reject",
)
async def sell_position(symbol: str, quantity: int) -> Trade:
    """Sell shares of a stock from the desk's position, at the market price.

    Large sales wait for a trader's approval first.

    Args:
        symbol: The ticker symbol, e.g. ACME.
        quantity: How many shares to sell, at most the desk's position.
    """
    key = tool_context().idempotency_key
    with _execution("sell_position", symbol=symbol, quantity=quantity):
        price, _, _, _ = _lookup(symbol)
        if not 0 < quantity <= POSITION_SHARES:
            raise ApplicationError(
                f"cannot sell {quantity} shares of {symbol}: the desk holds {POSITION_SHARES:,}",
                type="InvalidQuantity",
                non_retryable=True,
            )
        trade = Trade(
            trade_id=hashlib.sha256(key.encode()).hexdigest()[:12],
            symbol=symbol,
            quantity=quantity,
            price=price,
            proceeds=round(price * quantity, 2),
            status="filled",
        )
        # As for alerts: a retry after a crash between the sale and the report carries
        # the same key, and must find the sale made rather than sell a second time.
        if any(entry.get("key") == key for entry in read_ledger(trades_path())):
            return trade.model_copy(update={"status": "already_filled"})
        _append(trades_path(), {"key": key, **trade.model_dump(exclude={"status"})})
        return trade


def alerts_path() -> Path:
    """The alert ledger: ``$SMYTH_DEMO_LEDGER``, or ``.smyth/demo/alerts.jsonl``."""
    return Path(os.environ.get(LEDGER_ENV) or DEFAULT_LEDGER)


def executions_path() -> Path:
    """The execution ledger: ``executions.jsonl`` beside the alert ledger."""
    return alerts_path().with_name(EXECUTIONS_FILE)


def trades_path() -> Path:
    """The trade ledger: ``trades.jsonl`` beside the alert ledger."""
    return alerts_path().with_name(TRADES_FILE)


def read_ledger(path: Path) -> list[dict[str, Any]]:
    """The entries of a JSON-lines ledger (none when the file does not exist)."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _lookup(symbol: str) -> tuple[float, float, int, float]:
    if symbol not in _MARKET:
        # Asking again cannot make the symbol exist: fail for good, so the model hears
        # about it at once instead of after five retries.
        raise ApplicationError(
            f"unknown symbol {symbol!r}; this feed covers {', '.join(_MARKET)}",
            type="UnknownSymbol",
            non_retryable=True,
        )
    return _MARKET[symbol]


@contextmanager
def _execution(tool_name: str, **arguments: Any) -> Iterator[None]:
    """Record the start and the end of one execution of a tool in the execution ledger."""
    context = tool_context()
    entry = {
        "tool": tool_name,
        "arguments": arguments,
        "key": context.idempotency_key,
        "call_id": context.call_id,
        "step": context.step,
        "attempt": context.attempt,
        "pid": os.getpid(),
    }
    _append(executions_path(), {"event": "start", **entry, "time": time.time()})
    try:
        yield
    except BaseException as exc:
        # A failed execution has ended too; only a killed worker leaves a start alone.
        failed = {"event": "end", **entry, "time": time.time(), "error": repr(exc)}
        _append(executions_path(), failed)
        raise
    _append(executions_path(), {"event": "end", **entry, "time": time.time()})


def _append(path: Path, entry: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as ledger:
        ledger.write(json.dumps(entry) + "\n")
