"""The base of every settings model: where values come from, and how bad ones are refused.

Precedence, highest first: arguments (a command's options, keyword arguments), the
process environment, the ``.env`` file of the current directory, ``temporal.toml``
(connection settings only), the field's default. Only fields with a variable
(``validation_alias``) are read from the environment; a model built ``from_environ``
reads one mapping instead of the environment and ``.env`` (tests, explicit callers).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Annotated, Any, ClassVar, Self

from pydantic import BeforeValidator, SecretStr, ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    DotEnvSettingsSource,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from smyth_temporal.exceptions import ConfigurationError

__all__ = ["DOTENV_FILE", "SmythSettings", "Switch", "comma_separated", "switch"]

DOTENV_FILE = Path(".env")
"""The dotenv file every process reads, in its current directory.

Added in 0.9.0.
"""

_ON = frozenset({"on", "1", "true", "yes"})
_OFF = frozenset({"off", "0", "false", "no"})

# The mapping a model built by ``from_environ`` reads instead of the process's environment.
_ENVIRON: ContextVar[Mapping[str, str] | None] = ContextVar("smyth_settings_environ", default=None)


def switch(*, on: tuple[str, ...] = (), off: tuple[str, ...] = ()) -> BeforeValidator:
    """A validator for an on/off setting; ``on`` and ``off`` are more words for each."""
    yes, no = _ON | set(on), _OFF | set(off)

    def parse(value: object) -> object:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in yes:
            return True
        if text in no:
            return False
        raise ValueError(f"must be 'on' or 'off', not {value!r}")

    return BeforeValidator(parse)


Switch = Annotated[bool, switch()]
"""An on/off setting: ``on``/``off``, ``1``/``0``, ``true``/``false``, ``yes``/``no``."""


def _split(value: object) -> object:
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return value


comma_separated = BeforeValidator(_split)
"""A validator reading ``a, b`` as ``("a", "b")`` (with ``NoDecode``, not as JSON)."""


def reads_environment(field: FieldInfo) -> bool:
    """Whether a field is read from the environment: only fields named by a variable."""
    return isinstance(field.validation_alias, str)


class _Environ(EnvSettingsSource):
    """The process environment (or the ``from_environ`` mapping), for named fields only."""

    def __init__(
        self, settings_cls: type[BaseSettings], environ: Mapping[str, str] | None = None
    ) -> None:
        self._environ = environ
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        if self._environ is None:
            return super()._load_env_vars()
        # As pydantic-settings reads os.environ with this config: names as they are
        # (case_sensitive), an empty value as unset (env_ignore_empty).
        return {name: value for name, value in self._environ.items() if value != ""}

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        if not reads_environment(field):
            return None, field_name, False
        return super().get_field_value(field, field_name)


class _DotEnv(DotEnvSettingsSource):
    """``.env``, for named fields only."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        if not reads_environment(field):
            return None, field_name, False
        return super().get_field_value(field, field_name)


class SmythSettings(BaseSettings):
    """What every settings model shares: its sources, their order and its errors.

    Build one with ``load()`` (a ``ConfigurationError`` naming the variable for a bad
    value) or ``from_environ()``; calling the class reads the same sources.

    Added in 0.9.0.
    """

    model_config = SettingsConfigDict(
        env_file=DOTENV_FILE,
        extra="ignore",
        case_sensitive=True,
        populate_by_name=True,
        use_attribute_docstrings=True,
        env_ignore_empty=True,  # `SMYTH_X=` means "not set", as it always did
        protected_namespaces=(),
        hide_input_in_errors=True,  # a bad key must not end up in a log
    )

    process_kind: ClassVar[str] = ""
    """The process kind this model configures, for the reference table (``""``: a part)."""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Arguments, then the environment, then ``.env``, then ``file_sources``."""
        environ = _ENVIRON.get()
        if environ is not None:
            return (init_settings, _Environ(settings_cls, environ), *cls.file_sources(environ))
        _check_dotenv(DOTENV_FILE)
        dotenv = _DotEnv(settings_cls)
        read = {**dotenv.env_vars, **_process_environ()}
        merged = {name: value for name, value in read.items() if value is not None}
        return (init_settings, _Environ(settings_cls), dotenv, *cls.file_sources(merged))

    @classmethod
    def file_sources(cls, environ: Mapping[str, str]) -> tuple[PydanticBaseSettingsSource, ...]:
        """Sources below ``.env`` (``temporal.toml`` for the connection).

        ``environ`` is what the environment and ``.env`` say together.
        """
        return ()

    @classmethod
    def variable(cls, field: str) -> str | None:
        """The environment variable of ``field``, or ``None`` if it has none."""
        info = cls.model_fields.get(field)
        alias = info.validation_alias if info is not None else None
        return alias if isinstance(alias, str) else None

    @classmethod
    def load(cls, **overrides: Any) -> Self:
        """Read the settings; ``overrides`` (by field name; ``None`` is "not given") win.

        Raises:
            ConfigurationError: A setting is invalid; the message names its variable.
        """
        given = {name: value for name, value in overrides.items() if value is not None}
        try:
            return cls(**given)
        except ValidationError as exc:
            raise ConfigurationError(cls.problems(exc)) from None

    @classmethod
    def based_on(cls, settings: SmythSettings, **overrides: Any) -> Self:
        """These settings, with the values ``settings`` hold over the sources.

        A worker's settings from a client's ``Settings``, say; ``overrides`` win over both.

        Raises:
            ConfigurationError: A setting is invalid; the message names its variable.
        """
        held = {name: getattr(settings, name) for name in settings.model_fields_set}
        return cls.load(**{**held, **overrides})

    @classmethod
    def from_environ(cls, environ: Mapping[str, str], **overrides: Any) -> Self:
        """Read the settings from ``environ`` alone (no process environment, no ``.env``).

        Raises:
            ConfigurationError: A setting is invalid; the message names its variable.
        """
        token = _ENVIRON.set(environ)
        try:
            return cls.load(**overrides)
        finally:
            _ENVIRON.reset(token)

    def export(self, *fields: str) -> None:
        """Set ``fields``' variables in the process environment to these settings' values.

        For code that reads its settings itself, later (a model provider that the loaded
        modules build resolves its key with ``Secrets.from_env()``), so that it sees
        what a command's options said. A field without a value is left as it is.
        """
        for name in fields:
            variable, value = self.variable(name), getattr(self, name)
            if variable is None or value is None:
                continue
            if isinstance(value, SecretStr):
                value = value.get_secret_value()
            elif isinstance(value, tuple | list):
                value = ",".join(map(str, value))
            os.environ[variable] = str(value)

    @classmethod
    def problems(cls, error: ValidationError) -> str:
        """One line naming every invalid setting by its variable, never its value."""
        lines = []
        for problem in error.errors():
            loc = problem["loc"]
            name = str(loc[0]) if loc else ""
            variable = cls.variable(name)
            # A value given as an argument (an option) is named by its field and variable;
            # one read from the environment is reported under its variable already.
            where = f"{name} ({variable})" if variable else name
            message = str(problem["msg"]).removeprefix("Value error, ")
            if not where:
                lines.append(message)
            elif message.startswith("must "):
                lines.append(f"{where} {message}")
            else:
                lines.append(f"{where}: {message}")
        return "; ".join(lines)


def _check_dotenv(path: Path) -> None:
    """Refuse a ``.env`` that someone else could have written.

    It chooses keys, endpoints, the payload store and whether plaintext is accepted: a
    process started in a directory where another user can plant one would take them
    from that user (as ssh refuses a config file others can write).

    Raises:
        ConfigurationError: The file is writable by group or others, or owned by
            another user than this process's (or root).
    """
    try:
        info = path.stat()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ConfigurationError(f"cannot read {path}: {exc}") from None
    owners = {0, os.getuid()} if hasattr(os, "getuid") else {info.st_uid}
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) or info.st_uid not in owners:
        raise ConfigurationError(
            f"{path.absolute()} is writable by others or owned by another user: settings "
            f"are not read from it (chmod go-w {path}, or remove it)"
        )


def _process_environ() -> Mapping[str, str]:
    return os.environ
