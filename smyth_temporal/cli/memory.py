"""``smyth memory search``, ``list``, ``forget`` and ``undo-run``: long-term memory.

Each command calls ``MemoryClient``, which runs the operation on a worker of the
agents' task queue and ends with a clear error when none can do it.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Annotated

import typer

from smyth_temporal.cli._common import (
    CommonOptions,
    bounded,
    command,
    non_empty,
    print_json,
    run,
    status,
)
from smyth_temporal.cli._output import format_hits, format_memories, short_id
from smyth_temporal.clients import AgentClient, MemoryClient
from smyth_temporal.exceptions import ClientError

__all__ = ["MAX_LIST_LIMIT", "MAX_SEARCH_K", "app"]

MAX_SEARCH_K = 100
"""Most memories ``smyth memory search -k`` asks for (the recall request's bound)."""

MAX_LIST_LIMIT = 10_000
"""Most memories ``smyth memory list --limit`` asks for (the list request's bound)."""

EPILOG = "\n\n".join(
    [
        (
            "Memory lives on the workers (Qdrant Edge under SMYTH_MEMORY_PATH, default "
            ".smyth/memory, or the Qdrant server at QDRANT_URL). Each command runs one short "
            "workflow (smyth.memory.admin) on the agents' task queue, so a worker of an agent "
            "with memory (AgentConfig.memory_namespace) must be running there; the change is in "
            "its history."
        ),
        (
            "--namespace is the Temporal namespace, as on every smyth command. The memory "
            "namespace, the agents' AgentConfig.memory_namespace, is --memory-namespace (-m)."
        ),
        "examples:",
        '  smyth memory search "ACME earnings date" -m research --tenant acme',
        "  smyth memory list -m research --kind fact --json",
        "  smyth memory forget 1a2b3c4d -m research",
        "  smyth memory undo-run Researcher-3f9a2c1b --tenant acme",
    ]
)

app = typer.Typer(
    help="Search, list and forget long-term memory; undo what a run wrote. Long-term memory "
    "of agents with a memory_namespace, one tenant's namespace at a time.",
    epilog=EPILOG,
)

_Operation = Callable[[MemoryClient], Awaitable[None]]

_FULL_MEMORY_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_SCOPE_PANEL = "memory scope"
_NAMESPACE_HELP = (
    "the memory namespace: the agents' AgentConfig.memory_namespace (not --namespace, which "
    "is the Temporal namespace"
)

_Tenant = Annotated[
    str,
    typer.Option(
        "--tenant",
        parser=non_empty,
        help="whose memory (AgentInput.tenant)",
        rich_help_panel=_SCOPE_PANEL,
    ),
]
_Namespace = Annotated[
    str,
    typer.Option(
        "-m",
        "--memory-namespace",
        parser=non_empty,
        metavar="NAME",
        help=_NAMESPACE_HELP + ")",
        rich_help_panel=_SCOPE_PANEL,
    ),
]
_AnyNamespace = Annotated[
    str | None,
    typer.Option(
        "-m",
        "--memory-namespace",
        parser=non_empty,
        metavar="NAME",
        help=_NAMESPACE_HELP + "; default: every namespace of the tenant)",
        rich_help_panel=_SCOPE_PANEL,
    ),
]
_Kinds = Annotated[
    list[str] | None,
    typer.Option(
        "--kind",
        metavar="KIND",
        help="only memories of this kind (fact, episode, preference, note, ...); repeat for "
        "several",
    ),
]


@command(
    app,
    "search",
    task_queue=True,
    epilog=EPILOG,
    help="Show the memories closest to QUERY, best first (expired and superseded ones left "
    "out unless asked for): of one memory namespace of the tenant, or of all of them.",
)
def search(
    options: CommonOptions,
    query: Annotated[str, typer.Argument(metavar="QUERY", help="what to look for")],
    memory_namespace: _AnyNamespace = None,
    tenant: _Tenant = "default",
    k: Annotated[
        int,
        typer.Option(
            "-k",
            parser=bounded(1, MAX_SEARCH_K),
            metavar="K",
            help=f"how many memories at most (1-{MAX_SEARCH_K})",
        ),
    ] = 5,
    kinds: _Kinds = None,
    include_expired: Annotated[
        bool, typer.Option("--include-expired", help="also memories past their expiry")
    ] = False,
    include_superseded: Annotated[
        bool, typer.Option("--include-superseded", help="also memories replaced by a newer one")
    ] = False,
    branch: Annotated[
        str | None,
        typer.Option(
            "--branch",
            parser=non_empty,
            metavar="WORKFLOW_ID",
            help="search as this fork sees memory: its parent's up to the fork, and its own",
        ),
    ] = None,
    json_: Annotated[
        bool, typer.Option("--json", help="print a JSON list of {record, score} (MemoryHit)")
    ] = False,
) -> None:
    """The memories closest to a query."""

    async def go(memory: MemoryClient) -> None:
        hits = await memory.search(
            query,
            tenant=tenant,
            namespace=memory_namespace,
            k=k,
            kinds=kinds,
            include_expired=include_expired,
            include_superseded=include_superseded,
            branch=branch,
        )
        if json_:
            print_json([h.model_dump(mode="json") for h in hits])
        elif hits:
            print(format_hits(hits, now=datetime.now(UTC), namespaces=memory_namespace is None))
        else:
            print(f"no memories match ({_scope(tenant, memory_namespace)})")

    run(_with_memory(options, go))


@command(
    app,
    "list",
    task_queue=True,
    epilog=EPILOG,
    help="List the memories of a tenant's memory namespace, newest first, superseded ones "
    "included (marked).",
)
def list_memories(
    options: CommonOptions,
    memory_namespace: _Namespace,
    tenant: _Tenant = "default",
    kinds: _Kinds = None,
    workflow_id: Annotated[
        str | None,
        typer.Option(
            "--workflow",
            metavar="ID",
            help="only memories written by this workflow (an agent run's workflow id)",
        ),
    ] = None,
    limit: Annotated[
        int,
        typer.Option(
            "--limit",
            parser=bounded(1, MAX_LIST_LIMIT),
            metavar="N",
            help=f"at most N memories (1-{MAX_LIST_LIMIT})",
        ),
    ] = 50,
    json_: Annotated[
        bool, typer.Option("--json", help="print a JSON list of MemoryRecord")
    ] = False,
) -> None:
    """A namespace's memories, newest first."""

    async def go(memory: MemoryClient) -> None:
        records = await memory.list_memories(
            tenant=tenant,
            namespace=memory_namespace,
            kinds=kinds,
            workflow_id=workflow_id,
            limit=limit,
        )
        if json_:
            print_json([r.model_dump(mode="json") for r in records])
        elif records:
            print(format_memories(records, now=datetime.now(UTC)))
        else:
            print(f"no memories ({_scope(tenant, memory_namespace)})")

    run(_with_memory(options, go))


@command(
    app,
    "forget",
    task_queue=True,
    epilog=EPILOG,
    help="Delete memories by id, only within the tenant's memory namespace. An ID may be the "
    "short id the tables show, if it names one memory there.",
)
def forget(
    options: CommonOptions,
    ids: Annotated[
        list[str],
        typer.Argument(metavar="ID", parser=non_empty, help="a memory id, or its first characters"),
    ],
    memory_namespace: _Namespace,
    tenant: _Tenant = "default",
    json_: Annotated[
        bool, typer.Option("--json", help='print {"count": N, "ids": [...]} as JSON')
    ] = False,
) -> None:
    """Delete memories by id."""

    async def go(memory: MemoryClient) -> None:
        resolved = await _resolve_ids(memory, ids, tenant, memory_namespace)
        count = await memory.forget(resolved, tenant=tenant, namespace=memory_namespace)
        if json_:
            print_json({"count": count, "ids": resolved}, indent=None)
        else:
            print(f"forgot {_memories(count)} ({_scope(tenant, memory_namespace)})")
        if count < len(resolved):
            status(
                f"note: {len(resolved) - count} of the {len(resolved)} ids named no memory there"
            )

    run(_with_memory(options, go))


@command(
    app,
    "undo-run",
    task_queue=True,
    epilog=EPILOG,
    help="Delete every memory a workflow (or one run of it, with --run) wrote for the tenant: "
    "in every memory namespace, or only in --memory-namespace.",
)
def undo_run(
    options: CommonOptions,
    workflow_id: Annotated[
        str, typer.Argument(metavar="WORKFLOW_ID", help="the agent run's workflow id")
    ],
    memory_namespace: _AnyNamespace = None,
    tenant: _Tenant = "default",
    run_id: Annotated[
        str | None, typer.Option("--run", metavar="RUN_ID", help="only this run of the workflow")
    ] = None,
    json_: Annotated[bool, typer.Option("--json", help='print {"count": N} as JSON')] = False,
) -> None:
    """Delete every memory an agent run wrote."""

    async def go(memory: MemoryClient) -> None:
        count = await memory.undo_run(
            workflow_id, tenant=tenant, namespace=memory_namespace, run_id=run_id
        )
        if json_:
            print_json({"count": count}, indent=None)
            return
        of_run = f" (run {run_id})" if run_id else ""
        scope = _scope(tenant, memory_namespace)
        print(f"removed {_memories(count)} written by {workflow_id}{of_run} ({scope})")

    run(_with_memory(options, go))


async def _with_memory(options: CommonOptions, operation: _Operation) -> None:
    agents = await AgentClient.connect(options.settings())
    await operation(agents.memory)


async def _resolve_ids(
    memory: MemoryClient, ids: list[str], tenant: str, namespace: str
) -> list[str]:
    """Full ids as given; a shorter one becomes the one id of the namespace it starts.

    Raises:
        ClientError: A short id that starts no memory id, or several.
    """
    wanted = [i.strip().lower() for i in ids]
    short = sorted({i for i in wanted if not _FULL_MEMORY_ID.fullmatch(i)})
    if not short:
        return list(dict.fromkeys(wanted))
    known = await memory.list_memories(tenant=tenant, namespace=namespace, limit=MAX_LIST_LIMIT)
    resolved: dict[str, str] = {}
    for prefix in short:
        matches = [r.id for r in known if r.id.startswith(prefix)]
        if not matches:
            raise ClientError(f"no memory id starts with {prefix!r} ({_scope(tenant, namespace)})")
        if len(matches) > 1:
            shown = ", ".join(short_id(m) for m in matches[:5])
            raise ClientError(
                f"{len(matches)} memory ids start with {prefix!r} ({shown}, ...); "
                "give more of the id"
            )
        resolved[prefix] = matches[0]
    return list(dict.fromkeys(resolved.get(i, i) for i in wanted))


def _scope(tenant: str, namespace: str | None) -> str:
    """``tenant acme, memory namespace research`` (or ``every memory namespace``)."""
    where = f"memory namespace {namespace}" if namespace else "every memory namespace"
    return f"tenant {tenant}, {where}"


def _memories(count: int) -> str:
    return f"{count} {'memory' if count == 1 else 'memories'}"
