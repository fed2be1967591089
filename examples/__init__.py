"""Runnable examples of smyth-temporal agents, one folder per scenario (see README.md)."""
