"""The ``smyth`` command: agent runs, workers, a dev server, human approvals and memory.

One module per command group, each only parsing arguments, calling a client and
printing: ``dev`` (``dev``, ``worker``), ``runs`` (``run``, ``state``, ``result``),
``watch`` (``watch``, ``interrupt``), ``pause`` (``pause``, ``resume``),
``limits`` and ``budget`` (model-call rates and spending), ``approvals``
(``approvals``, ``approve``, ``reject``), ``memory`` (``memory search``, ``list``,
``forget``, ``undo-run``),
``sessions`` (``send``, ``chat``), ``deploy`` (``verify-deploy``), ``schedules``
(``schedule create``, ``list``,
``describe``, ``pause``, ``resume``, ``trigger``, ``delete``) and ``demo``. They share
``_common`` (options, running, errors), ``_output`` (how things are shown) and
``_live`` (text shown as a model writes it).

Every command takes ``--address`` and ``--namespace`` (default: ``TEMPORAL_ADDRESS``,
``TEMPORAL_NAMESPACE`` or the ``temporal.toml`` profile, as Temporal's own CLI reads
them); ``worker``, ``run``, the session and the ``memory`` commands take
``--task-queue`` (``SMYTH_TASK_QUEUE``). ``--namespace`` is always the Temporal
namespace: the memory commands name the memory namespace
(``AgentConfig.memory_namespace``) with ``--memory-namespace``/``-m``.

Failures the user can fix (nothing at the address, an unknown run id, an agent that
cannot be imported, a missing API key, a decision the agent refuses) print one line,
``smyth: error: ...``, and exit with 1; bad usage exits with 2; Ctrl-C exits with 130.
Anything else is a bug and shows its traceback.

Added in 0.1.0; on Typer and Rich since 0.3.0.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.metadata import version
from typing import Annotated

import typer
from temporalio.service import RPCError

from smyth_temporal.cli import (
    approvals,
    audit,
    budget,
    codec,
    demo,
    deploy,
    dev,
    fork,
    keys,
    limits,
    mcp,
    memory,
    pause,
    rewind,
    runs,
    schedules,
    serve,
    sessions,
    storage,
    watch,
)
from smyth_temporal.cli._common import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    PROG,
    error_line,
    usage_message,
)
from smyth_temporal.exceptions import SmythError

__all__ = ["app", "main"]

app = typer.Typer(
    name=PROG,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="Durable AI agents on Temporal: a dev server, workers, agent runs, human approvals "
    "and long-term memory.",
)
for group in (dev, runs, watch, pause, approvals, sessions, audit, fork, rewind):
    app.add_typer(group.app)
app.add_typer(memory.app, name="memory")
app.add_typer(schedules.app, name="schedule")
app.add_typer(serve.app)
app.add_typer(keys.app, name="keys")
app.add_typer(limits.app, name="limits")
app.add_typer(budget.app, name="budget")
app.add_typer(mcp.app, name="mcp")
app.add_typer(codec.app)
app.add_typer(storage.app, name="storage")
app.add_typer(demo.app)
app.add_typer(deploy.app)


def _version(shown: bool) -> None:
    if shown:
        # From the installed distribution: importing the top-level package from inside
        # it would be a cycle.
        print(f"{PROG} {version('smyth-temporal')}")
        raise typer.Exit(EXIT_OK)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="show the version and exit"
        ),
    ] = False,
) -> None:
    """Durable AI agents on Temporal."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``smyth`` command line.

    Args:
        argv: The arguments after the program name (default: ``sys.argv[1:]``).

    Returns:
        The exit code: 0 on success, 1 on an error the user can fix, 2 on bad usage,
        130 when interrupted.
    """
    arguments = list(sys.argv[1:] if argv is None else argv)
    command = typer.main.get_command(app)
    try:
        code = command.main(args=arguments, prog_name=PROG, standalone_mode=False)
    except typer.TyperException as exc:  # bad usage, as Click reports it
        context = getattr(exc, "ctx", None)
        if context is not None:
            print(context.get_usage(), file=sys.stderr)
        where = context.command_path if context is not None else PROG
        print(f"{where}: error: {usage_message(exc)}", file=sys.stderr)
        return exc.exit_code if exc.exit_code != EXIT_ERROR else EXIT_USAGE
    except SmythError as exc:
        print(error_line(exc), file=sys.stderr)
        return EXIT_ERROR
    except RPCError as exc:  # the server refused (unknown namespace, permissions, ...)
        print(error_line(f"Temporal: {exc.message or exc}"), file=sys.stderr)
        return EXIT_ERROR
    except (KeyboardInterrupt, typer.Abort):
        return EXIT_INTERRUPTED
    return code if isinstance(code, int) else EXIT_OK
