"""Connection settings, read the way Temporal's own tools read them."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, field_validator
from temporalio.envconfig import ClientConfig

from smyth_temporal.exceptions import ConfigurationError

__all__ = [
    "DEFAULT_ADDRESS",
    "DEFAULT_NAMESPACE",
    "DEFAULT_TASK_QUEUE",
    "ENVIRONMENT_ENV",
    "PAYLOAD_PATH_ENV",
    "STATE_DIR",
    "WORKFLOW_PAUSE_SETTING",
    "Settings",
    "current_environment",
    "environment_namespace",
    "payload_store_path",
]

DEFAULT_ADDRESS = "localhost:7233"
"""Where the Temporal frontend listens when nothing else is said."""

DEFAULT_NAMESPACE = "default"
"""The Temporal namespace when nothing else is said."""

WORKFLOW_PAUSE_SETTING = "frontend.WorkflowPauseEnabled=true"
"""The dynamic config a self-hosted server (1.30+) needs for Workflow Pause."""

DEFAULT_TASK_QUEUE = "smyth-agents"
"""The task queue agents run on when nothing else is said (``SMYTH_TASK_QUEUE``)."""

_HOST_PORT = re.compile(r"^[A-Za-z0-9_.\-\[\]:]+:\d{1,5}$")

ENVIRONMENT_ENV = "SMYTH_ENV"
"""Selects an environment (``staging``, ``production``); else ``TEMPORAL_PROFILE`` does.

Added in 0.4.0.
"""

_ENVIRONMENT = re.compile(r"^[a-z][a-z0-9-]{0,31}$")


def current_environment(environ: Mapping[str, str] | None = None) -> str | None:
    """The environment this process runs in, or ``None``.

    ``SMYTH_ENV``, else the ``temporal.toml`` profile named by ``TEMPORAL_PROFILE``
    (other than ``default``). An environment keeps everything apart: its own Temporal
    namespace (default ``smyth-<env>``), memory collections and payload-store directory.

    Raises:
        ConfigurationError: The name is not 1-32 lowercase letters, digits or dashes.

    Added in 0.4.0.
    """
    env = os.environ if environ is None else environ
    name = env.get(ENVIRONMENT_ENV, "").strip()
    source = ENVIRONMENT_ENV
    if not name:
        name, source = env.get("TEMPORAL_PROFILE", "").strip(), "TEMPORAL_PROFILE"
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


STATE_DIR = ".smyth"
"""The directory of a project's local state (dev server, keys, payload store).

Added in 0.8.0.
"""

PAYLOAD_PATH_ENV = "SMYTH_PAYLOAD_PATH"
"""Where the payload store is; a relative path is taken from the process's directory.

Added in 0.8.0.
"""


def payload_store_path(
    environ: Mapping[str, str] | None = None, *, cwd: Path | None = None
) -> Path:
    """The payload store's directory, as an absolute path.

    ``SMYTH_PAYLOAD_PATH`` if set (a relative one is taken from ``cwd``); else
    ``.smyth/payloads`` in the project: the nearest directory from ``cwd`` up that has
    a ``.smyth`` directory, so every process started anywhere in the project finds the
    same store, or ``cwd`` itself outside any project. An environment (``SMYTH_ENV``)
    gets its own directory in it.

    Args:
        environ: The environment variables (default: ``os.environ``).
        cwd: The process's directory (default: the current one).

    Raises:
        ConfigurationError: The environment's name is invalid.

    Added in 0.8.0 (the store was relative to each process's directory before).
    """
    env = os.environ if environ is None else environ
    here = Path.cwd() if cwd is None else cwd
    raw = env.get(PAYLOAD_PATH_ENV, "").strip()
    if raw:
        path = here / Path(raw).expanduser()
    else:
        root = next((d for d in (here, *here.parents) if (d / STATE_DIR).is_dir()), here)
        path = root / STATE_DIR / "payloads"
    environment = current_environment(env)
    if environment is not None:
        path = path / environment  # environments never share stored payloads
    return Path(os.path.abspath(path))


class Settings(BaseModel):
    """Where to find Temporal and which task queue agents use.

    ``load()`` follows Temporal's conventions: the ``TEMPORAL_ADDRESS``,
    ``TEMPORAL_NAMESPACE`` and ``TEMPORAL_API_KEY`` variables and the profiles of
    ``temporal.toml`` (``TEMPORAL_PROFILE``), then ``SMYTH_TASK_QUEUE``; explicit
    arguments (CLI flags) win. With an environment (``SMYTH_ENV``) and no namespace
    named anywhere, the namespace is ``smyth-<env>``.

    Added in 0.1.0.
    """

    address: str = DEFAULT_ADDRESS
    """The Temporal frontend, ``host:port``."""
    namespace: str = DEFAULT_NAMESPACE
    """The Temporal namespace."""
    task_queue: str = Field(default=DEFAULT_TASK_QUEUE, min_length=1)
    """The task queue agent workers poll."""
    environment: str | None = None
    """The environment (``SMYTH_ENV``), if any; see ``current_environment``."""
    connect: dict[str, Any] = Field(default_factory=dict, exclude=True, repr=False)
    """Further ``Client.connect`` arguments from the profile (API key, TLS); never logged."""

    @field_validator("address")
    @classmethod
    def _check_address(cls, value: str) -> str:
        if not _HOST_PORT.match(value):
            raise ValueError(f"expected host:port, got {value!r}")
        return value

    @classmethod
    def load(
        cls,
        *,
        address: str | None = None,
        namespace: str | None = None,
        task_queue: str | None = None,
    ) -> Settings:
        """Read the settings from the environment, overridden by the arguments given.

        Raises:
            ConfigurationError: A setting is invalid; the message names it.
        """
        try:
            profile = dict(ClientConfig.load_client_connect_config())
        except Exception as exc:  # a malformed temporal.toml, say
            raise ConfigurationError(f"cannot read the Temporal client profile: {exc}") from exc
        target = profile.pop("target_host", None)
        profile_namespace = profile.pop("namespace", None)
        environment = current_environment()
        fallback = environment_namespace(environment) if environment else DEFAULT_NAMESPACE
        try:
            return cls(
                address=address or target or DEFAULT_ADDRESS,
                # An explicit namespace (flag, TEMPORAL_NAMESPACE, the profile) wins over
                # the environment's default one.
                namespace=namespace or profile_namespace or fallback,
                environment=environment,
                task_queue=task_queue or os.environ.get("SMYTH_TASK_QUEUE") or DEFAULT_TASK_QUEUE,
                connect=profile,
            )
        except ValueError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc']))}: {e['msg']}"
                for e in getattr(exc, "errors", lambda: [])()
            )
            raise ConfigurationError(f"invalid settings: {problems or exc}") from None
