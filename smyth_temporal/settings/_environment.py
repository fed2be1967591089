"""Environments (``SMYTH_ENV``): what keeps staging apart from production."""

from __future__ import annotations

import re
from collections.abc import Mapping

from pydantic import Field, model_validator

from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.settings._base import SmythSettings

__all__ = [
    "ENVIRONMENT_ENV",
    "PROFILE_ENV",
    "EnvironmentSettings",
    "current_environment",
    "environment_namespace",
]

ENVIRONMENT_ENV = "SMYTH_ENV"
"""Selects an environment (``staging``, ``production``); else ``TEMPORAL_PROFILE`` does.

Added in 0.4.0.
"""

PROFILE_ENV = "TEMPORAL_PROFILE"
"""The ``temporal.toml`` profile (read by ``temporalio.envconfig`` too).

Added in 0.9.0.
"""

_ENVIRONMENT = re.compile(r"^[a-z][a-z0-9-]{0,31}$")


def current_environment(environ: Mapping[str, str] | None = None) -> str | None:
    """The environment this process runs in, or ``None``.

    ``SMYTH_ENV``, else the ``temporal.toml`` profile named by ``TEMPORAL_PROFILE``
    (other than ``default``). An environment keeps everything apart: its own Temporal
    namespace (default ``smyth-<env>``), memory collections and payload-store directory.

    Args:
        environ: Read this mapping instead of the environment and ``.env``.

    Raises:
        ConfigurationError: The name is not 1-32 lowercase letters, digits or dashes.

    Added in 0.4.0. Changed in 0.9.0: ``.env`` too (``EnvironmentSettings``).
    """
    if environ is None:
        return EnvironmentSettings.load().environment
    return _resolve(environ.get(ENVIRONMENT_ENV), environ.get(PROFILE_ENV))


def _resolve(name: str | None, profile: str | None) -> str | None:
    source = ENVIRONMENT_ENV
    name = (name or "").strip()
    if not name:
        name, source = (profile or "").strip(), PROFILE_ENV
        if name == "default":
            name = ""
    if not name:
        return None
    if not _ENVIRONMENT.match(name):
        raise ConfigurationError(
            f"{source}={name!r}: an environment name is 1-32 lowercase letters, digits or '-'"
        )
    return name


def environment_namespace(environment: str) -> str:
    """The Temporal namespace of an environment when nothing else names one.

    Added in 0.4.0.
    """
    return f"smyth-{environment}"


class EnvironmentSettings(SmythSettings):
    """The environment a process runs in (see ``current_environment``).

    Added in 0.9.0.
    """

    environment: str | None = Field(default=None, validation_alias=ENVIRONMENT_ENV)
    """The environment (`staging`, `production`): its own namespace, payload directory
    and memory collections; else the `temporal.toml` profile names it."""
    temporal_profile: str | None = Field(default=None, validation_alias=PROFILE_ENV, exclude=True)
    """The `temporal.toml` profile to connect with; a profile other than `default` also
    names the environment."""

    @model_validator(mode="after")
    def _resolve_environment(self) -> EnvironmentSettings:
        try:
            self.environment = _resolve(self.environment, self.temporal_profile)
        except ConfigurationError as exc:
            raise ValueError(str(exc)) from None
        return self
