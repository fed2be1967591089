"""Benchmarks of smyth-temporal on a local dev server (see README.md)."""
