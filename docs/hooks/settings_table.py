"""Every setting a smyth process reads: the settings page, generated from the models.

One row per variable, from the fields of the settings models in
``smyth_temporal.settings`` (``WorkerSettings``, ``GatewaySettings``,
``CodecServerSettings``, ``DevSettings`` and the ``Settings`` they share): the variable
(the field's ``validation_alias``), the process kinds whose model has the field, its
default and its docstring. A few variables are read for smyth by a library
(``LIBRARY_SETTINGS``). ``docs/hooks/generated.py`` renders the page as
``reference/settings.md`` at build time, and ``tests/docs/test_docs.py`` fails when a
module of ``smyth_temporal`` reads a variable this table does not name (or the table
names one nobody reads), so the page follows the code.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from smyth_temporal.settings import PROCESS_SETTINGS, Settings, SmythSettings


class Setting(NamedTuple):
    """One environment variable."""

    variable: str
    processes: str
    default: str
    meaning: str
    library: str = ""
    """The library that reads it for smyth (``temporalio.envconfig``), if not smyth itself."""
    group: str = ""
    """The settings model that defines it (its concern)."""


LIBRARY_SETTINGS: tuple[Setting, ...] = (
    Setting(
        "TEMPORAL_API_KEY",
        "all",
        "none",
        "an API key for Temporal Cloud, with the other `TEMPORAL_*` variables (TLS, "
        "`TEMPORAL_CONFIG_FILE`, gRPC metadata)",
        library="temporalio.envconfig",
        group="Settings",
    ),
    Setting(
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "worker",
        "`http://localhost:4318`",
        "where spans go (OTLP/HTTP)",
        library="the OpenTelemetry SDK",
        group="ObservabilitySettings",
    ),
    Setting(
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "worker",
        "none",
        "the traces endpoint, if not the one above",
        library="the OpenTelemetry SDK",
        group="ObservabilitySettings",
    ),
)
"""Variables a library reads for smyth (from the process environment only, not ``.env``,
except ``TEMPORAL_*``, which smyth hands to ``temporalio.envconfig`` with ``.env``)."""


def _concerns() -> list[type[SmythSettings]]:
    """The settings models that define fields, each once.

    The connection first, then the parts every process shares, then each process
    kind's own.
    """
    found: list[type[SmythSettings]] = [Settings]
    for model in PROCESS_SETTINGS:
        for cls in reversed(model.__mro__):
            if (
                isinstance(cls, type)
                and issubclass(cls, SmythSettings)
                and cls not in found
                and _own_fields(cls)
            ):
                found.append(cls)
    return found


def _own_fields(cls: type[BaseModel]) -> list[str]:
    inherited = {
        name
        for base in cls.__bases__
        if isinstance(base, type) and issubclass(base, BaseModel)
        for name in base.model_fields
    }
    return [name for name in cls.model_fields if name not in inherited]


def _processes(field: str) -> str:
    kinds = [model.process_kind for model in PROCESS_SETTINGS if field in model.model_fields]
    return "all" if len(kinds) == len(PROCESS_SETTINGS) else ", ".join(kinds)


def _default(info: FieldInfo) -> str:
    value: Any = info.default
    if value is PydanticUndefined or value is None:
        return "none"
    if isinstance(value, bool):
        return "`on`" if value else "`off`"
    if isinstance(value, SecretStr):
        return "none"
    if isinstance(value, tuple | list):
        return "`" + ",".join(map(str, value)) + "`" if value else "none"
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, Path):
        value = value.as_posix()
    return f"`{value}`"


def _meaning(info: FieldInfo) -> str:
    return " ".join((info.description or "").split())


def _rows() -> tuple[Setting, ...]:
    rows: list[Setting] = []
    for cls in _concerns():
        for name in _own_fields(cls):
            variable = cls.variable(name)
            if variable is None:
                continue  # not read from the environment (the profile's connect arguments)
            info = cls.model_fields[name]
            rows.append(
                Setting(
                    variable, _processes(name), _default(info), _meaning(info), "", cls.__name__
                )
            )
        rows += [s for s in LIBRARY_SETTINGS if s.group == cls.__name__]
    return tuple(rows)


SETTINGS: tuple[Setting, ...] = _rows()
"""Every variable, grouped by the settings model that reads it."""


def _heading(group: str) -> str:
    cls = next(c for c in _concerns() if c.__name__ == group)
    first = (cls.__doc__ or group).strip().splitlines()[0].rstrip(".")
    return f"`{group}`: {first}"


def settings_markdown() -> str:
    """The settings page: an introduction and one table per settings model."""
    sections = []
    for group in dict.fromkeys(s.group for s in SETTINGS):
        rows = "\n".join(
            f"| `{s.variable}` | {s.processes} | {s.default} | {s.meaning}"
            f"{f' (read by {s.library})' if s.library else ''} |"
            for s in SETTINGS
            if s.group == group
        )
        sections.append(
            f"## {_heading(group)}\n\n| variable | read by | default | what it does |\n"
            f"| --- | --- | --- | --- |\n{rows}\n"
        )
    tables = "\n".join(sections)
    kinds = ", ".join(f"`{model.__name__}` ({model.process_kind})" for model in PROCESS_SETTINGS)
    return f"""# Settings

Every setting a smyth process reads, generated from the settings models of
`smyth_temporal.settings`: one `pydantic-settings` model per process kind, {kinds},
built from the models below (a test fails when the package reads a variable this page
does not name).

Each value comes from, highest first:

1. a command-line option, where the command has one (or a keyword argument of
   `run_worker` or `SmythPlugin`);
2. the process environment;
3. the `.env` file of the directory the process starts in (refused, with the process, if
   group or others may write it or another user owns it: it chooses keys and endpoints);
4. `temporal.toml`, for the connection (`TEMPORAL_PROFILE` picks the profile, read
   through `temporalio.envconfig`);
5. the default.

Settings are validated when a process starts, with a one-line message naming the
variable (never its value). In code, `WorkerSettings.load(task_queue="trading")` reads
them the same way; `run_worker(agents, settings=...)` hands the same object to
`SmythPlugin`.

{tables}
The dev server's Web UI is on its gRPC port + 1000 unless `SMYTH_DEV_UI_PORT` says otherwise.
"""


__all__ = ["LIBRARY_SETTINGS", "SETTINGS", "Setting", "Settings", "settings_markdown"]
