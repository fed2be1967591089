"""The ``smyth`` command: agent runs, workers, a dev server, human approvals and memory.

Subcommands: ``dev``, ``worker``, ``run``, ``state``, ``result``, ``demo``; for
approvals ``approvals``, ``approve`` and ``reject``; for long-term memory ``memory
search``, ``memory list``, ``memory forget`` and ``memory undo-run``; for periodic runs
``schedule create``, ``list``, ``describe``, ``pause``, ``resume``, ``trigger`` and
``delete`` (in ``_schedule``); for persistent sessions ``send`` and ``chat`` (in
``_session``).

Every subcommand takes ``--address`` and ``--namespace`` (default: ``TEMPORAL_ADDRESS``,
``TEMPORAL_NAMESPACE`` or the ``temporal.toml`` profile, as Temporal's own CLI reads
them); ``worker``, ``run`` and the ``memory`` commands take ``--task-queue``
(``SMYTH_TASK_QUEUE``). ``--namespace`` is always the Temporal namespace: the memory
commands name the memory namespace (``AgentConfig.memory_namespace``) with
``--memory-namespace``/``-m``.

Failures the user can fix (nothing at the address, an unknown run id, an agent that
cannot be imported, a missing API key, a decision the agent refuses) print one line,
``smyth: error: ...``, and exit with 1; bad usage exits with 2 (argparse); Ctrl-C
exits with 130. Anything else is a bug and shows its traceback.

Added in 0.1.0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import getpass
import importlib
import json
import os
import re
import signal
import socket
import sys
import threading
import uuid
from collections.abc import Callable, Coroutine, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from temporalio.api.enums.v1 import EventType
from temporalio.client import (
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowQueryFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.exceptions import FailureError, WorkflowAlreadyStartedError
from temporalio.service import RPCError

from smyth_temporal import __version__
from smyth_temporal._logging import configure_logging
from smyth_temporal._memory_client import MemoryClient
from smyth_temporal.cli._devserver import (
    DEFAULT_DEV_PORT,
    DEFAULT_STATE_DIR,
    LOCAL_HOSTS,
    DevServer,
    is_reachable,
    split_address,
)
from smyth_temporal.cli._output import (
    error_line,
    format_approvals,
    format_decided,
    format_hits,
    format_memories,
    format_sent,
    format_state,
    format_usage,
    one_line,
    progress_line,
    short_id,
    status,
)
from smyth_temporal.client import AgentClient, agent_name
from smyth_temporal.exceptions import (
    AgentNotFoundError,
    ClientError,
    ConfigurationError,
    SmythError,
    UnknownAgentError,
)
from smyth_temporal.memory._admin import (
    MEMORY_ADMIN_WORKFLOW,
    MemoryAdminRequest,
    MemoryAdminResult,
)
from smyth_temporal.settings import Settings
from smyth_temporal.types import ApprovalDecision
from smyth_temporal.types.agent import TERMINAL_STATUSES, AgentInput, AgentResult, AgentState
from smyth_temporal.types.memory import MemoryRecord
from smyth_temporal.worker import (
    DEFAULT_MODEL_PROVIDER,
    MODEL_PROVIDER_ENV,
    load_agent,
    load_agents,
    load_model_provider,
    run_worker,
)

__all__ = [
    "DECISION_TIMEOUT",
    "MEMORY_TIMEOUT",
    "PICKUP_TIMEOUT",
    "PROGRESS_INTERVAL",
    "STATE_TIMEOUT",
    "build_parser",
    "main",
]

PROG = "smyth"

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what shells report for Ctrl-C

PICKUP_TIMEOUT = 5.0
"""Seconds ``smyth run`` watches a new run's history for a worker to take it.

The first workflow task of a run normally completes in tens of milliseconds; within
this time a task failed because the type is not registered means no worker serves it.
"""

PROGRESS_INTERVAL = 0.5
"""Seconds between two ``state`` queries while ``--wait`` or ``result`` shows progress."""

STATE_TIMEOUT = 10.0
"""Seconds ``smyth state`` waits for a worker to answer the query."""

DECISION_TIMEOUT = 30.0
"""Seconds ``smyth approve``/``reject`` wait for the agent to take a decision.

A decision is an update, which a worker must accept; with no worker for the agent,
temporalio would wait forever.
"""

MEMORY_TIMEOUT = 30.0
"""Seconds a ``smyth memory`` command waits for a worker to do the operation.

Each one runs a short admin workflow on the agents' task queue; if it has not ended
by then it is terminated, so an operation the user gave up on never applies later.
"""

MAX_SEARCH_K = 100
"""Most memories ``smyth memory search -k`` asks for (the recall request's bound)."""

MAX_LIST_LIMIT = 10_000
"""Most memories ``smyth memory list --limit`` asks for (the list request's bound)."""

CORE_SETTLE_DELAY = 0.1
"""Seconds a command lets temporalio's core threads settle before exiting (see _settled)."""

LOG_LEVEL_ENV = "SMYTH_LOG_LEVEL"
LOG_FORMAT_ENV = "SMYTH_LOG_FORMAT"

DEMO_MODULE = "smyth_temporal.cli._demo"

# Messages Temporal SDKs put in the failure of a workflow task for a type the worker
# does not have: Python ("is not registered"), Go ("unable to find workflow type"),
# Java and others ("unknown workflow type").
_UNREGISTERED_MARKERS = (
    "is not registered",
    "unable to find workflow type",
    "unknown workflow type",
)

_CLOSED_EVENTS = frozenset(
    {
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
    }
)

T = TypeVar("T")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``smyth`` command line.

    Args:
        argv: The arguments after the program name (default: ``sys.argv[1:]``).

    Returns:
        The exit code: 0 on success, 1 on an error the user can fix, 2 on bad usage,
        130 when interrupted.
    """
    arguments = list(sys.argv[1:] if argv is None else argv)
    # The demo is imported only when asked for: it is heavier than the other commands
    # and may be absent, which must not break them.
    demo = _load_demo() if arguments[:1] == ["demo"] else None
    parser = build_parser(demo=demo)
    try:
        args = parser.parse_args(arguments)
    except SystemExit as exc:  # --help, or a usage error argparse has printed
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    level = getattr(args, "log_level", None) or ("info" if args.command == "worker" else "warning")
    configure_logging(level, json=getattr(args, "log_format", None) == "json")
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except SmythError as exc:
        print(error_line(exc), file=sys.stderr)
        return EXIT_ERROR
    except RPCError as exc:  # the server refused (unknown namespace, permissions, ...)
        print(error_line(f"Temporal: {exc.message or exc}"), file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def build_parser(*, demo: ModuleType | BaseException | None = None) -> argparse.ArgumentParser:
    """The argument parser of ``smyth``.

    Args:
        demo: The imported demo module (its ``add_arguments`` adds the demo's options),
            the error that importing it raised, or ``None`` when not needed.
    """
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Durable AI agents on Temporal: a dev server, workers, agent runs, "
        "human approvals and long-term memory.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    dev = commands.add_parser(
        "dev",
        help="run the embedded Temporal dev server (SQLite under .smyth/)",
        description="Start a Temporal dev server with a SQLite file and keep it in the "
        "foreground until Ctrl-C. Does nothing if a server already answers on the port.",
    )
    _add_common_options(dev)
    dev.add_argument(
        "--port",
        type=_port,
        help="gRPC port (default: the port of --address when it is local, else 7233)",
    )
    dev.add_argument("--ui-port", type=_port, help="Web UI port (default: port + 1000)")
    dev.add_argument(
        "--db-file",
        type=Path,
        default=DEFAULT_STATE_DIR / "temporal.db",
        help="the SQLite file; the server's log goes beside it (default: %(default)s)",
    )
    dev.set_defaults(handler=_cmd_dev)

    worker = commands.add_parser(
        "worker",
        help="serve agents: run their workflows, model calls and tools",
        description="Serve agent classes until SIGINT/SIGTERM.",
    )
    _add_common_options(worker, task_queue=True)
    worker.add_argument(
        "agents",
        nargs="+",
        metavar="AGENT",
        help="an agent class as module:Class, e.g. examples.market.workflows:MarketAnalyst",
    )
    worker.add_argument(
        "--model",
        default=os.environ.get(MODEL_PROVIDER_ENV) or DEFAULT_MODEL_PROVIDER,
        metavar="openai|MODULE:ATTR",
        help="the model provider: 'openai' (OPENAI_BASE_URL, OPENAI_API_KEY) or a provider "
        f"object or factory as module:attr ({MODEL_PROVIDER_ENV}; default: %(default)s)",
    )
    worker.add_argument(
        "--max-cached-workflows",
        type=_non_negative,
        metavar="N",
        help="runs kept in memory between steps (default: temporalio's, 1000)",
    )
    worker.set_defaults(handler=_cmd_worker)

    run = commands.add_parser(
        "run",
        help="start an agent run",
        description="Start an agent and print its workflow id; --wait shows progress and "
        "prints the output.",
    )
    _add_common_options(run, task_queue=True)
    run.add_argument(
        "agent", metavar="AGENT", help="the agent's workflow type name or module:Class"
    )
    run.add_argument("--prompt", required=True, help="the task, as the first user message")
    run.add_argument("--id", help="the workflow id (default: <agent>-<random>)")
    run.add_argument("--tenant", default="default", help="whose agent this is (%(default)s)")
    run.add_argument("--session", help="a session id grouping runs")
    run.add_argument("--wait", action="store_true", help="wait for the result, with progress")
    run.add_argument("--json", action="store_true", help="print JSON")
    run.set_defaults(handler=_cmd_run)

    state = commands.add_parser(
        "state",
        help="show an agent's state",
        description="Show status, steps, usage, pending tool calls and the last messages.",
    )
    _add_common_options(state)
    state.add_argument("workflow_id", metavar="ID", help="the run's workflow id")
    state.add_argument("--json", action="store_true", help="print AgentState as JSON")
    state.set_defaults(handler=_cmd_state)

    result = commands.add_parser(
        "result",
        help="wait for an agent run and print its output",
        description="Wait for the run to end (showing progress) and print its output.",
    )
    _add_common_options(result)
    result.add_argument("workflow_id", metavar="ID", help="the run's workflow id")
    result.add_argument("--json", action="store_true", help="print AgentResult as JSON")
    result.set_defaults(handler=_cmd_result)

    _add_approval_commands(commands)
    _add_memory_commands(commands)
    # Imported here: the schedule and session commands use this module's options and helpers.
    from smyth_temporal.cli._schedule import add_schedule_commands
    from smyth_temporal.cli._session import add_session_commands

    add_schedule_commands(commands)
    add_session_commands(commands)

    demo_parser = commands.add_parser(
        "demo",
        help="run the end-to-end demo",
        description="Run the demo: a dev server, a worker and an agent, all in one.",
    )
    if isinstance(demo, ModuleType):
        demo.add_arguments(demo_parser)
    # The demo module owns its options; shared ones it defines itself (--address)
    # keep its definition.
    _add_common_options(demo_parser, keep_existing=True)
    demo_parser.set_defaults(handler=_cmd_demo, demo=demo)
    return parser


def _add_approval_commands(commands: argparse._SubParsersAction[Any]) -> None:
    """Add ``approvals``, ``approve`` and ``reject``."""
    approvals = commands.add_parser(
        "approvals",
        help="list the approval requests waiting for a decision",
        description="List every pending approval request of every running agent, oldest "
        "first (found through the SmythPendingApprovals search attribute).",
    )
    _add_common_options(approvals)
    approvals.add_argument("--tenant", help="only this tenant's agents")
    approvals.add_argument(
        "--json",
        action="store_true",
        help="print a JSON list of {agent, workflow_id, tenant, request}",
    )
    approvals.set_defaults(handler=_cmd_approvals)

    approve = commands.add_parser(
        "approve",
        help="approve a pending tool call",
        description="Approve a pending approval request: the tool runs (with --arguments "
        "instead of the model's, if given). Waits for the agent to accept the decision "
        "unless --no-wait.",
    )
    _add_decision_options(approve)
    approve.add_argument("--comment", metavar="TEXT", help="why; kept in the audit trail")
    approve.add_argument(
        "--arguments",
        type=_json_object,
        metavar="JSON",
        help="run the tool with these arguments instead (a JSON object, checked against "
        "the tool's schema by the agent)",
    )
    approve.add_argument(
        "--sha256",
        type=_sha256,
        metavar="HASH",
        help="the SHA-256 of the arguments you reviewed (request.arguments_sha256 of "
        "`smyth approvals --json`); the agent refuses the approval if they differ",
    )
    approve.set_defaults(handler=_cmd_decide, approved=True)

    reject = commands.add_parser(
        "reject",
        help="reject a pending tool call",
        description="Reject a pending approval request: the tool does not run and the model "
        "is told who rejected it and why. Waits for the agent to accept the decision "
        "unless --no-wait.",
    )
    _add_decision_options(reject)
    reject.add_argument("--reason", dest="comment", metavar="TEXT", help="why; shown to the model")
    reject.set_defaults(handler=_cmd_decide, approved=False, arguments=None, sha256=None)


def _add_decision_options(parser: argparse.ArgumentParser) -> None:
    """Add what ``approve`` and ``reject`` share."""
    _add_common_options(parser)
    parser.add_argument("workflow_id", metavar="WORKFLOW_ID", help="the agent run's workflow id")
    parser.add_argument(
        "--request",
        metavar="ID",
        help="the approval request (default: the only pending one of the run)",
    )
    parser.add_argument(
        "--by",
        type=_non_empty,
        metavar="NAME",
        help="who decides, for the audit trail (default: user@host)",
    )
    parser.add_argument(
        "--no-wait",
        action="store_true",
        help="send the decision as a signal and return at once; the agent checks it "
        "later and only logs it if it is invalid",
    )


_MEMORY_EPILOG = """\
Memory lives on the workers (Qdrant Edge under SMYTH_MEMORY_PATH, default .smyth/memory,
or the Qdrant server at QDRANT_URL). Each command runs one short workflow
(smyth.memory.admin) on the agents' task queue, so a worker of an agent with memory
(AgentConfig.memory_namespace) must be running there; the change is in its history.

--namespace is the Temporal namespace, as on every smyth command. The memory namespace,
the agents' AgentConfig.memory_namespace, is --memory-namespace (-m).

examples:
  smyth memory search "ACME earnings date" -m research --tenant acme
  smyth memory list -m research --kind fact --json
  smyth memory forget 1a2b3c4d -m research
  smyth memory undo-run Researcher-3f9a2c1b --tenant acme
"""


class _EpilogFormatter(argparse.HelpFormatter):
    """Help text: descriptions filled as usual, epilogs (examples) kept as written.

    A text with line breaks is taken as laid out by hand; one without is filled.
    """

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" not in text.strip():
            return super()._fill_text(text, width, indent)
        return "".join(indent + line for line in text.splitlines(keepends=True))


def _add_memory_commands(commands: argparse._SubParsersAction[Any]) -> None:
    """Add ``memory`` and its ``search``, ``list``, ``forget`` and ``undo-run``."""
    memory = commands.add_parser(
        "memory",
        help="search, list and forget long-term memory; undo what a run wrote",
        description="Long-term memory of agents with a memory_namespace, one tenant's "
        "namespace at a time.",
        epilog=_MEMORY_EPILOG,
        formatter_class=_EpilogFormatter,
    )
    actions = memory.add_subparsers(dest="memory_command", required=True, metavar="COMMAND")

    search = actions.add_parser(
        "search",
        help="the memories closest to a query",
        description="Show the memories of a tenant's memory namespace closest to QUERY, "
        "best first (expired and superseded ones left out unless asked for).",
        epilog=_MEMORY_EPILOG,
        formatter_class=_EpilogFormatter,
    )
    _add_memory_options(search, namespace_required=True)
    search.add_argument("query", metavar="QUERY", help="what to look for")
    search.add_argument(
        "-k",
        type=_bounded(1, MAX_SEARCH_K),
        default=5,
        metavar="K",
        help=f"how many memories at most (1-{MAX_SEARCH_K}; default: %(default)s)",
    )
    _add_kind_option(search)
    search.add_argument(
        "--include-expired", action="store_true", help="also memories past their expiry"
    )
    search.add_argument(
        "--include-superseded",
        action="store_true",
        help="also memories replaced by a newer one",
    )
    search.add_argument(
        "--json", action="store_true", help="print a JSON list of {record, score} (MemoryHit)"
    )
    search.set_defaults(memory_handler=_memory_search)

    listing = actions.add_parser(
        "list",
        help="a namespace's memories, newest first",
        description="List the memories of a tenant's memory namespace, newest first, "
        "superseded ones included (marked).",
        epilog=_MEMORY_EPILOG,
        formatter_class=_EpilogFormatter,
    )
    _add_memory_options(listing, namespace_required=True)
    _add_kind_option(listing)
    listing.add_argument(
        "--workflow",
        dest="workflow_id",
        metavar="ID",
        help="only memories written by this workflow (an agent run's workflow id)",
    )
    listing.add_argument(
        "--limit",
        type=_bounded(1, MAX_LIST_LIMIT),
        default=50,
        metavar="N",
        help=f"at most N memories (1-{MAX_LIST_LIMIT}; default: %(default)s)",
    )
    listing.add_argument("--json", action="store_true", help="print a JSON list of MemoryRecord")
    listing.set_defaults(memory_handler=_memory_list)

    forget = actions.add_parser(
        "forget",
        help="delete memories by id",
        description="Delete memories by id, only within the tenant's memory namespace. An "
        "ID may be the short id the tables show, if it names one memory there.",
        epilog=_MEMORY_EPILOG,
        formatter_class=_EpilogFormatter,
    )
    _add_memory_options(forget, namespace_required=True)
    forget.add_argument(
        "ids",
        nargs="+",
        type=_non_empty,
        metavar="ID",
        help="a memory id, or its first characters",
    )
    forget.add_argument(
        "--json", action="store_true", help='print {"count": N, "ids": [...]} as JSON'
    )
    forget.set_defaults(memory_handler=_memory_forget)

    undo = actions.add_parser(
        "undo-run",
        help="delete every memory an agent run wrote",
        description="Delete every memory a workflow (or one run of it, with --run) wrote "
        "for the tenant: in every memory namespace, or only in --memory-namespace.",
        epilog=_MEMORY_EPILOG,
        formatter_class=_EpilogFormatter,
    )
    _add_memory_options(undo, namespace_required=False)
    undo.add_argument("workflow_id", metavar="WORKFLOW_ID", help="the agent run's workflow id")
    undo.add_argument(
        "--run", dest="run_id", metavar="RUN_ID", help="only this run of the workflow"
    )
    undo.add_argument("--json", action="store_true", help='print {"count": N} as JSON')
    undo.set_defaults(memory_handler=_memory_undo_run)


def _add_memory_options(parser: argparse.ArgumentParser, *, namespace_required: bool) -> None:
    """Add what every ``memory`` command shares: connection, task queue, tenant, namespace."""
    _add_common_options(parser, task_queue=True)
    scope = parser.add_argument_group("memory scope")
    scope.add_argument(
        "--tenant",
        type=_non_empty,
        default="default",
        help="whose memory (AgentInput.tenant; default: %(default)s)",
    )
    where = "" if namespace_required else "; default: every namespace of the tenant"
    scope.add_argument(
        "-m",
        "--memory-namespace",
        type=_non_empty,
        required=namespace_required,
        metavar="NAME",
        help="the memory namespace: the agents' AgentConfig.memory_namespace (not "
        f"--namespace, which is the Temporal namespace{where})",
    )
    parser.set_defaults(handler=_cmd_memory)


def _add_kind_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kind",
        dest="kinds",
        action="append",
        metavar="KIND",
        help="only memories of this kind (fact, episode, preference, note, ...); repeat "
        "for several",
    )


def _add_common_options(
    parser: argparse.ArgumentParser, *, task_queue: bool = False, keep_existing: bool = False
) -> None:
    """Add the options every subcommand shares (connection, logging)."""
    group = parser.add_argument_group("Temporal connection and logging")
    options: list[tuple[str, dict[str, Any]]] = [
        (
            "--address",
            {
                "metavar": "HOST:PORT",
                "help": "the Temporal frontend (default: TEMPORAL_ADDRESS, the temporal.toml "
                "profile, or localhost:7233)",
            },
        ),
        (
            "--namespace",
            {
                "help": "the Temporal namespace (default: TEMPORAL_NAMESPACE, the profile, "
                "or default)"
            },
        ),
    ]
    if task_queue:
        options.append(
            (
                "--task-queue",
                {
                    "help": "the task queue agents run on (default: SMYTH_TASK_QUEUE or "
                    "smyth-agents)"
                },
            )
        )
    options += [
        (
            "--log-level",
            {
                "choices": ["debug", "info", "warning", "error"],
                "default": os.environ.get(LOG_LEVEL_ENV) or None,
                "help": f"least severe log level shown on stderr ({LOG_LEVEL_ENV}; default: "
                "info for worker, warning otherwise)",
            },
        ),
        (
            "--log-format",
            {
                "choices": ["console", "json"],
                "default": os.environ.get(LOG_FORMAT_ENV) or "console",
                "help": f"log lines for people or one JSON object per line ({LOG_FORMAT_ENV})",
            },
        ),
    ]
    for flag, spec in options:
        try:
            group.add_argument(flag, **spec)
        except argparse.ArgumentError:
            if not keep_existing:
                raise


# -- subcommands ------------------------------------------------------------------


def _cmd_dev(args: argparse.Namespace) -> int:
    settings = _settings(args)
    host, configured_port = split_address(settings.address)
    if host not in LOCAL_HOSTS:
        host, configured_port = "localhost", DEFAULT_DEV_PORT
    port = args.port or configured_port
    db_file: Path = args.db_file
    server = DevServer(
        port=port,
        ui_port=args.ui_port,
        db_path=db_file,
        namespace=settings.namespace,
        state_dir=db_file.parent,
        host=host,
    )
    on_main_thread = threading.current_thread() is threading.main_thread()
    if on_main_thread and signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        # Started from a background job, the process inherits SIGINT ignored, and
        # asyncio.run then installs no handler: restore it, so that Ctrl-C or
        # `kill -INT` stops the server here too.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    return _run_async(_dev(server))


async def _dev(server: DevServer) -> int:
    if await is_reachable(server.address, server.namespace):
        print(f"a Temporal server already answers at {server.address} (Web UI: {server.ui_url})")
        return EXIT_OK
    server.start()
    status(f"starting the Temporal dev server on {server.address} (data: {server.db_path}) ...")
    try:
        await server.wait_ready()
        print(f"Temporal dev server ready at {server.address} (namespace {server.namespace})")
        print(f"Web UI: {server.ui_url}", flush=True)
        status(f"log: {server.log_path}; press Ctrl-C to stop")
        # SIGINT cancels this task (asyncio.run's own handler), SIGTERM sets `stop`;
        # either way the finally clause stops the server, which runs in its own
        # process group and so never sees the terminal's signals itself.
        with _event_on_signals(signal.SIGTERM) as stop:
            while not stop.is_set():
                code = server.process.poll() if server.process else None
                if code is not None:
                    raise ClientError(
                        f"the Temporal dev server exited unexpectedly with code {code}; "
                        f"see {server.log_path}"
                    )
                # asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow
                # a cancellation that lands as its timeout fires.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(0.5):
                        await stop.wait()
    finally:
        if server.running:
            status("stopping the Temporal dev server ...")
        server.stop()
    status("stopped")
    return EXIT_OK


def _cmd_worker(args: argparse.Namespace) -> int:
    settings = _settings(args)
    agents = load_agents(args.agents)
    model = load_model_provider(args.model)
    _run_async(
        run_worker(
            agents,
            settings=settings,
            model=model,
            max_cached_workflows=args.max_cached_workflows,
        )
    )
    return EXIT_OK


def _cmd_run(args: argparse.Namespace) -> int:
    return _run_async(_run(args))


async def _run(args: argparse.Namespace) -> int:
    settings = _settings(args)
    name = _agent_type(args.agent)
    agents = await AgentClient.connect(settings)
    if await agents.workers_polling() == 0:
        raise ClientError(
            f"no worker polls task queue {settings.task_queue!r} (namespace "
            f"{settings.namespace!r} at {settings.address}); start one with "
            "`smyth worker module:Class`"
        )
    agent_input = AgentInput(prompt=args.prompt, tenant=args.tenant, session_id=args.session)
    try:
        handle = await agents.start(name, agent_input, id=args.id)
    except WorkflowAlreadyStartedError as exc:
        raise ClientError(f"an agent run with workflow id {exc.workflow_id!r} is running") from exc
    if not args.json:
        print(handle.id, flush=True)
    await _confirm_pickup(handle, name, settings.task_queue)
    summary: dict[str, Any] = {
        "workflow_id": handle.id,
        "run_id": handle.result_run_id,
        "agent": name,
        "task_queue": settings.task_queue,
    }
    if not args.wait:
        if args.json:
            print(json.dumps(summary))
        return EXIT_OK
    result = await _wait_with_progress(agents, handle.id, initial_delay=0.0)
    if args.json:
        print(json.dumps({**summary, "result": result.model_dump(mode="json")}))
    else:
        _print_result(result)
    return EXIT_OK


def _cmd_state(args: argparse.Namespace) -> int:
    return _run_async(_state(args))


async def _state(args: argparse.Namespace) -> int:
    agents = await AgentClient.connect(_settings(args))
    state = await _query_state(agents, args.workflow_id, timeout=STATE_TIMEOUT)
    print(state.model_dump_json(indent=2) if args.json else format_state(state))
    return EXIT_OK


def _cmd_result(args: argparse.Namespace) -> int:
    return _run_async(_result(args))


async def _result(args: argparse.Namespace) -> int:
    agents = await AgentClient.connect(_settings(args))
    # Only runs still going show progress; a finished run's result comes at once.
    result = await _wait_with_progress(agents, args.workflow_id, initial_delay=PROGRESS_INTERVAL)
    if args.json:
        print(result.model_dump_json(indent=2))
    else:
        _print_result(result)
    return EXIT_OK


def _cmd_approvals(args: argparse.Namespace) -> int:
    return _run_async(_approvals(args))


async def _approvals(args: argparse.Namespace) -> int:
    agents = await AgentClient.connect(_settings(args))
    pending = await agents.pending_approvals(tenant=args.tenant)
    if args.json:
        print(json.dumps([p.model_dump(mode="json") for p in pending], indent=2))
    elif pending:
        print(format_approvals(pending, now=datetime.now(UTC)))
    else:
        print("no pending approvals" + (f" (tenant {args.tenant})" if args.tenant else ""))
    return EXIT_OK


def _cmd_decide(args: argparse.Namespace) -> int:
    return _run_async(_decide(args))


async def _decide(args: argparse.Namespace) -> int:
    """``approve`` and ``reject``: send the decision and say what became of it."""
    decision = ApprovalDecision(
        request_id=args.request,
        approved=args.approved,
        by=args.by or _default_approver(),
        comment=args.comment,
        arguments=args.arguments,
        arguments_sha256=args.sha256,
    )
    workflow_id: str = args.workflow_id
    agents = await AgentClient.connect(_settings(args))
    try:
        async with asyncio.timeout(DECISION_TIMEOUT):
            outcome = await agents.decide(workflow_id, decision, wait=not args.no_wait)
    except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError):
        # temporalio reports a cancelled wait for an update (our deadline, the server's
        # deadline on the call, or Ctrl-C) as its own error, not as a cancellation.
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise asyncio.CancelledError from None  # Ctrl-C: exit 130, not an error line
        raise ClientError(
            f"no worker took the decision for {workflow_id!r} within {DECISION_TIMEOUT:g}s "
            "(is a worker for its agent running?); it may still be applied when one picks "
            f"the run up: check with `smyth state {workflow_id}`"
        ) from None
    except AgentNotFoundError as exc:
        ended = await _ended_run_error(agents, workflow_id)
        if ended is None:
            raise
        raise ended from exc
    if outcome is None:
        print(format_sent(workflow_id, decision))
    else:
        print(format_decided(workflow_id, outcome.request))
    return EXIT_OK


async def _ended_run_error(agents: AgentClient, workflow_id: str) -> ClientError | None:
    """The error for a decision sent to a run that has ended, if that is what happened.

    Temporal answers "not found" both for unknown ids and for runs that are over; the
    latter deserves its own message, or the user goes looking for a typo.
    """
    try:
        description = await agents.client.get_workflow_handle(workflow_id).describe()
    except RPCError:
        return None
    if description.status in (None, WorkflowExecutionStatus.RUNNING):
        return None
    ended = description.status.name.lower().replace("_", " ")
    return ClientError(
        f"agent run {workflow_id!r} has already ended ({ended}); there is nothing left to decide"
    )


def _default_approver() -> str:
    """``user@host``: who decides when ``--by`` is not given."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no USER/LOGNAME and no passwd entry (containers)
        raise ConfigurationError(
            "cannot tell who you are; say who decides with --by NAME"
        ) from None
    return f"{user}@{socket.gethostname()}"


MemoryHandler = Callable[[argparse.Namespace, MemoryClient], Coroutine[Any, Any, None]]

_FULL_MEMORY_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _cmd_memory(args: argparse.Namespace) -> int:
    return _run_async(_memory(args))


async def _memory(args: argparse.Namespace) -> int:
    """The ``memory`` commands: check that a worker is there, then do the operation."""
    settings = _settings(args)
    agents = await AgentClient.connect(settings)
    pollers = await agents.workers_polling()
    if pollers == 0:
        raise ClientError(
            f"no worker polls task queue {settings.task_queue!r} (namespace "
            f"{settings.namespace!r} at {settings.address}); memory lives on the workers: "
            f"{_START_MEMORY_WORKER}"
        )
    handler: MemoryHandler = args.memory_handler
    await handler(args, _CliMemoryClient(agents, pollers=pollers))
    return EXIT_OK


async def _memory_search(args: argparse.Namespace, memory: MemoryClient) -> None:
    hits = await memory.search(
        args.query,
        tenant=args.tenant,
        namespace=args.memory_namespace,
        k=args.k,
        kinds=args.kinds,
        include_expired=args.include_expired,
        include_superseded=args.include_superseded,
    )
    if args.json:
        print(json.dumps([h.model_dump(mode="json") for h in hits], indent=2))
    elif hits:
        print(format_hits(hits, now=datetime.now(UTC)))
    else:
        print(f"no memories match ({_memory_scope(args)})")


async def _memory_list(args: argparse.Namespace, memory: MemoryClient) -> None:
    records = await memory.list_memories(
        tenant=args.tenant,
        namespace=args.memory_namespace,
        kinds=args.kinds,
        workflow_id=args.workflow_id,
        limit=args.limit,
    )
    if args.json:
        print(json.dumps([r.model_dump(mode="json") for r in records], indent=2))
    elif records:
        print(format_memories(records, now=datetime.now(UTC)))
    else:
        print(f"no memories ({_memory_scope(args)})")


async def _memory_forget(args: argparse.Namespace, memory: MemoryClient) -> None:
    ids = await _resolve_memory_ids(args, memory)
    count = await memory.forget(ids, tenant=args.tenant, namespace=args.memory_namespace)
    if args.json:
        print(json.dumps({"count": count, "ids": ids}))
    else:
        print(f"forgot {_memories(count)} ({_memory_scope(args)})")
    if count < len(ids):
        status(f"note: {len(ids) - count} of the {len(ids)} ids named no memory there")


async def _memory_undo_run(args: argparse.Namespace, memory: MemoryClient) -> None:
    count = await memory.undo_run(
        args.workflow_id,
        tenant=args.tenant,
        namespace=args.memory_namespace,
        run_id=args.run_id,
    )
    if args.json:
        print(json.dumps({"count": count}))
        return
    run = f" (run {args.run_id})" if args.run_id else ""
    print(f"removed {_memories(count)} written by {args.workflow_id}{run} ({_memory_scope(args)})")


async def _resolve_memory_ids(args: argparse.Namespace, memory: MemoryClient) -> list[str]:
    """Full ids as given; a shorter one becomes the one id of the namespace it starts.

    Raises:
        ClientError: A short id that starts no memory id, or several.
    """
    wanted = [i.strip().lower() for i in args.ids]
    short = sorted({i for i in wanted if not _FULL_MEMORY_ID.fullmatch(i)})
    if not short:
        return list(dict.fromkeys(wanted))
    known: list[MemoryRecord] = await memory.list_memories(
        tenant=args.tenant, namespace=args.memory_namespace, limit=MAX_LIST_LIMIT
    )
    resolved: dict[str, str] = {}
    for prefix in short:
        matches = [r.id for r in known if r.id.startswith(prefix)]
        if not matches:
            raise ClientError(f"no memory id starts with {prefix!r} ({_memory_scope(args)})")
        if len(matches) > 1:
            shown = ", ".join(short_id(m) for m in matches[:5])
            raise ClientError(
                f"{len(matches)} memory ids start with {prefix!r} ({shown}, ...); "
                "give more of the id"
            )
        resolved[prefix] = matches[0]
    return list(dict.fromkeys(resolved.get(i, i) for i in wanted))


def _memory_scope(args: argparse.Namespace) -> str:
    """``tenant acme, memory namespace research`` (or ``every memory namespace``)."""
    namespace = args.memory_namespace
    where = f"memory namespace {namespace}" if namespace else "every memory namespace"
    return f"tenant {args.tenant}, {where}"


def _memories(count: int) -> str:
    return f"{count} {'memory' if count == 1 else 'memories'}"


_START_MEMORY_WORKER = (
    "start a worker of an agent with memory (AgentConfig.memory_namespace) on it, "
    "e.g. `smyth worker module:Class`"
)


class _CliMemoryClient(MemoryClient):
    """A ``MemoryClient`` whose operations end with a clear error when no worker does them.

    ``MemoryClient`` waits for the admin workflow forever; a command must not.
    """

    def __init__(self, agents: AgentClient, *, pollers: int) -> None:
        super().__init__(agents)
        self._pollers = pollers

    async def _run(self, request: MemoryAdminRequest) -> MemoryAdminResult:
        return await _run_memory_admin(self._agents, request, pollers=self._pollers)


async def _run_memory_admin(
    agents: AgentClient, request: MemoryAdminRequest, *, pollers: int
) -> MemoryAdminResult:
    """Run one memory admin workflow, terminating it if no worker does it in time.

    A worker without memory fails its workflow task ("not registered") and Temporal
    would retry it forever; a worker that takes it but cannot reach its store retries
    the activity. Either way the run is terminated, so nothing applies later, and the
    server's execution timeout ends it should this process die first.

    Args:
        agents: The client; its task queue is where the agents' workers poll.
        request: The operation.
        pollers: How many workers poll the queue. With one, a "not registered" failure
            is final; with several, another worker (one with memory) may take the
            retried task, so it gets until ``PICKUP_TIMEOUT``.

    Raises:
        ClientError: No worker with memory did the operation, or it failed.
    """
    task_queue = agents.task_queue
    handle: WorkflowHandle[Any, MemoryAdminResult] = await agents.client.start_workflow(
        MEMORY_ADMIN_WORKFLOW,
        request,
        id=f"smyth-memory-{uuid.uuid4().hex[:12]}",
        task_queue=task_queue,
        result_type=MemoryAdminResult,
        execution_timeout=timedelta(seconds=PICKUP_TIMEOUT + 2 * MEMORY_TIMEOUT),
    )
    failures: list[str] = []
    try:
        async with asyncio.timeout(PICKUP_TIMEOUT):
            taken = await _memory_pickup(handle, failures, alone=pollers <= 1)
    except TimeoutError:
        taken = False
    if not taken:
        if any(_is_unregistered(f) for f in failures):
            reason = f"no worker on task queue {task_queue!r} has memory; {_START_MEMORY_WORKER}"
        elif failures:
            reason = f"the worker failed the memory operation: {failures[-1]}"
        else:
            reason = (
                f"no worker took the memory operation within {PICKUP_TIMEOUT:g}s on task "
                f"queue {task_queue!r}; is a worker of an agent with memory running?"
            )
        await _terminate(handle, reason)
        raise ClientError(reason) from None
    try:
        async with asyncio.timeout(MEMORY_TIMEOUT):
            return await handle.result()
    except TimeoutError:
        last = await _last_activity_failure(handle)
        reason = (
            f"the memory operation did not finish within {MEMORY_TIMEOUT:g}s"
            + (f" (last error: {last})" if last else "")
            + "; see the worker's log"
        )
        await _terminate(handle, reason)
        raise ClientError(reason) from None
    except WorkflowFailureError as exc:
        cause = exc.cause or exc
        while isinstance(cause, FailureError) and cause.cause is not None:
            cause = cause.cause  # the activity's error, under "Activity task failed"
        raise ClientError(f"the memory operation failed: {cause}") from exc


async def _memory_pickup(
    handle: WorkflowHandle[Any, MemoryAdminResult], failures: list[str], *, alone: bool
) -> bool:
    """Wait until a worker has completed the run's first workflow task (or it closed).

    Args:
        handle: The admin workflow.
        failures: Where the messages of failed workflow tasks are appended.
        alone: Only one worker polls: its "not registered" failure is final.

    Returns:
        Whether a worker took the run; ``False`` when the only worker has no memory.
    """
    async for event in handle.fetch_history_events(wait_new_event=True):
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            return True
        if event.event_type in _CLOSED_EVENTS:
            return True
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
            message = event.workflow_task_failed_event_attributes.failure.message
            failures.append(one_line(message, 300))
            if alone and _is_unregistered(message):
                return False
    return True


async def _last_activity_failure(handle: WorkflowHandle[Any, Any]) -> str | None:
    """The last failure of the run's pending activity, if it has been retrying."""
    try:
        description = await handle.describe()
    except RPCError:
        return None
    for activity in description.raw_description.pending_activities:
        if activity.HasField("last_failure"):
            return one_line(activity.last_failure.message, 300)
    return None


async def _terminate(handle: WorkflowHandle[Any, Any], reason: str) -> None:
    with contextlib.suppress(RPCError):
        await handle.terminate(reason=reason)


def _is_unregistered(message: str) -> bool:
    return any(marker in message.lower() for marker in _UNREGISTERED_MARKERS)


def _cmd_demo(args: argparse.Namespace) -> int:
    demo: ModuleType | BaseException | None = args.demo
    if not isinstance(demo, ModuleType):
        raise ConfigurationError(f"the demo is not available in this installation: {demo}")
    code: int = demo.main(args)
    return code


# -- helpers ----------------------------------------------------------------------


def _load_demo() -> ModuleType | BaseException:
    try:
        return importlib.import_module(DEMO_MODULE)
    except ImportError as exc:  # absent, or one of its dependencies is
        return exc


def _settings(args: argparse.Namespace) -> Settings:
    return Settings.load(
        address=args.address,
        namespace=args.namespace,
        task_queue=getattr(args, "task_queue", None),
    )


def _agent_type(spec: str) -> str:
    """The workflow type name for ``Name`` or ``module:Class``."""
    if ":" in spec:
        return agent_name(load_agent(spec))
    if not spec.isidentifier():
        raise UnknownAgentError(f"expected a workflow type name or module:Class, got {spec!r}")
    return spec


async def _confirm_pickup(
    handle: WorkflowHandle[Any, AgentResult],
    agent: str,
    task_queue: str,
    timeout: float = PICKUP_TIMEOUT,
) -> None:
    """Watch a new run's history until a worker has handled its first workflow task.

    A worker that polls the queue but lacks the agent's class fails the task with
    "not registered"; Temporal would retry it forever, so the run is terminated and
    the user told. Anything else (a slow worker) only earns a note.

    Raises:
        UnknownAgentError: No worker on the queue has the agent.
    """
    warned = False
    try:
        async with asyncio.timeout(timeout):
            async for event in handle.fetch_history_events(wait_new_event=True):
                if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
                    return
                if event.event_type in _CLOSED_EVENTS:
                    return
                if event.event_type != EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
                    continue
                message = event.workflow_task_failed_event_attributes.failure.message
                if _is_unregistered(message):
                    reason = f"no worker serves agent {agent!r} on task queue {task_queue!r}"
                    with contextlib.suppress(RPCError):
                        await handle.terminate(reason=reason)
                    raise UnknownAgentError(
                        f"{reason}; start one with `smyth worker module:{agent}` "
                        f"(run {handle.id} was terminated)"
                    )
                if not warned:
                    status(f"warning: a workflow task of {handle.id} failed: {one_line(message)}")
                    warned = True
    except TimeoutError:
        status(f"note: no worker has taken {handle.id} yet; it starts when one does")


async def _wait_with_progress(
    agents: AgentClient, workflow_id: str, *, initial_delay: float
) -> AgentResult:
    """Await the run's result, printing a progress line (stderr) whenever it changes."""
    watcher = asyncio.create_task(_show_progress(agents, workflow_id, initial_delay))
    try:
        return await agents.result(workflow_id)
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher


async def _show_progress(agents: AgentClient, workflow_id: str, initial_delay: float) -> None:
    await asyncio.sleep(initial_delay)
    last = None
    while True:
        try:
            state = await _query_state(agents, workflow_id, timeout=5.0)
        except (SmythError, RPCError):
            state = None  # the result call reports real problems; progress is best-effort
        if state is not None:
            line = progress_line(state)
            if line != last:
                status(line)
                last = line
            if state.status in TERMINAL_STATUSES:
                return
        await asyncio.sleep(PROGRESS_INTERVAL)


async def _query_state(agents: AgentClient, workflow_id: str, *, timeout: float) -> AgentState:
    """``agents.state`` with a deadline: a query waits for a worker, which may be gone."""
    try:
        async with asyncio.timeout(timeout):
            return await agents.state(workflow_id)
    except TimeoutError:
        raise ClientError(
            f"no worker answered the state query of {workflow_id!r} within {timeout:g}s; "
            "is a worker for its agent running?"
        ) from None
    except WorkflowQueryFailedError as exc:
        raise ClientError(f"cannot read the state of {workflow_id!r}: {exc}") from exc


def _print_result(result: AgentResult) -> None:
    print(result.output, flush=True)
    status(f"{result.status} after {result.steps} steps; {format_usage(result.usage)}")


def _run_async(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(_settled(coroutine))


async def _settled(coroutine: Coroutine[Any, Any, T]) -> T:
    try:
        return await coroutine
    finally:
        # temporalio's core threads still release Python objects for a moment after
        # the last call; if the interpreter finalizes meanwhile, the process aborts
        # ("PyGILState_Release: thread state ... must be current", about 1 exit in
        # 10 here; temporalio/sdk-python#300). A short pause before exiting avoids it.
        await asyncio.sleep(CORE_SETTLE_DELAY)


@contextlib.contextmanager
def _event_on_signals(*signals: signal.Signals) -> Iterator[asyncio.Event]:
    """An event set when one of ``signals`` arrives (on the main thread only)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []
    if threading.current_thread() is threading.main_thread():
        for signum in signals:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(signum, stop.set)
                installed.append(signum)
    try:
        yield stop
    finally:
        for signum in installed:
            loop.remove_signal_handler(signum)


def _json_object(text: str) -> dict[str, Any]:
    """``--arguments``: a JSON object, as the tool's arguments are."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON ({exc}): {text}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(
            f'must be a JSON object of tool arguments, like {{"symbol": "ACME"}}, got: {text}'
        )
    return value


def _sha256(text: str) -> str:
    """``--sha256``: a hex SHA-256, so a truncated paste is a usage error, not a mismatch."""
    digest = text.strip().lower()
    if not re.fullmatch(r"[0-9a-f]{64}", digest):
        raise argparse.ArgumentTypeError(f"not a SHA-256 (64 hex digits): {text}")
    return digest


def _non_empty(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return text


def _port(text: str) -> int:
    value = _non_negative(text)
    if not 0 < value < 65536:
        raise argparse.ArgumentTypeError(f"not a TCP port: {text}")
    return value


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {text}")
    return value


def _bounded(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: a whole number from ``low`` to ``high``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be from {low} to {high}: {text}")
        return value

    return parse
