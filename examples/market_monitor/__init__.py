"""Market monitor: an agent that watches a few stocks, reads the news and raises alerts.

The example behind ``smyth demo``; see README.md in this folder.
"""

__all__ = ["EXECUTIONS_FILE", "LEDGER_ENV", "PROMPT", "WATCHLIST"]

WATCHLIST = ("ACME", "GLOBEX", "INITECH")
"""The symbols the monitor looks at."""

PROMPT = (
    f"Check on my watchlist: {', '.join(WATCHLIST)}. Get the quotes; for every symbol "
    "that moved 3% or more today, read its news and check its volatility. Send an alert "
    "for any move of 2 standard deviations or more, then give me a short report."
)
"""The task every run of the example starts from."""

LEDGER_ENV = "SMYTH_DEMO_LEDGER"
"""The variable naming the alert ledger (default ``.smyth/demo/alerts.jsonl``).

The execution ledger, one line per start and end of every tool execution, is the file
``EXECUTIONS_FILE`` beside it; ``smyth demo`` reads both to prove what ran how often.
"""

EXECUTIONS_FILE = "executions.jsonl"
"""The name of the execution ledger, in the alert ledger's folder."""
