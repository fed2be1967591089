"""The summary of ``make bench``: a table of every bench's headline numbers, and plots.

From the repository root, after benches wrote their ``--json`` files::

    .venv/bin/python -m bench.report [--results bench/results]

Reads every ``*.json`` in the results directory (see ``bench._results``) and writes:

- ``summary.md``: the machine, then one row per headline figure: the SDK's number,
  the baseline's, and their ratio (smyth / baseline: below 1 is better for every
  figure here: seconds, bytes, memory);
- ``history_bytes.png``: history bytes of one run against its steps, with the payload
  store (the SDK's default) and without (every payload inline) (``history_bytes``);
- ``store_bytes.png``: the payload store's bytes on disk against steps, beside the
  history bytes of the same runs (``history_bytes``);
- ``parked_rss.png``: worker RSS against parked runs, smyth agents waiting for an
  approval and plain workflows waiting for an update (``parked_agents``);
- ``crash_recovery.png``: seconds from a SIGKILL to the in-flight call's re-run and to
  completion, SDK defaults and baseline (``crash_recovery``).

A plot whose bench has no JSON is skipped. Needs matplotlib (the ``bench`` extra).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from bench._results import RESULTS_DIR

MiB = 1024 * 1024


def load(results: Path) -> dict[str, dict[str, Any]]:
    """Every bench's JSON in ``results``, by bench name."""
    documents: dict[str, dict[str, Any]] = {}
    for path in sorted(results.glob("*.json")):
        document = json.loads(path.read_text())
        documents[document["bench"]] = document
    return documents


def _number(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    return f"{value:#.3g} {unit}" if value < 100 else f"{value:,.0f} {unit}"


def summary(documents: dict[str, dict[str, Any]], results: Path) -> str:
    """The Markdown table of headline figures, with the machine they ran on."""
    lines = ["# Benchmark summary", ""]
    machines = {json.dumps(d["machine"], sort_keys=True) for d in documents.values()}
    for described in sorted(machines):
        m = json.loads(described)
        lines.append(
            f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB, {m['os']}; "
            f"Python {m['python']}, temporalio {m['temporalio']}, {m['temporal_cli']} "
            "(one local dev server, in memory)."
        )
    lines += [
        "",
        "Each bench runs the SDK and its baseline side by side on one dev server. "
        "Ratio = smyth / baseline (below 1: smyth is faster or smaller).",
        "",
        "| bench | figure | smyth | baseline | ratio | notes | measured |",
        "| --- | --- | ---: | ---: | ---: | --- | --- |",
    ]
    for name, document in sorted(documents.items()):
        for row in document["headline"]:
            ratio = f"{row['ratio']:.3g}x" if row["ratio"] is not None else "-"
            lines.append(
                f"| `{name}` | {row['metric']} | {_number(row['smyth'], row['unit'])} | "
                f"{_number(row['baseline'], row['unit'])} | {ratio} | {row['note']} | "
                f"{document['when'][:10]} |"
            )
    plots = sorted(p.name for p in results.glob("*.png"))
    if plots:
        lines += ["", "Plots: " + ", ".join(f"[{p}]({p})" for p in plots) + "."]
    return "\n".join(lines) + "\n"


def plot_history(document: dict[str, Any], out: Path) -> list[Path]:
    """``history_bytes.png`` and ``store_bytes.png`` from the history bench's runs."""
    import matplotlib.pyplot as plt

    runs = [r for r in document["data"]["runs"] if not r["error"]]
    stored = sorted(
        (r for r in runs if r["storage"] and r.get("chunked", True)), key=lambda r: r["steps"]
    )
    inline = sorted((r for r in runs if not r["storage"]), key=lambda r: r["steps"])
    written = []

    figure, axes = plt.subplots(figsize=(7, 4.5))
    if inline:
        axes.plot(
            [r["steps"] for r in inline],
            [r["history_bytes"] / MiB for r in inline],
            "o-",
            label="baseline: every payload inline",
        )
    if stored:
        axes.plot(
            [r["steps"] for r in stored],
            [r["history_bytes"] / MiB for r in stored],
            "s-",
            label="smyth: payload store (default)",
        )
    axes.axhline(50, color="grey", linestyle=":", label="Temporal's 50 MB limit")
    axes.set(xlabel="agent steps (4 KB tool result each)", ylabel="history (MiB)")
    axes.set_title("History bytes of one agent run")
    axes.legend()
    axes.grid(alpha=0.3)
    figure.tight_layout()
    written.append(out / "history_bytes.png")
    figure.savefig(written[-1], dpi=110)
    plt.close(figure)

    if stored:
        figure, axes = plt.subplots(figsize=(7, 4.5))
        steps = [r["steps"] for r in stored]
        axes.plot(steps, [r["store_bytes"] / MiB for r in stored], "s-", label="store on disk")
        if all("store_logical" in r for r in stored):
            axes.plot(
                steps,
                [r["store_logical"] / MiB for r in stored],
                "^-",
                label="store, files' total size",
            )
        axes.plot(steps, [r["history_bytes"] / MiB for r in stored], "o--", label="history")
        axes.set(xlabel="agent steps (4 KB tool result each)", ylabel="MiB")
        axes.set_title("Payload store and history of one agent run (smyth defaults)")
        axes.legend()
        axes.grid(alpha=0.3)
        figure.tight_layout()
        written.append(out / "store_bytes.png")
        figure.savefig(written[-1], dpi=110)
        plt.close(figure)
    return written


def plot_parked(document: dict[str, Any], out: Path) -> list[Path]:
    """``parked_rss.png`` from the parked-agents bench."""
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.5))
    for key, label, marker in (
        ("smyth", "smyth: agents waiting for an approval", "s-"),
        ("baseline", "baseline: plain workflows waiting for an update", "o-"),
        ("bookkeeping", "the same with visibility, a timer and events by hand", "^-"),
    ):
        if key not in document["data"]:
            continue  # results from before the bookkeeping baseline
        samples = sorted(document["data"][key], key=lambda s: s["runs"])
        runs = [s["runs"] for s in samples]
        (line,) = axes.plot(runs, [s["parked"] / MiB for s in samples], marker, label=label)
        axes.plot(
            runs,
            [s["idle"] / MiB for s in samples],
            ":",
            color=line.get_color(),
            label=f"{key}: idle worker",
        )
    axes.set(xlabel="parked runs on one worker", ylabel="worker RSS (MiB)", ylim=(0, None))
    axes.set_title("Worker memory of parked runs (all cached)")
    axes.set_ylim(0, axes.get_ylim()[1] * 1.4)  # room for the legend above the lines
    axes.legend(loc="upper left", fontsize="small")
    axes.grid(alpha=0.3)
    figure.tight_layout()
    path = out / "parked_rss.png"
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return [path]


def plot_recovery(document: dict[str, Any], out: Path) -> list[Path]:
    """``crash_recovery.png`` from the crash-recovery bench: medians and every sample."""
    import matplotlib.pyplot as plt

    samples = document["data"]["samples"]
    names = [n for n in ("defaults", "baseline") if n in samples] or sorted(samples)
    figure, axes = plt.subplots(figsize=(7, 4.5))
    width = 0.38
    for offset, (what, label) in enumerate(
        (("resumed", "in-flight call re-run"), ("done", "run completed"))
    ):
        xs = [i + (offset - 0.5) * width for i in range(len(names))]
        medians = [document["data"]["medians"][n][what] for n in names]
        axes.bar(xs, medians, width, label=f"{label} (median)")
        for x, name in zip(xs, names, strict=True):
            values = [s[what] for s in samples[name]]
            axes.plot([x] * len(values), values, "k.", markersize=4)
    axes.axhline(3, color="grey", linestyle=":", label="goal: re-run within 3 s")
    short = {
        "defaults": "smyth, SDK defaults\n(heartbeat 2 s, retry 250 ms)",
        "baseline": "plain temporalio, its defaults\n(10 s start-to-close, no heartbeat)",
    }
    axes.set_xticks(range(len(names)), [short.get(n, n) for n in names], fontsize=8)
    axes.set(ylabel="seconds after SIGKILL")
    axes.set_title("Crash recovery: a worker SIGKILLed mid tool call")
    axes.legend(fontsize=8)
    axes.grid(alpha=0.3, axis="y")
    figure.tight_layout()
    path = out / "crash_recovery.png"
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return [path]


PLOTTERS = {
    "history_bytes": plot_history,
    "parked_agents": plot_parked,
    "crash_recovery": plot_recovery,
}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.report")
    parser.add_argument("--results", type=Path, default=RESULTS_DIR)
    args = parser.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    documents = load(args.results)
    if not documents:
        raise SystemExit(f"no bench results (*.json) in {args.results}")
    for name, document in documents.items():
        plotter = PLOTTERS.get(name)
        if plotter is not None:
            for path in plotter(document, args.results):
                print(f"wrote {path}")
    target = args.results / "summary.md"
    target.write_text(summary(documents, args.results))
    print(f"wrote {target}\n")
    print(target.read_text())


if __name__ == "__main__":
    main()
