"""``smyth storage stats`` and ``smyth storage gc``: the content-addressed payload store."""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from smyth_temporal.cli._common import CommonOptions, command, run, status
from smyth_temporal.cli.schedules import parse_duration
from smyth_temporal.clients._base import connect_client
from smyth_temporal.clients._references import referenced_digests
from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.storage import ContentAddressedFileDriver, default_payload_storage
from smyth_temporal.storage._gc import collect_garbage, store_stats

__all__ = ["MIN_AGE", "app"]

app = typer.Typer(
    help="The payload store (SMYTH_PAYLOAD_PATH): its size, and removing payloads that no "
    "history or schedule the server still keeps refers to.",
    no_args_is_help=True,
)

MIN_AGE = timedelta(hours=1)
"""The youngest file ``gc`` may remove without ``--force``: a payload an activity wrote
just now may not be referenced by history yet."""


def _store_root() -> Path:
    storage = default_payload_storage()
    drivers = storage.drivers if storage is not None else []
    if len(drivers) != 1 or not isinstance(drivers[0], ContentAddressedFileDriver):
        raise ConfigurationError(
            "the payload store is off (SMYTH_PAYLOAD_STORAGE=off): there is nothing to look at"
        )
    return drivers[0].root


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
    help="Remove stored payloads that no retained history (open or closed runs) or schedule "
    "of the namespace refers to and that were last written longer ago than --older-than. "
    "Closed runs keep their payloads until the namespace's retention removes their history.",
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
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="say what would go; remove nothing")
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help=f"allow --older-than under {MIN_AGE}")
    ] = False,
) -> None:
    """Collect the store's garbage."""
    if older_than < MIN_AGE and not force:
        raise ConfigurationError(
            f"--older-than under {MIN_AGE} could remove a payload an activity has just written "
            "and history does not refer to yet; add --force if no worker is running"
        )
    root = _store_root()
    run(_gc(options, root, older_than, dry_run))


async def _gc(options: CommonOptions, root: Path, older_than: timedelta, dry_run: bool) -> None:
    client = await connect_client(options.settings())
    with Progress(
        TextColumn("reading histories"),
        BarColumn(),
        MofNCompleteColumn(),
        transient=True,
        disable=not sys.stderr.isatty(),
    ) as bar:
        task = bar.add_task("histories", total=None)

        def advance(done: int, total: int | None) -> None:
            bar.update(task, completed=done, total=total)

        referenced = await referenced_digests(client, progress=advance)
    report = collect_garbage(root, referenced, older_than, dry_run=dry_run)
    verb = "would remove" if dry_run else "removed"
    status(
        f"{verb} {len(report.removed):,} payloads ({_size(report.freed_bytes)}); kept "
        f"{report.kept_referenced:,} referenced and {report.kept_recent:,} newer than {older_than}"
    )
    for digest in report.removed:
        print(digest)
