"""What a bench writes for ``bench.report``: its numbers as JSON, with the machine.

Every bench that takes ``--json PATH`` writes one object::

    {"bench": "crash_recovery", "machine": {...}, "when": "2026-11-25T01:02:03Z",
     "headline": [{"metric": ..., "smyth": ..., "baseline": ..., "unit": ..., ...}],
     "data": {...}}

``headline`` rows go into the summary table (ratio = smyth / baseline); ``data`` is
whatever the bench's plots need.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shutil
import subprocess
from pathlib import Path
from typing import Any

import temporalio

from bench._common import percentile

RESULTS_DIR = Path(__file__).resolve().parent / "results"
"""Where ``make bench`` writes the JSON, the summary and the plots."""


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _temporal_cli() -> str:
    from smyth_temporal.devserver import find_binary

    try:
        cli: str | None = find_binary("temporal")
    except Exception:
        cli = shutil.which("temporal")
    if not cli:
        return "unknown"
    try:
        out = subprocess.run([cli, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() or "unknown"


def machine() -> dict[str, Any]:
    """The machine a bench ran on, as the README quotes it."""
    memory = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = int(line.split()[1]) * 1024
    except OSError:
        pass
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": round(memory / 2**30, 1),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "temporalio": temporalio.__version__,
        "temporal_cli": _temporal_cli(),
    }


def headline(
    metric: str,
    smyth: float,
    baseline: float | None,
    unit: str,
    note: str = "",
    *,
    key: str | None = None,
) -> dict[str, Any]:
    """One row of the summary table: the SDK's figure beside the baseline's.

    A row with a ``key`` is guarded: ``bench.check`` fails ``make bench`` when its
    ratio passes the bound ``bench/bounds.toml`` gives ``<bench>.<key>``.
    """
    row: dict[str, Any] = {
        "metric": metric,
        "smyth": smyth,
        "baseline": baseline,
        "ratio": smyth / baseline if baseline else None,
        "unit": unit,
        "note": note,
    }
    if key is not None:
        row["key"] = key
    return row


def percentile_rows(
    metric: str, smyth: list[float], baseline: list[float], note: str
) -> list[dict[str, Any]]:
    """Print p50 and p95 (ms) of both sides and their ratios; one headline row each.

    ``smyth`` and ``baseline`` are seconds, measured in the same run of the bench.
    """
    for name, values in (("smyth", smyth), ("baseline", baseline)):
        print(
            f"{name:9} p50 {percentile(values, 0.5) * 1000:6.1f} ms  "
            f"p95 {percentile(values, 0.95) * 1000:6.1f} ms  (n={len(values)})"
        )
    rows = []
    for label, fraction in (("p50", 0.5), ("p95", 0.95)):
        ours, theirs = percentile(smyth, fraction) * 1000, percentile(baseline, fraction) * 1000
        print(f"ratio {label}: {ours / theirs:.2f}x")
        rows.append(headline(f"{metric}, {label}", round(ours, 1), round(theirs, 1), "ms", note))
    return rows


def write_json(
    path: Path, bench: str, headlines: list[dict[str, Any]], data: dict[str, Any]
) -> None:
    """Write a bench's results where ``bench.report`` finds them."""
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "bench": bench,
        "when": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine(),
        "headline": headlines,
        "data": data,
    }
    path.write_text(json.dumps(document, indent=2) + "\n")
    print(f"\nwrote {path}")
