"""The test agents' tools, their argument and answer models, and the tool ledger.

No workflow lives here, so a worker shares this module between runs (the modules of
an agent's tools and their types are passed through the workflow sandbox) instead of
importing it again for each run: ``tests.helpers.agents`` and the other agent modules import
from here.
"""

from __future__ import annotations

import contextlib
import json
import os
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field
from temporalio.common import RetryPolicy

from smyth_temporal import tool, tool_context

PRICES = {"ACME": 101.5, "GLOBEX": 42.0, "INITECH": 7.25}

# Every executed tool call appends one JSON line here when SMYTH_TEST_LEDGER is set,
# so tests (and subprocess workers) can count side effects exactly.
LEDGER_ENV = "SMYTH_TEST_LEDGER"


def record(tool_name: str, **fields: object) -> None:
    path = os.environ.get(LEDGER_ENV)
    if not path:
        return
    context = tool_context()
    entry = {
        "tool": tool_name,
        "key": context.idempotency_key,
        "attempt": context.attempt,
        "pid": os.getpid(),
        **fields,
    }
    with Path(path).open("a") as ledger:
        ledger.write(json.dumps(entry) + "\n")


def read_ledger(path: Path) -> list[dict[str, Any]]:
    """Every entry recorded so far (a line still being written, or cut off by a killed
    worker, is skipped; none when the ledger does not exist yet)."""
    if not path.exists():
        return []
    entries = []
    for line in path.read_text().splitlines():
        with contextlib.suppress(json.JSONDecodeError):
            entries.append(json.loads(line))
    return entries


@tool
async def get_quote(symbol: str) -> float:
    """Latest price for a ticker symbol.

    Args:
        symbol: The ticker, e.g. ACME.
    """
    record("get_quote", symbol=symbol)
    if symbol not in PRICES:
        raise KeyError(f"unknown symbol {symbol}")
    return PRICES[symbol]


class Order(BaseModel):
    symbol: str
    quantity: int


@tool(effect="side_effect")
async def place_order(order: Order) -> str:
    """Place a buy order."""
    record("place_order", symbol=order.symbol, quantity=order.quantity)
    return f"bought {order.quantity} {order.symbol}"


@tool(effect="idempotent")
async def write_note(text: str) -> dict[str, object]:
    """Write a note to the journal."""
    record("write_note", text=text)
    return {"saved": True, "chars": len(text)}


@tool
async def slow_lookup(symbol: str, seconds: float = 3.0) -> str:
    """A slow read-only lookup (gives tests time to kill a worker mid-call)."""
    import asyncio

    record("slow_lookup.start", symbol=symbol)
    await asyncio.sleep(seconds)
    record("slow_lookup", symbol=symbol)
    return f"{symbol} volume is high"


@tool(retry=RetryPolicy(maximum_attempts=2, initial_interval=timedelta(milliseconds=50)))
async def always_fails(reason: str) -> str:
    """A tool that always raises."""
    raise RuntimeError(f"broken: {reason}")


class Verdict(BaseModel):
    """A typed answer: what to do with a stock."""

    symbol: str
    action: Literal["buy", "sell", "hold"]
    confidence: float = Field(ge=0, le=1)


# -- approval-gated tools (tests.helpers.trader, tests.helpers.approval_agents) ------------


@tool(effect="side_effect", requires_approval=lambda order: order.quantity > 100)
async def buy(order: Order) -> str:
    """Buy shares; large orders need a person's consent."""
    record("buy", symbol=order.symbol, quantity=order.quantity)
    return f"bought {order.quantity} {order.symbol}"


@tool(effect="side_effect", requires_approval=True)
async def sell(symbol: str, quantity: int) -> str:
    """Sell shares (always needs consent)."""
    record("sell", symbol=symbol, quantity=quantity)
    return f"sold {quantity} {symbol}"


@tool(effect="side_effect", requires_approval=True, approval_timeout=timedelta(hours=24))
async def wire(amount: int) -> str:
    """Wire money; rejected when nobody decides within a day."""
    record("wire", amount=amount)
    return f"wired {amount}"


@tool(
    effect="side_effect",
    requires_approval=True,
    approval_timeout=timedelta(hours=24),
    on_timeout="approve",
)
async def rebalance(target: str) -> str:
    """Rebalance the portfolio; goes ahead when nobody objects within a day."""
    record("rebalance", target=target)
    return f"rebalanced to {target}"


@tool(effect="side_effect", requires_approval=True, approval_timeout=timedelta(hours=24))
async def close_account(reason: str) -> str:
    """Close the account; the run fails when nobody decides within a day."""
    record("close_account", reason=reason)
    return "closed"


TRADER_TOOLS = [buy, sell, wire, rebalance]
