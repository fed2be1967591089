"""What a demo run is asked to do, and the error it ends with when it cannot show it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from smyth_temporal.exceptions import ClientError

__all__ = ["DEFAULT_TIMEOUT", "DemoError", "DemoOptions"]

DEFAULT_TIMEOUT = 120.0
"""Seconds the whole demo may take before it gives up (a person's time to decide
with ``interactive`` does not count)."""


@dataclass(frozen=True)
class DemoOptions:
    """The options of one demo run (those of ``smyth demo``).

    Added in 0.3.0.
    """

    address: str | None = None
    """The Temporal frontend (default: ``TEMPORAL_ADDRESS``, the profile, or
    ``localhost:7233``); without a server there, the demo starts a dev server."""
    namespace: str | None = None
    """The Temporal namespace (default: ``TEMPORAL_NAMESPACE``, the profile, or
    ``default``)."""
    model: Literal["scripted", "openai"] | None = None
    """``scripted`` (offline) or ``openai`` (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``);
    ``None``: openai when ``OPENAI_API_KEY`` is set, else scripted."""
    keep_server: bool = False
    """Leave running a dev server the demo started."""
    timeout: float = DEFAULT_TIMEOUT
    """Seconds the demo may take (a person's time to decide does not count)."""
    interactive: bool = False
    """Let the person running the demo decide the approval with ``smyth approve``
    (or ``smyth reject``) from another terminal; needs a terminal on stdin."""
    log_level: str | None = None
    """Least severe log level shown on stderr (``None``: warning)."""
    log_format: str = "console"
    """``console`` or ``json`` (one JSON object per line)."""


class DemoError(ClientError):
    """The demo could not show what it set out to show; the message says why.

    Added in 0.1.0.
    """
