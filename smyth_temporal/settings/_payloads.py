"""Where payloads too large for history go: the content-addressed payload store."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

from pydantic import BeforeValidator, Field

from smyth_temporal.settings._base import switch
from smyth_temporal.settings._environment import EnvironmentSettings

__all__ = [
    "DEFAULT_PAYLOAD_THRESHOLD",
    "PAYLOAD_PATH_ENV",
    "STATE_DIR",
    "PayloadSettings",
    "payload_store_path",
]

STATE_DIR = ".smyth"
"""The directory of a project's local state (dev server, keys, payload store).

Added in 0.8.0.
"""

PAYLOAD_PATH_ENV = "SMYTH_PAYLOAD_PATH"
"""Where the payload store is; a relative path is taken from the process's directory.

Added in 0.8.0.
"""

DEFAULT_PAYLOAD_THRESHOLD = 2048
"""Payloads of at least this many bytes go to the store (``SMYTH_PAYLOAD_THRESHOLD``).

Measured with ``bench/history_bytes.py`` (50 steps, each a 4 KB tool result): a step
costs about 2,100 bytes of history however low the threshold goes (12 events of
bookkeeping and two 210-byte references); 256 saved 5 % more than 2,048 by also
storing the small tool calls, at one more file write per step. Up to 4,096 the
result was the same (2,241 bytes/step, 53x smaller than inline); at 8,192 the tool
results stayed inline (6,280 bytes/step). At 2 KiB a step stays under about 10 KB
even if four payloads sit just below the threshold, so 50 MB of history takes
over 5,000 steps: Temporal's 51,200-event limit (about 4,200 steps) comes first.
Small payloads (tool arguments, short answers) stay inline, where a reference
would save little and cost a file write.

Added in 0.2.0.
"""


def _bytes(value: object) -> object:
    text = str(value).strip()
    try:
        number = int(text)
    except ValueError:
        number = -1
    if number < 0:
        raise ValueError(f"must be a number of bytes (0 or more), not {text!r}")
    return number


class PayloadSettings(EnvironmentSettings):
    """The payload store's settings; clients, workers and codec servers must agree.

    Added in 0.9.0.
    """

    payload_storage: Annotated[bool, switch(on=("fs",), off=("none",))] = Field(
        default=True, validation_alias="SMYTH_PAYLOAD_STORAGE"
    )
    """Large payloads go to the content-addressed store (`on`/`off`; the same everywhere)."""
    payload_path: Path | None = Field(default=None, validation_alias=PAYLOAD_PATH_ENV)
    """The payload store's directory (default: `.smyth/payloads` in the nearest directory
    up that has `.smyth/`)."""
    payload_threshold: Annotated[int, BeforeValidator(_bytes)] = Field(
        default=DEFAULT_PAYLOAD_THRESHOLD, validation_alias="SMYTH_PAYLOAD_THRESHOLD"
    )
    """From what size (bytes) a payload is stored."""
    payload_chunks: Annotated[bool, switch()] = Field(
        default=True, validation_alias="SMYTH_PAYLOAD_CHUNKS"
    )
    """Conversations stored as shared chunks (`off` while 0.4 processes still run)."""

    def store_path(self, *, cwd: Path | None = None) -> Path:
        """The payload store's directory, as an absolute path (see ``payload_store_path``)."""
        here = Path.cwd() if cwd is None else cwd
        if self.payload_path is not None:
            path = here / self.payload_path.expanduser()
        else:
            root = next((d for d in (here, *here.parents) if (d / STATE_DIR).is_dir()), here)
            path = root / STATE_DIR / "payloads"
        if self.environment is not None:
            path = path / self.environment  # environments never share stored payloads
        return Path(os.path.abspath(path))


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
        environ: The environment variables (default: the process's, and ``.env``).
        cwd: The process's directory (default: the current one).

    Raises:
        ConfigurationError: A payload setting or the environment's name is invalid.

    Added in 0.8.0 (the store was relative to each process's directory before).
    """
    settings = PayloadSettings.load() if environ is None else PayloadSettings.from_environ(environ)
    return settings.store_path(cwd=cwd)
