"""The market monitor example the demo runs, and the ledgers its tools write.

The examples are not part of the installed package: they live in the source tree
(``examples/market_monitor``). The demo's workers import the example's code; the demo
itself reads only its constants and, after the run, the JSON-lines ledgers its tools
append to (one line per tool execution's start and end, per alert, per sale).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smyth_temporal.demo._options import DemoError

__all__ = [
    "AGENT",
    "AGENT_NAME",
    "GATED_TOOL",
    "KILL_FROM_STEP",
    "SCRIPTED_MODEL",
    "SLOW_TOOL",
    "Example",
    "Execution",
    "RunFiles",
    "find_example",
    "read_entries",
    "read_executions",
]

AGENT = "examples.market_monitor.workflows:MarketMonitor"
"""The agent the demo's workers serve."""

AGENT_NAME = "MarketMonitor"
"""Its workflow type name."""

SCRIPTED_MODEL = "examples.market_monitor.script:model"
"""The worker's model provider when the demo runs offline."""

SLOW_TOOL = "get_volatility"
"""The example's slow tool (1.5 s): the kill lands in the middle of its first call."""

KILL_FROM_STEP = 3
"""The worker is also killed when a tool call of this step or a later one runs.

With the scripted model the first ``get_volatility`` call is made at step 3, so two
steps have completed by then: there is finished work that must not run again. A real
model may order its calls differently; any slow or late call serves.
"""

GATED_TOOL = "sell_position"
"""The example's tool that waits for a person's approval (large sales)."""


@dataclass(frozen=True)
class Example:
    """Where the market monitor example is, and the constants the demo needs from it."""

    root: Path
    """The directory that holds ``examples/`` (the workers run there)."""
    prompt: str
    """The task of the run."""
    ledger_env: str
    """The variable that tells the tools where the alert ledger is."""
    executions_file: str
    """The execution ledger's file name, beside the alert ledger."""
    trades_file: str
    """The trade ledger's file name, beside the alert ledger."""


def find_example(search: Sequence[Path] | None = None) -> Example:
    """Find ``examples/market_monitor`` and read its constants.

    The example is found from the current directory or beside an editable install of
    the package. The package's ``__init__`` is loaded on its own, so this process
    imports none of the example's code (only the workers do).

    Args:
        search: Directories to look in (default: the current one, then the checkout
            that holds the ``smyth_temporal`` package).

    Raises:
        DemoError: No checkout with the example was found.
    """
    if search is None:
        # This file is smyth_temporal/demo/_example.py: the checkout is two folders up.
        search = [Path.cwd(), Path(__file__).resolve().parents[2]]
    for root in search:
        package = root / "examples" / "market_monitor"
        if (package / "workflows.py").is_file():
            break
    else:
        raise DemoError(
            "smyth demo runs examples/market_monitor from a smyth-temporal source "
            "checkout; run it from the repository's root"
        )
    spec = importlib.util.spec_from_file_location("_smyth_demo_example", package / "__init__.py")
    if spec is None or spec.loader is None:
        raise DemoError(f"cannot load {package / '__init__.py'}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def constant(name: str) -> str:
        value = getattr(module, name, None)
        if not isinstance(value, str):
            raise DemoError(f"{package / '__init__.py'} does not define the string {name}")
        return value

    return Example(
        root=root.resolve(),
        prompt=constant("PROMPT"),
        ledger_env=constant("LEDGER_ENV"),
        executions_file=constant("EXECUTIONS_FILE"),
        trades_file=constant("TRADES_FILE"),
    )


@dataclass(frozen=True)
class RunFiles:
    """Where one demo run keeps its files: the tools' ledgers and the workers' logs."""

    root: Path
    """The run's directory (``.smyth/demo/``, made fresh each time)."""
    alerts: Path
    """The alert ledger (its path is handed to the workers)."""
    executions: Path
    """The execution ledger, beside it."""
    trades: Path
    """The trade ledger, beside it."""

    @classmethod
    def under(cls, root: Path, example: Example) -> RunFiles:
        """The files of a run in ``root``, named as ``example`` names them."""
        return cls(
            root=root,
            alerts=root / "alerts.jsonl",
            executions=root / example.executions_file,
            trades=root / example.trades_file,
        )


@dataclass(frozen=True)
class Execution:
    """One execution of a tool, from the execution ledger the example's tools write."""

    tool: str
    """The tool's name."""
    arguments: dict[str, Any]
    """What it was called with."""
    key: str
    """The call's idempotency key (the same for every attempt of the call)."""
    call_id: str
    """The model's id for the call."""
    step: int
    """The agent step that made the call."""
    attempt: int
    """The activity attempt, from 1."""
    pid: int
    """The worker process that ran it."""
    started: float
    """Wall-clock time it started (seconds since the epoch)."""
    ended: float | None = None
    """Wall-clock time it ended; ``None`` while running, or when its worker died."""
    error: str | None = None
    """The exception that ended it, if one did."""

    @property
    def label(self) -> str:
        """``get_quote(ACME)``."""
        return f"{self.tool}({', '.join(str(v) for v in self.arguments.values())})"

    @property
    def kill_point(self) -> bool:
        """Whether the demo kills the worker running this execution now."""
        return self.ended is None and (self.tool == SLOW_TOOL or self.step >= KILL_FROM_STEP)


def read_executions(path: Path) -> list[Execution]:
    """The executions in an execution ledger, in the order they started.

    Each execution writes a ``start`` line and, unless its process died, an ``end``
    line; they are paired by idempotency key, attempt and process.
    """
    executions: dict[tuple[str, int, int], Execution] = {}
    for entry in read_entries(path):
        ident = (str(entry["key"]), int(entry["attempt"]), int(entry["pid"]))
        if entry.get("event") == "start":
            executions[ident] = Execution(
                tool=str(entry["tool"]),
                arguments=dict(entry.get("arguments") or {}),
                key=ident[0],
                call_id=str(entry.get("call_id", "")),
                step=int(entry["step"]),
                attempt=ident[1],
                pid=ident[2],
                started=float(entry["time"]),
            )
        elif ident in executions:
            executions[ident] = dataclasses.replace(
                executions[ident], ended=float(entry["time"]), error=entry.get("error")
            )
    return sorted(executions.values(), key=lambda e: e.started)


def read_entries(path: Path) -> list[dict[str, Any]]:
    """The entries of a JSON-lines ledger (none when it does not exist yet)."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    entries: list[dict[str, Any]] = []
    for line in text.splitlines():
        # A line a worker is writing right now may be cut short; it is read next time.
        with contextlib.suppress(json.JSONDecodeError):
            entries.append(json.loads(line))
    return entries
