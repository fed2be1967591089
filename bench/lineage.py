"""What a run's lineage adds to reading its state (``AgentClient.state(lineage=True)``).

From the repository root::

    .venv/bin/python -m bench.lineage [--rounds 20]

One dev server, one worker in this process. ``LongRun`` takes 20 tool-calling steps
and answers; it is forked three times, then rewound to step 10 (so its history has a
reset and a notice to read). Per round, alternating: the state without lineage (one
query, which replays the closed run on the worker), then with it (plus one visibility
listing of its forks, a describe and, for a rewound run, its history). Prints the
medians and their ratio, before and after the rewind.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from bench._long_run import finished_long_run
from smyth_temporal import AgentClient

STEPS = 20
FORKS = 3
REWIND_TO = 10


async def _rounds(agents: AgentClient, workflow_id: str, rounds: int) -> tuple[float, float]:
    plain, lineage = [], []
    for _ in range(rounds):
        started = time.perf_counter()
        await agents.state(workflow_id)
        plain.append(time.perf_counter() - started)
        started = time.perf_counter()
        state = await agents.state(workflow_id, lineage=True)
        lineage.append(time.perf_counter() - started)
        assert len(state.forks) == FORKS, state.forks
    return statistics.median(plain), statistics.median(lineage)


async def main(rounds: int) -> None:
    """Run, fork and time; rewind and time again."""
    async with finished_long_run("lineage", STEPS, []) as run:
        agents, workflow_id = run.agents, run.workflow_id
        for _ in range(FORKS):
            await agents.result((await agents.fork(workflow_id, at_step=STEPS)).id)
        before = await _rounds(agents, workflow_id, rounds)
        await agents.rewind(workflow_id, to_step=REWIND_TO)
        await agents.result(workflow_id)
        after = await _rounds(agents, workflow_id, rounds)
    for label, (plain, lineage) in (("never rewound", before), ("rewound once", after)):
        print(
            f"{label}: state {plain * 1000:.1f} ms, with lineage {lineage * 1000:.1f} ms "
            f"({lineage / plain:.2f}x, +{(lineage - plain) * 1000:.1f} ms), {STEPS + 1}-step "
            f"run with {FORKS} forks, median of {rounds}"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    asyncio.run(main(parser.parse_args().rounds))
