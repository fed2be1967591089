"""Fail ``make bench`` when a guarded figure passes its recorded bound.

From the repository root, after the benches have written ``bench/results/*.json``::

    .venv/bin/python -m bench.check [--results bench/results] [--bounds bench/bounds.toml]

Every bench writes headline rows, each its SDK figure beside a baseline measured in the
same run on the same server, and their ratio (``bench._results.headline``). A row with
a ``key`` is guarded: ``bench/bounds.toml`` holds the bound of ``<bench>.<key>``, a
``max`` for a cost (time, bytes: smyth / baseline at most this) or a ``min`` for a rate
(runs per second: at least this). A guarded row missing from the results fails too: a
bound nobody measures guards nothing. ``make bench`` runs this last, ``make test``
never (it starts no server; ``tests/bench/test_bench_check.py`` tests ``verdict``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench._results import RESULTS_DIR

BOUNDS_FILE = Path(__file__).resolve().parent / "bounds.toml"
"""The one place the bounds are recorded, with why each is what it is."""


@dataclass(frozen=True)
class Bound:
    """What a guarded ratio (smyth / baseline) may be."""

    max: float | None = None
    """At most this (a cost: lower is better)."""
    min: float | None = None
    """At least this (a rate: higher is better)."""
    why: str = ""
    """Where the bound comes from (the measurements it was chosen from)."""

    def passed_by(self, ratio: float) -> bool:
        """Whether ``ratio`` is outside the bound."""
        return (self.max is not None and ratio > self.max) or (
            self.min is not None and ratio < self.min
        )

    def describe(self) -> str:
        """``<= 1.1x``, ``>= 0.6x`` or both."""
        parts = [f"<= {self.max}x"] if self.max is not None else []
        parts += [f">= {self.min}x"] if self.min is not None else []
        return " and ".join(parts)


@dataclass(frozen=True)
class Finding:
    """One guarded figure's verdict."""

    name: str
    """``<bench>.<key>``."""
    ratio: float | None
    """``None``: not measured (or no baseline)."""
    bound: Bound

    @property
    def failed(self) -> bool:
        """Unmeasured, or outside its bound."""
        return self.ratio is None or self.bound.passed_by(self.ratio)

    def line(self) -> str:
        """One line of the report."""
        shown = "not measured" if self.ratio is None else f"{self.ratio:.3f}x"
        verdict = "FAIL" if self.failed else "ok"
        return f"  {verdict:4} {self.name:40} {shown:>13}  bound {self.bound.describe()}"


def load_bounds(path: Path = BOUNDS_FILE) -> dict[str, Bound]:
    """The bounds of ``bounds.toml``: ``[<bench>.<key>]`` tables of ``max``/``min``/``why``."""
    document = tomllib.loads(path.read_text())
    bounds: dict[str, Bound] = {}
    for bench, table in document.items():
        for key, entry in table.items():
            unknown = set(entry) - {"max", "min", "why"}
            if unknown or not ({"max", "min"} & set(entry)):
                raise ValueError(f"{path}: [{bench}.{key}] needs max and/or min (and why)")
            bounds[f"{bench}.{key}"] = Bound(
                entry.get("max"), entry.get("min"), entry.get("why", "")
            )
    return bounds


def ratios(documents: Mapping[str, Mapping[str, Any]]) -> dict[str, float | None]:
    """Every guarded row's ratio, by ``<bench>.<key>``, from the benches' JSON documents."""
    found: dict[str, float | None] = {}
    for bench, document in documents.items():
        for row in document.get("headline", []):
            if row.get("key"):
                found[f"{bench}.{row['key']}"] = row.get("ratio")
    return found


def verdict(measured: Mapping[str, float | None], bounds: Mapping[str, Bound]) -> list[Finding]:
    """Each bound's finding, in the bounds' order (a pure function: no files, no server)."""
    return [Finding(name, measured.get(name), bound) for name, bound in bounds.items()]


def load_results(directory: Path) -> dict[str, dict[str, Any]]:
    """The benches' JSON documents in ``directory``, by bench name."""
    documents: dict[str, dict[str, Any]] = {}
    for path in sorted(directory.glob("*.json")):
        document = json.loads(path.read_text())
        documents[document.get("bench", path.stem)] = document
    return documents


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.check")
    parser.add_argument("--results", type=Path, default=RESULTS_DIR)
    parser.add_argument("--bounds", type=Path, default=BOUNDS_FILE)
    args = parser.parse_args(argv)
    findings = verdict(ratios(load_results(args.results)), load_bounds(args.bounds))
    print(f"Guarded ratios (smyth / baseline), bounds from {args.bounds}:")
    for finding in findings:
        print(finding.line())
    failed = [f.name for f in findings if f.failed]
    if failed:
        print(f"\n{len(failed)} of {len(findings)} past their bound: {', '.join(failed)}")
        return 1
    print(f"\nall {len(findings)} within their bounds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
