"""A process environment without smyth's or Temporal's variables, for settings tests."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from smyth_temporal.testing import ScriptedModel, reply

__all__ = ["isolated_settings_env", "scripted"]

_PREFIXES = ("SMYTH_", "TEMPORAL_", "OPENAI_", "QDRANT_", "OTEL_SERVICE_NAME")
_KEPT = frozenset({"SMYTH_PAYLOAD_PATH"})  # the session's payload store (conftest)


def scripted() -> ScriptedModel:
    """A model that answers once: what the settings tests' workers need."""
    return ScriptedModel([reply("ok")])


@contextlib.contextmanager
def isolated_settings_env(directory: Path) -> Iterator[None]:
    """Run with none of the settings' variables set and ``directory`` as cwd.

    Restores both afterwards. ``temporal.toml`` is looked up through
    ``TEMPORAL_CONFIG_FILE`` (removed here), so only a file a test names is read.
    """
    saved = dict(os.environ)
    cwd = Path.cwd()
    for name in list(os.environ):
        if name.startswith(_PREFIXES) and name not in _KEPT:
            del os.environ[name]
    # No user's ~/.config/temporalio/temporal.toml: an empty profile file instead.
    empty = directory / "no-temporal.toml"
    empty.write_text("")
    os.environ["TEMPORAL_CONFIG_FILE"] = str(empty)
    os.chdir(directory)
    try:
        yield
    finally:
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(saved)
