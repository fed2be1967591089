"""What every ``smyth`` command shares: options, settings, running, errors, output.

Command modules import from here and from ``_output``, never from each other or from
``main``. A command is a function whose first parameter receives ``CommonOptions``;
``command`` registers it on a Typer app with the options every command takes
(``--address``, ``--namespace``, ``--log-level``, ``--log-format``, and
``--task-queue`` where it makes sense).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import json
import signal
import threading
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

import typer

from smyth_temporal._logging import configure_logging
from smyth_temporal.cli._output import error_line, status
from smyth_temporal.clients import agent_name
from smyth_temporal.exceptions import UnknownAgentError
from smyth_temporal.settings import LOG_FORMAT_ENV, LOG_LEVEL_ENV, LoggingSettings, Settings
from smyth_temporal.worker import load_agent

__all__ = [
    "CORE_SETTLE_DELAY",
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "LOG_FORMAT_ENV",
    "LOG_LEVEL_ENV",
    "PROG",
    "CommonOptions",
    "agent_type",
    "bounded",
    "choice",
    "command",
    "error_line",
    "event_on_signals",
    "non_empty",
    "non_negative",
    "port",
    "print_json",
    "run",
    "status",
    "usage_message",
]

PROG = "smyth"

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what shells report for Ctrl-C

CORE_SETTLE_DELAY = 0.1
"""Seconds a command lets temporalio's core threads settle before exiting (see ``run``)."""

_CONNECTION_PANEL = "Temporal connection and logging"

T = TypeVar("T")
S = TypeVar("S", bound=Settings)


# -- option values ----------------------------------------------------------------


def non_empty(text: str) -> str:
    """An option value that must not be blank."""
    if not text.strip():
        raise typer.BadParameter("must not be empty")
    return text


def non_negative(text: str) -> int:
    """A whole number, zero or more."""
    try:
        value = int(text)
    except ValueError:
        raise typer.BadParameter(f"not a number: {text}") from None
    if value < 0:
        raise typer.BadParameter(f"must not be negative: {text}")
    return value


def port(text: str) -> int:
    """A TCP port."""
    value = non_negative(text)
    if not 0 < value < 65536:
        raise typer.BadParameter(f"not a TCP port: {text}")
    return value


def bounded(low: int, high: int) -> Callable[[str], int]:
    """A parser for a whole number from ``low`` to ``high``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise typer.BadParameter(f"not a number: {text}") from None
        if not low <= value <= high:
            raise typer.BadParameter(f"must be from {low} to {high}: {text}")
        return value

    return parse


def choice(*choices: str) -> Callable[[str], str]:
    """A parser for one of ``choices``, refused the way the CLI always said it."""

    def parse(text: str) -> str:
        if text not in choices:
            shown = ", ".join(repr(c) for c in choices)
            raise typer.BadParameter(f"invalid choice: {text!r} (choose from {shown})")
        return text

    return parse


# -- the options every command takes ---------------------------------------------


@dataclass(frozen=True)
class CommonOptions:
    """The connection and logging options of a command."""

    address: str | None = None
    namespace: str | None = None
    task_queue: str | None = None
    log_level: str | None = None
    log_format: str = "console"

    def settings(self) -> Settings:
        """The settings these options (and the environment) make."""
        return self.load(Settings)

    def load(self, model: type[S], **options: Any) -> S:
        """A process kind's settings, these options and ``options`` over the sources.

        ``options`` are by field name, ``None`` meaning not given; the sources are the
        environment, ``.env`` and ``temporal.toml``.

        Raises:
            ConfigurationError: A setting is invalid (the message names its variable).
        """
        return model.load(
            address=self.address,
            namespace=self.namespace,
            task_queue=self.task_queue,
            log_level=self.log_level,
            log_format=self.log_format,
            **options,
        )


_Address = Annotated[
    str | None,
    typer.Option(
        "--address",
        metavar="HOST:PORT",
        help="the Temporal frontend (default: TEMPORAL_ADDRESS, the temporal.toml profile, "
        "or localhost:7233)",
        rich_help_panel=_CONNECTION_PANEL,
    ),
]
_Namespace = Annotated[
    str | None,
    typer.Option(
        "--namespace",
        metavar="NAMESPACE",
        help="the Temporal namespace (default: TEMPORAL_NAMESPACE, the profile, or default)",
        rich_help_panel=_CONNECTION_PANEL,
    ),
]
_TaskQueue = Annotated[
    str | None,
    typer.Option(
        "--task-queue",
        metavar="TASK_QUEUE",
        help="the task queue agents run on (default: SMYTH_TASK_QUEUE or smyth-agents)",
        rich_help_panel=_CONNECTION_PANEL,
    ),
]
_LogLevel = Annotated[
    str | None,
    typer.Option(
        "--log-level",
        metavar="[debug|info|warning|error]",
        parser=choice("debug", "info", "warning", "error"),
        help=f"least severe log level shown on stderr ({LOG_LEVEL_ENV}; default: info for "
        "worker, warning otherwise)",
        rich_help_panel=_CONNECTION_PANEL,
    ),
]
_LogFormat = Annotated[
    str | None,
    typer.Option(
        "--log-format",
        metavar="[console|json]",
        parser=choice("console", "json"),
        help=f"log lines for people or one JSON object per line ({LOG_FORMAT_ENV})",
        rich_help_panel=_CONNECTION_PANEL,
    ),
]


def _keyword(name: str, annotation: object, default: object) -> inspect.Parameter:
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
    )


def command(
    app: typer.Typer,
    name: str,
    *,
    task_queue: bool = False,
    log_level: str = "warning",
    **settings: Any,
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Register a command whose first parameter receives the ``CommonOptions``.

    The wrapper Typer sees has the command's own parameters followed by the shared
    options; it configures logging before the command runs.

    Args:
        app: Where the command goes.
        name: The command's name.
        task_queue: Whether it takes ``--task-queue``.
        log_level: The log level when neither ``--log-level`` nor the environment
            says one.
        settings: More ``Typer.command`` arguments (``help``, ``epilog``...).
    """

    def register(func: Callable[..., None]) -> Callable[..., None]:
        signature = inspect.signature(func, eval_str=True)
        own = list(signature.parameters.values())[1:]
        shared = [
            _keyword("address", _Address, None),
            _keyword("namespace", _Namespace, None),
            *([_keyword("task_queue", _TaskQueue, None)] if task_queue else []),
            _keyword("log_level", _LogLevel, None),
            _keyword("log_format", _LogFormat, None),
        ]

        @functools.wraps(func)
        def wrapper(**arguments: Any) -> None:
            given = {p.name: arguments.pop(p.name) for p in shared}
            # The options, else SMYTH_LOG_LEVEL / SMYTH_LOG_FORMAT (environment, .env).
            logging = LoggingSettings.load(
                log_level=given.pop("log_level"), log_format=given.pop("log_format")
            )
            options = CommonOptions(
                **given, log_level=logging.log_level, log_format=logging.log_format
            )
            configure_logging(options.log_level or log_level, json=options.log_format == "json")
            func(options, **arguments)

        wrapper.__signature__ = signature.replace(parameters=[*own, *shared])  # type: ignore[attr-defined]
        app.command(name, **settings)(wrapper)
        return func

    return register


# -- running ----------------------------------------------------------------------


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a command's coroutine to the end, the way every command does."""
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
def event_on_signals(*signals: signal.Signals) -> Iterator[asyncio.Event]:
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


def agent_type(spec: str) -> str:
    """The workflow type name for ``Name`` or ``module:Class``."""
    if ":" in spec:
        return agent_name(load_agent(spec))
    if not spec.isidentifier():
        raise UnknownAgentError(f"expected a workflow type name or module:Class, got {spec!r}")
    return spec


def print_json(value: Any, *, indent: int | None = 2) -> None:
    """Print ``value`` as JSON on stdout."""
    print(json.dumps(value, indent=indent))


# -- usage errors -----------------------------------------------------------------


def usage_message(error: typer.TyperException) -> str:
    """A usage error as ``smyth`` has always worded it (argparse's words).

    Scripts and people match on these, so they stay the same whatever parses the
    command line. Typer raises Click's usage errors; they are read by their names and
    attributes, which Click and Typer's copy of it share.
    """
    kind = type(error).__name__
    param = getattr(error, "param", None)
    if kind == "NoSuchOption":
        return f"unrecognized arguments: {getattr(error, 'option_name', error.message)}"
    if kind == "MissingParameter" and param is not None:
        return f"the following arguments are required: {_param_name(param)}"
    if kind == "BadParameter" and param is not None:
        return f"argument {_param_name(param)}: {error.message}"
    if error.message == "Missing command.":
        return "the following arguments are required: COMMAND"
    extra = "Got unexpected extra argument"
    if error.message.startswith(extra):
        return "unrecognized arguments: " + error.message.rpartition("(")[2].rstrip(")")
    return error.message


def _param_name(param: Any) -> str:
    if param.param_type_name == "option":
        return "/".join(param.opts)
    return str(param.metavar or param.name.upper())
