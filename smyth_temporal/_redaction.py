"""Secret values this process has resolved, and masking them wherever text leaves it.

Workers register every secret value they resolve; logs (a structlog processor), tool
results and error messages are then masked by exact value before they reach the
model, history or a log file. Exact matching is the whole promise: a secret that a
tool transforms (encodes, splits) is not recognised.

Structured values are masked before they are serialized (``redact_value`` walks them),
because serializing rewrites a value with a quote, a backslash or a control character
in it (JSON escapes each) and the text no longer holds it exactly. Text is masked of
those escaped spellings too (JSON's, ASCII-only JSON's, Python's ``repr``), for text
that was serialized before it reached us.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Mapping, MutableMapping
from typing import Any

import pydantic_core
from pydantic import BaseModel

__all__ = [
    "MAX_DEPTH",
    "masked_cause",
    "redact",
    "redact_event",
    "redact_value",
    "register_secret",
    "spellings",
]

_MIN_LENGTH = 4
"""Shorter values are not masked: "on" or "1" would blank out ordinary text."""

MAX_DEPTH = 64
"""How deep ``redact_value`` walks; deeper parts are masked as their JSON text."""

_lock = threading.Lock()
_values: dict[str, str] = {}
"""Spelling of a value (as is, or escaped) -> the mask that replaces it."""
_ordered: tuple[tuple[str, str], ...] = ()
"""``_values`` longest first, so a secret that contains another is masked whole."""


def spellings(value: str) -> set[str]:
    """``value`` as it is and as serializers escape it inside a quoted string.

    JSON (``json.dumps`` and ``pydantic_core.to_json`` agree), ASCII-only JSON, and
    Python's ``repr`` (what a log line of a container or an exception shows) in both
    of its quotings: a longer string holding both quote marks is quoted with ``'``,
    which then escapes every ``'`` in it, the secret's included.
    """
    return {
        value,
        json.dumps(value, ensure_ascii=False)[1:-1],
        json.dumps(value)[1:-1],
        repr(value)[1:-1],
        repr("\"'" + value)[4:-1],
    }


def register_secret(name: str, value: str) -> None:
    """Remember ``value`` (the secret ``name``) so that ``redact`` masks it from now on."""
    global _ordered
    if len(value) >= _MIN_LENGTH:
        with _lock:
            for spelling in spellings(value):
                _values[spelling] = f"[secret:{name}]"
            _ordered = tuple(sorted(_values.items(), key=lambda item: -len(item[0])))


def redact(text: str) -> str:
    """``text`` with every registered secret value (or its escaped spelling) masked."""
    for value, mask in _ordered:
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


def redact_value(value: Any, depth: int = MAX_DEPTH) -> Any:
    """``value`` with ``redact`` applied to every string in it, keys included.

    Walks mappings (as dicts), lists, tuples, sets, pydantic models and dataclasses
    (as what they dump to). Any other object whose ``repr`` quotes a secret becomes
    that ``repr``, masked; one that does not is returned as it is. Below ``depth``
    levels, what is left is masked as its JSON text (bounded recursion, nothing skipped).
    """
    if not _ordered:
        return value
    if isinstance(value, str):
        return redact(value)
    if value is None or isinstance(value, bool | int | float):
        return value
    if depth <= 0:
        return redact(_as_text(value))
    if isinstance(value, BaseModel) or (
        dataclasses.is_dataclass(value) and not isinstance(value, type)
    ):
        # Kept as the object when nothing in it is secret: a log line shows it as before.
        dumped = pydantic_core.to_jsonable_python(value, fallback=repr)
        masked = redact_value(dumped, depth)
        return value if masked == dumped else masked
    if isinstance(value, Mapping):
        return {
            redact_value(key, depth - 1): redact_value(item, depth - 1)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple | set | frozenset):
        items = [redact_value(item, depth - 1) for item in value]
        # A plain tuple stays one; anything else (a named tuple, a set) becomes a list.
        return tuple(items) if type(value) is tuple else items
    if isinstance(value, BaseException):
        return redact(repr(value))
    text = repr(value)
    masked = redact(text)
    return value if masked == text else masked


def _as_text(value: Any) -> str:
    """JSON text of ``value`` (its ``repr`` where JSON has no spelling for it)."""
    try:
        return json.dumps(value, ensure_ascii=False, default=repr)
    except (ValueError, RecursionError):  # a cycle, or deeper than Python's stack
        return repr(value)


def redact_event(
    logger: object, method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """A structlog processor masking registered secrets in every field of an event."""
    if not _ordered:
        return event_dict
    for key, value in list(event_dict.items()):
        event_dict[key] = redact_value(value)
    return event_dict
