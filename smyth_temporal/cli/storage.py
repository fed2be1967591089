"""``smyth storage stats`` and ``smyth storage gc``: the content-addressed payload store."""

from __future__ import annotations

import asyncio
import sys
from datetime import timedelta
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn

from smyth_temporal.cli._common import CommonOptions, command, run, status
from smyth_temporal.cli.schedules import parse_duration
from smyth_temporal.clients import connect_client, namespaces_to_scan, referenced_digests
from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.storage import (
    ContentAddressedFileDriver,
    default_payload_storage,
    mark_and_sweep,
    read_mark,
    recorded_namespaces,
    store_clock,
    store_stats,
)

__all__ = ["DEFAULT_GRACE", "MIN_AGE", "app"]

app = typer.Typer(
    help="The payload store (SMYTH_PAYLOAD_PATH): its size, and removing payloads that no "
    "history or schedule the server still keeps refers to.",
    no_args_is_help=True,
)

MIN_AGE = timedelta(hours=1)
"""The youngest file ``gc`` may remove without ``--force``: a payload an activity wrote
just now may not be referenced by history yet."""

DEFAULT_GRACE = timedelta(hours=1)
"""How long a mark waits before what it marked may be removed (``--grace``)."""

_PHASES = frozenset({"reading the store", "removing"})


def _store_root() -> Path:
    storage = default_payload_storage()
    drivers = storage.drivers if storage is not None else []
    if len(drivers) != 1 or not isinstance(drivers[0], ContentAddressedFileDriver):
        raise ConfigurationError(
            "the payload store is off (SMYTH_PAYLOAD_STORAGE=off): there is nothing to look at"
        )
    return drivers[0].root


def _span(value: str | timedelta) -> timedelta:
    """A duration option's value, 0 allowed (Typer hands a default over as it is)."""
    if isinstance(value, timedelta):
        return value
    return timedelta() if value.strip() in ("0", "0s") else parse_duration(value)


def _size(count: int) -> str:
    if count < 1024:
        return f"{count:,} bytes"
    size = count / 1024
    for unit in ("KiB", "MiB"):
        if size < 1024:
            return f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


@app.command(
    "stats",
    help="The store's size, its whole and chunked payloads, and how much their chunks are "
    "shared (each counted once however many payloads contain it).",
)
def stats() -> None:
    """Print the store's size and reference counts."""
    root = _store_root()
    found = store_stats(root)
    print(
        f"{root}: {found.files:,} files, {_size(found.bytes)} ({_size(found.disk_bytes)} on disk)"
    )
    print(f"  whole payloads    {found.whole:,} ({_size(found.whole_bytes)})")
    print(
        f"  chunked payloads  {found.roots:,}, over {found.chunks:,} chunks "
        f"({_size(found.chunk_bytes)}) and {found.nodes:,} inner nodes"
    )
    print(
        f"  shared chunks     {found.shared_chunks:,} in more than one payload "
        f"(at most {found.max_chunk_refs:,})"
    )
    print(
        f"  logical size      {_size(found.logical_bytes)} stored whole: "
        f"dedup ratio {found.dedup_ratio:.1f}x"
    )


@command(
    app,
    "gc",
    help="Remove stored payloads nothing needs, in two passes a grace period apart. Each "
    "run reads every retained history (open and closed runs), open run and schedule of "
    "every namespace that uses the store; removes what the previous run marked if it is "
    "still unreferenced and nobody stored or reused it since; then marks what is "
    "unreferenced now and was last written longer ago than --older-than. The first run "
    "only marks. Closed runs keep their payloads until the namespace's retention removes "
    "their history.",
)
def gc(
    options: CommonOptions,
    older_than: Annotated[
        timedelta,
        typer.Option(
            "--older-than",
            parser=parse_duration,
            metavar="DURATION",
            help="only files last written longer ago than this: 1h, 7d, 1d12h",
        ),
    ],
    grace: Annotated[
        timedelta,
        typer.Option(
            "--grace",
            parser=_span,
            metavar="DURATION",
            help="how old the previous run's mark must be before what it marked is removed",
            show_default="1h",
        ),
    ] = DEFAULT_GRACE,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="say what would go and be marked; change nothing")
    ] = False,
    force: Annotated[
        bool,
        typer.Option("--force", help="allow --older-than or --grace under 1h"),
    ] = False,
) -> None:
    """Collect the store's garbage."""
    if (older_than < MIN_AGE or grace < MIN_AGE) and not force:
        raise ConfigurationError(
            f"--older-than or --grace under {MIN_AGE} could remove a payload an activity "
            "has just written and history does not refer to yet; add --force if no "
            "worker is running"
        )
    root = _store_root()
    run(_gc(options, root, older_than, grace, dry_run))


async def _gc(
    options: CommonOptions, root: Path, older_than: timedelta, grace: timedelta, dry_run: bool
) -> None:
    started_at = store_clock(root)
    previous = read_mark(root)
    waited = timedelta(seconds=started_at - previous.marked_at) if previous else None
    if waited is not None and waited < grace:
        previous = None  # not ripe: removes nothing yet
        if not dry_run:
            status(
                f"the last mark is {_duration(waited)} old, younger than --grace {grace}: "
                f"nothing removed; run again in {_duration(grace - waited)}"
            )
            return
    client = await connect_client(options.settings())
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        transient=True,
        disable=not sys.stderr.isatty(),
    ) as bar:
        tasks: dict[str, TaskID] = {}

        def advance(what: str, done: int, total: int | None) -> None:
            if what not in tasks:
                label = what if what in _PHASES else f"reading histories of {what}"
                tasks[what] = bar.add_task(label, total=total)
            bar.update(tasks[what], completed=done, total=total)

        namespaces = await namespaces_to_scan(client, recorded_namespaces(root))
        referenced = await referenced_digests(client, namespaces=namespaces, progress=advance)
        report = await asyncio.to_thread(
            mark_and_sweep,
            root,
            referenced,
            started_at=started_at,
            older_than=older_than,
            previous=previous,
            namespaces=namespaces,
            dry_run=dry_run,
            progress=advance,
        )
    read = ", ".join(namespaces)
    if previous is None:
        swept = "no mark old enough: nothing removed"
    else:
        verb = "would remove" if dry_run else "removed"
        swept = (
            f"{verb} {len(report.removed):,} payloads ({_size(report.freed_bytes)}) marked "
            f"{_duration(waited or timedelta())} ago; kept {report.kept_referenced:,} "
            f"referenced, {report.kept_recent:,} newer than {older_than} and "
            f"{report.kept_reused + report.put_back:,} reused since the mark"
        )
    marked = "would mark" if dry_run else "marked"
    status(
        f"read the histories of {read}; {swept}; {marked} {len(report.marked):,} unreferenced "
        f"payloads ({_size(report.marked_bytes)}) for the next run after {grace}"
    )
    for digest in report.removed:
        print(digest)


def _duration(span: timedelta) -> str:
    seconds = int(span.total_seconds())
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"
