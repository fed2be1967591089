"""Market monitor: an agent that watches a few stocks, reads the news and raises alerts.

When a stock crashes it also sells part of the desk's position in it, a trade that
waits for a person's approval. The example behind ``smyth demo``; see README.md in
this folder.
"""

__all__ = [
    "EXECUTIONS_FILE",
    "LEDGER_ENV",
    "POSITION_SHARES",
    "PROMPT",
    "TRADES_FILE",
    "WATCHLIST",
]

WATCHLIST = ("ACME", "GLOBEX", "INITECH")
"""The symbols the monitor looks at."""

POSITION_SHARES = 10_000
"""Shares the desk holds of every symbol on the watchlist (the prompt says so)."""

PROMPT = (
    f"Check on my watchlist: {', '.join(WATCHLIST)}. Get the quotes; for every symbol "
    "that moved 3% or more today, read its news and check its volatility. Send an alert "
    f"for any move of 2 standard deviations or more. We hold {POSITION_SHARES:,} shares "
    "of each: for a drop of 3 standard deviations or more, sell half of our position in "
    "that stock and say why. Then give me a short report."
)
"""The task every run of the example starts from."""

LEDGER_ENV = "SMYTH_DEMO_LEDGER"
"""The variable naming the alert ledger (default ``.smyth/demo/alerts.jsonl``).

The execution ledger, one line per start and end of every tool execution, is the file
``EXECUTIONS_FILE`` beside it, and the trade ledger ``TRADES_FILE``; ``smyth demo``
reads them all to prove what ran how often.
"""

EXECUTIONS_FILE = "executions.jsonl"
"""The name of the execution ledger, in the alert ledger's folder."""

TRADES_FILE = "trades.jsonl"
"""The name of the trade ledger (one line per sale made), in the alert ledger's folder."""
