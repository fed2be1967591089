"""``run_demo``: the demo's entry point, with its exit codes and signal handling."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from typing import TextIO

from smyth_temporal._logging import configure_logging
from smyth_temporal.demo._options import DemoOptions
from smyth_temporal.demo._render import error_line
from smyth_temporal.demo._scenario import Scenario
from smyth_temporal.exceptions import SmythError

__all__ = ["CORE_SETTLE_DELAY", "run_demo"]

CORE_SETTLE_DELAY = 0.1
"""Seconds the demo lets temporalio's core threads settle before it returns.

Its core threads still release Python objects for a moment after the last call, and
an interpreter that finalizes meanwhile can abort the process (temporalio/sdk-python#300).
"""


def run_demo(options: DemoOptions, out: TextIO | None = None) -> int:
    """Run the demo: a worker killed mid-run, an approval, and the proofs.

    Args:
        options: What to run against, and how (those of ``smyth demo``).
        out: Where the narration goes (default: stdout); errors go to stderr.

    Returns:
        0 when the run recovered from the crash and the ledgers and the run's history
        prove that no completed call ran twice and the approved call ran once, after
        its approval; 1 otherwise (with a one-line reason on stderr); 130 or 143 when
        interrupted by SIGINT or SIGTERM. Every process the demo started is stopped
        on every path.

    Added in 0.3.0.
    """
    configure_logging(options.log_level or "warning", json=options.log_format == "json")
    try:
        return asyncio.run(_main(options, out or sys.stdout))
    except SmythError as exc:
        print(error_line(f"demo: {exc}"), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(error_line("demo interrupted; its processes were stopped"), file=sys.stderr)
        return 130
    except asyncio.CancelledError:  # SIGTERM, see _main
        print(error_line("demo terminated; its processes were stopped"), file=sys.stderr)
        return 143


async def _main(options: DemoOptions, out: TextIO) -> int:
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    installed = False
    if task is not None:
        # SIGTERM cancels the demo as Ctrl-C does, so the finally blocks stop the
        # workers and the server instead of leaving them behind.
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGTERM, task.cancel)
            installed = True
    try:
        return await Scenario(options, out).run()
    finally:
        if installed:
            loop.remove_signal_handler(signal.SIGTERM)
        await asyncio.sleep(CORE_SETTLE_DELAY)
