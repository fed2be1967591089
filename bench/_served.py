"""The setting the gateway's benchmarks share (``bench.gateway``, ``bench.agui``, ``bench.a2a``).

One dev server; one ``StepBench`` worker in a process of its own
(``bench._step_worker``), its ``ScriptedModel`` always answering the same 30-word
sentence (streamed a word at a time); the gateway in a process of its own, started as
users start it (``smyth serve StepBench --keys-file ...``) with one operator key, so its
CPU time is its own (read from ``/proc``). The baseline, an ``AgentClient`` in this
process, and the gateway are thus both clients of the one worker, as an application
and a gateway are (with the worker in this process, the baseline's calls shared its
event loop, and its p50 jumped between two modes 50 ms apart from run to run).

A benchmark names its ``Way``\\ s (one call each: a session message, a task, a turn)
and hands them to ``take_turns``: the ways take turns, one call each per round in an
order that rotates, so their sessions grow alike; one untimed round first opens
connections and starts the sessions. ``table`` prints each way's p50 and p95 beside
its baseline's, and the time to the first text where a way reports it;
``serve_and_measure`` is a benchmark's ``main``, and ``launch`` runs it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from temporalio.client import Client

from bench._common import free_port, percentile
from bench._results import headline, write_json
from bench._step_worker import step_worker_process
from smyth_temporal import AgentClient, configure_logging
from smyth_temporal.gateway import KeyStore
from smyth_temporal.testing import new_task_queue, start_dev_environment

AGENT = "StepBench"
TENANT = "bench"
PROMPT = "How is ACME doing?"
STARTUP_TIMEOUT = 30.0

Call = Callable[[str], Awaitable[float | None]]
"""One call, in the session its argument names; a streamed one returns when
(``time.perf_counter``) its first text arrived."""


@dataclass
class Way:
    """A way to make the call a benchmark times, and the way it is compared with."""

    name: str
    call: Call
    baseline: str | None
    """The way it is compared with (itself, for the baseline); ``None``: a floor."""
    times: list[float] = field(default_factory=list)
    """Seconds per call, round trip."""
    first_text: list[float] = field(default_factory=list)
    """Seconds from the call to its first text (ways that report it)."""


@dataclass
class Gateway:
    """A gateway process: its URL, a key, and its process id."""

    url: str
    key: str
    pid: int
    more_keys: list[str] = field(default_factory=list)
    """Other operator keys of the tenant (``gateway_process(keys=...)``)."""

    def cpu_seconds(self) -> float:
        """User plus system CPU time of the process so far."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.asynccontextmanager
async def gateway_process(
    client: Client, task_queue: str, *, keys: int = 1
) -> AsyncIterator[Gateway]:
    """``smyth serve StepBench`` in a process of its own, with ``keys`` operator keys.

    (A key may hold 16 event streams open at once: a fan-out to more readers needs more.)
    """
    with tempfile.TemporaryDirectory() as directory:
        store = KeyStore(Path(directory) / "keys.json")
        made = [
            store.create(tenant=TENANT, role="operator", name=f"bench-{n}")[1] for n in range(keys)
        ]
        port = free_port()
        process = await asyncio.create_subprocess_exec(
            str(Path(sys.executable).with_name("smyth")),
            "serve",
            AGENT,
            f"--port={port}",
            f"--keys-file={store.path}",
            f"--address={client.service_client.config.target_host}",
            f"--task-queue={task_queue}",
            "--log-level=warning",
        )
        served = Gateway(f"http://127.0.0.1:{port}", made[0], process.pid, made[1:])
        try:
            await _until_healthy(served.url)
            yield served
        finally:
            process.terminate()
            await process.wait()


async def _until_healthy(url: str) -> None:
    async with httpx.AsyncClient(base_url=url) as http, asyncio.timeout(STARTUP_TIMEOUT):
        while True:
            with contextlib.suppress(httpx.TransportError):
                if (await http.get("/healthz")).status_code == 200:
                    return
            await asyncio.sleep(0.1)


def ms(values: Sequence[float]) -> str:
    """p50 and p95 of ``values`` (seconds) in milliseconds, as two columns."""
    return f"{percentile(values, 0.5) * 1000:7.1f} {percentile(values, 0.95) * 1000:7.1f}"


async def take_turns(ways: list[Way], rounds: int, session: Callable[[int], str]) -> None:
    """``rounds`` timed rounds (after one untimed), each way once per round in order.

    ``session`` names the session of the way at that index (each way has its own).
    """
    for number in range(rounds + 1):
        # Each round in another order: no way always follows the same one (whose
        # session may still be settling its turn on the one worker).
        shift = number % len(ways)
        for index, way in [*enumerate(ways)][shift:] + [*enumerate(ways)][:shift]:
            began = time.perf_counter()
            first = await way.call(session(index))
            if number:  # the first round opens connections and starts the sessions
                way.times.append(time.perf_counter() - began)
                if first is not None:
                    way.first_text.append(first - began)


def p50(values: Sequence[float]) -> float:
    """The median, in seconds."""
    return percentile(values, 0.5)


def table(title: str, ways: list[Way]) -> dict[str, Way]:
    """Print each way's p50, p95, ratio and added time to its baseline, and first text.

    Returns:
        The ways by name.
    """
    by_name = {way.name: way for way in ways}
    width = max(len(way.name) for way in ways) + 2
    print(f"\n{title}")
    print(
        f"  {'path':{width}} {'p50 ms':>7} {'p95 ms':>7} {'ratio':>6} {'added':>8}"
        f" {'first text p50':>15} {'p95':>7}"
    )
    for way in ways:
        first = ms(way.first_text) if way.first_text else ""
        if way.baseline is None:
            print(f"  {way.name:{width}} {ms(way.times)}")
            continue
        base, mine = p50(by_name[way.baseline].times), p50(way.times)
        print(
            f"  {way.name:{width}} {ms(way.times)} {mine / base:5.2f}x"
            f" {(mine - base) * 1000:+6.1f}ms {first:>23}"
        )
    return by_name


def goal(name: str, way: Way, by_name: dict[str, Way], at_most: float) -> None:
    """Print whether ``way``'s p50 is within ``at_most`` times its baseline's."""
    assert way.baseline is not None
    ratio = p50(way.times) / p50(by_name[way.baseline].times)
    print(f"  goal {name}: at most {at_most}x: {'met' if ratio <= at_most else 'NOT met'}")


Measure = Callable[[AgentClient, Gateway, int], Awaitable[list[dict[str, Any]]]]
"""A benchmark's measurement: its headline rows, given the client, the gateway, rounds."""


async def serve_and_measure(
    bench: str,
    measure: Measure,
    *,
    rounds: int,
    arguments: Callable[[argparse.ArgumentParser], None] | None = None,
    then: Callable[[Client, argparse.Namespace], Awaitable[None]] | None = None,
) -> None:
    """A benchmark's ``main``: the setting, ``measure``, and its rows written with ``--json``.

    Args:
        bench: Its name (``python -m bench.<bench>``, its results' name).
        measure: The timed part.
        rounds: The default of ``--rounds``.
        arguments: Adds the benchmark's own options.
        then: Runs after the setting is taken down (with its own, if it needs one).
    """
    parser = argparse.ArgumentParser(prog=f"python -m bench.{bench}")
    parser.add_argument("--rounds", type=int, default=rounds, help="timed rounds")
    parser.add_argument("--json", type=Path, help="write the results here (bench.report)")
    if arguments is not None:
        arguments(parser)
    args = parser.parse_args()
    configure_logging("WARNING")
    env = await start_dev_environment()
    try:
        task_queue = new_task_queue(f"bench-{bench}")
        address = env.client.service_client.config.target_host
        async with (
            step_worker_process(address, task_queue),
            gateway_process(env.client, task_queue) as served,
        ):
            agents = AgentClient(env.client, task_queue=task_queue)
            rows = await measure(agents, served, args.rounds)
            if args.json:
                write_json(args.json, bench, rows, {})
        if then is not None:
            await then(env.client, args)
    finally:
        await env.shutdown()


def launch(main: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Run a benchmark's ``main`` and leave at once."""
    asyncio.run(main())
    # temporalio's Rust threads can outlive the interpreter (temporalio/sdk-python#300).
    sys.stdout.flush()
    os._exit(0)


def protocol_headlines(
    way: Way,
    streamed: Way,
    first_baseline: Way,
    by_name: dict[str, Way],
    *,
    metrics: tuple[str, str],
    keys: tuple[str, str],
    notes: tuple[str, str],
) -> list[dict[str, Any]]:
    """A protocol's two guarded rows: ``way``'s round trip, then ``streamed``'s first text.

    Args:
        way: The timed round trip, beside its baseline.
        streamed: The way whose first text is timed, beside ``first_baseline``'s.
        first_baseline: The in-process way whose first text is the baseline.
        by_name: The ways by name (``table``).
        metrics: The two rows' names.
        keys: Their keys (``bench/bounds.toml``).
        notes: Their notes.
    """
    assert way.baseline is not None
    pairs = [
        (p50(way.times), p50(by_name[way.baseline].times)),
        (p50(streamed.first_text), p50(first_baseline.first_text)),
    ]
    return [
        headline(metric, mine * 1000, base * 1000, "ms", note, key=key)
        for (mine, base), metric, key, note in zip(pairs, metrics, keys, notes, strict=True)
    ]
