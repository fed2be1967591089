"""Secret values this process has resolved, and masking them wherever text leaves it.

Workers register every secret value they resolve; logs (a structlog processor), tool
results and error messages are then masked by exact value before they reach the
model, history or a log file. Exact matching is the whole promise: a secret that a
tool transforms (encodes, splits) is not recognised.
"""

from __future__ import annotations

import threading
from collections.abc import MutableMapping
from typing import Any

__all__ = ["masked_cause", "redact", "redact_event", "redact_value", "register_secret"]

_MIN_LENGTH = 4
"""Shorter values are not masked: "on" or "1" would blank out ordinary text."""

_lock = threading.Lock()
_values: dict[str, str] = {}
"""Value -> the mask that replaces it."""


def register_secret(name: str, value: str) -> None:
    """Remember ``value`` (the secret ``name``) so that ``redact`` masks it from now on."""
    if len(value) >= _MIN_LENGTH:
        with _lock:
            _values[value] = f"[secret:{name}]"


def redact(text: str) -> str:
    """``text`` with every registered secret value replaced by ``[secret:NAME]``."""
    if not _values:
        return text
    # Longest first, so a secret that contains another is masked whole.
    for value, mask in sorted(_values.items(), key=lambda item: -len(item[0])):
        if value in text:
            text = text.replace(value, mask)
    return text


def masked_cause(exc: BaseException) -> BaseException | None:
    """``exc``, or ``None`` when it (or what caused it) quotes a registered secret.

    For ``raise masked from masked_cause(exc)``: Temporal records a failure's cause
    chain in history with each message as it is, so a cause quoting a secret would
    undo the masking of the error raised in its place.
    """
    seen: BaseException | None = exc
    while seen is not None:
        if redact(str(seen)) != str(seen):
            return None
        seen = seen.__cause__ or (None if seen.__suppress_context__ else seen.__context__)
    return exc


def redact_value(value: Any) -> Any:
    """``value`` with ``redact`` applied to every string in it (dicts, lists, tuples)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: redact_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(redact_value(item) for item in value)
    if isinstance(value, BaseException):
        return redact(repr(value))
    return value


def redact_event(
    logger: object, method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """A structlog processor masking registered secrets in every field of an event."""
    if not _values:
        return event_dict
    for key, value in list(event_dict.items()):
        event_dict[key] = redact_value(value)
    return event_dict
