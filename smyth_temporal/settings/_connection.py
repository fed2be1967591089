"""The settings every process shares.

The Temporal connection, read the way Temporal's own tools read it, and the payload
store, encryption, API key and logging.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import PydanticBaseSettingsSource
from temporalio.envconfig import ClientConfig

from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.settings._base import SmythSettings
from smyth_temporal.settings._environment import environment_namespace
from smyth_temporal.settings._payloads import PayloadSettings
from smyth_temporal.settings._security import AccessSettings, EncryptionSettings

__all__ = [
    "ADDRESS_ENV",
    "DEFAULT_ADDRESS",
    "DEFAULT_NAMESPACE",
    "DEFAULT_TASK_QUEUE",
    "LOG_FORMAT_ENV",
    "LOG_LEVEL_ENV",
    "NAMESPACE_ENV",
    "TASK_QUEUE_ENV",
    "WORKFLOW_PAUSE_SETTING",
    "LoggingSettings",
    "Settings",
]

DEFAULT_ADDRESS = "localhost:7233"
"""Where the Temporal frontend listens when nothing else is said."""

DEFAULT_NAMESPACE = "default"
"""The Temporal namespace when nothing else is said."""

WORKFLOW_PAUSE_SETTING = "frontend.WorkflowPauseEnabled=true"
"""The dynamic config a self-hosted server (1.30+) needs for Workflow Pause."""

DEFAULT_TASK_QUEUE = "smyth-agents"
"""The task queue agents run on when nothing else is said (``SMYTH_TASK_QUEUE``)."""

ADDRESS_ENV = "TEMPORAL_ADDRESS"
NAMESPACE_ENV = "TEMPORAL_NAMESPACE"
TASK_QUEUE_ENV = "SMYTH_TASK_QUEUE"
LOG_LEVEL_ENV = "SMYTH_LOG_LEVEL"
LOG_FORMAT_ENV = "SMYTH_LOG_FORMAT"

_HOST_PORT = re.compile(r"^[A-Za-z0-9_.\-\[\]:]+:\d{1,5}$")


class _TemporalProfile(PydanticBaseSettingsSource):
    """The ``temporal.toml`` profile, through ``temporalio.envconfig``.

    envconfig reads the ``TEMPORAL_*`` variables over the file (API key, TLS, gRPC
    metadata, ``TEMPORAL_PROFILE``, ``TEMPORAL_CONFIG_FILE``); it is handed the process
    environment over ``.env``, so ``.env`` configures the connection too.
    """

    def __init__(self, settings_cls: type[SmythSettings], environ: Mapping[str, str]) -> None:
        super().__init__(settings_cls)
        self._environ = environ

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # the profile is read whole, in __call__

    def __call__(self) -> dict[str, Any]:
        try:
            profile = dict(ClientConfig.load_client_connect_config(override_env_vars=self._environ))
        except Exception as exc:  # a malformed temporal.toml, say
            raise ConfigurationError(f"cannot read the Temporal client profile: {exc}") from exc
        values: dict[str, Any] = {}
        target = profile.pop("target_host", None)
        namespace = profile.pop("namespace", None)
        if target:
            values[ADDRESS_ENV] = target
        if namespace:
            values[NAMESPACE_ENV] = namespace
        values["connect"] = profile
        return values


class LoggingSettings(SmythSettings):
    """How a command logs on stderr.

    Added in 0.9.0.
    """

    log_level: Literal["debug", "info", "warning", "error"] | None = Field(
        default=None, validation_alias=LOG_LEVEL_ENV
    )
    """Least severe log level shown on stderr (default: `info` for long-running processes,
    `warning` otherwise; `--log-level`)."""
    log_format: Literal["console", "json"] = Field(
        default="console", validation_alias=LOG_FORMAT_ENV
    )
    """`console` or `json` (one object per line) (`--log-format`)."""


class Settings(PayloadSettings, EncryptionSettings, AccessSettings, LoggingSettings):
    """Where to find Temporal and which task queue agents use, and what every process shares.

    Read from, highest first: arguments (CLI options), the environment, ``.env``, then
    ``temporal.toml``, then the defaults. The connection follows Temporal's conventions:
    ``TEMPORAL_ADDRESS``, ``TEMPORAL_NAMESPACE``, ``TEMPORAL_API_KEY`` and TLS variables
    and the profiles of ``temporal.toml`` (``TEMPORAL_PROFILE``), then
    ``SMYTH_TASK_QUEUE``. With an environment (``SMYTH_ENV``) and no namespace named
    anywhere, the namespace is ``smyth-<env>``. The payload store, encryption, API key
    and logging settings are here too: every process kind needs them.

    Added in 0.1.0. Changed in 0.9.0: a ``pydantic-settings`` model, the base of
    ``WorkerSettings``, ``GatewaySettings``, ``CodecServerSettings`` and ``DevSettings``;
    reads ``.env``.
    """

    process_kind = "client"

    address: str = Field(default=DEFAULT_ADDRESS, validation_alias=ADDRESS_ENV)
    """The Temporal frontend, `host:port` (`--address`)."""
    namespace: str = Field(default=DEFAULT_NAMESPACE, validation_alias=NAMESPACE_ENV)
    """The Temporal namespace (default: `default`, `smyth-<env>` with `SMYTH_ENV`;
    `--namespace`)."""
    task_queue: str = Field(
        default=DEFAULT_TASK_QUEUE, min_length=1, validation_alias=TASK_QUEUE_ENV
    )
    """The task queue agents run on (`--task-queue`)."""
    connect: dict[str, Any] = Field(default_factory=dict, exclude=True, repr=False)
    """Further ``Client.connect`` arguments from the profile (API key, TLS); never logged."""

    @classmethod
    def file_sources(cls, environ: Mapping[str, str]) -> tuple[PydanticBaseSettingsSource, ...]:
        """``temporal.toml``, below the environment and ``.env``."""
        return (_TemporalProfile(cls, environ),)

    @field_validator("address")
    @classmethod
    def _check_address(cls, value: str) -> str:
        if not _HOST_PORT.match(value):
            raise ValueError(f"expected host:port, got {value!r}")
        return value

    @model_validator(mode="after")
    def _environment_namespace(self) -> Settings:
        # An explicit namespace (an option, TEMPORAL_NAMESPACE, the profile) wins over
        # the environment's default one.
        if "namespace" not in self.model_fields_set and self.environment:
            self.namespace = environment_namespace(self.environment)
        return self
