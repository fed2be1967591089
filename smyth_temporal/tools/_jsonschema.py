"""A small, deterministic JSON Schema validator for the arguments of MCP tools.

Workflow code validates the model's arguments before any call, so the validator runs
in the sandbox: pure Python and the standard library only (the ``jsonschema`` package
loads its metaschemas from files and native extensions at import). It covers what tool
input schemas use: ``type``, ``enum``, ``const``, ``properties``, ``required``,
``additionalProperties``, ``items``, ``prefixItems``, length and range bounds,
``pattern``, ``anyOf``/``oneOf``/``allOf``/``not`` and local ``$ref``. Other keywords
(``format``, ``dependentSchemas``...) are not checked: the server validates again, and
its complaint reaches the model too.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["schema_problems"]

_TYPES: dict[str, Any] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    # JSON Schema counts 1.0 as an integer: only the value matters, not its spelling.
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and math.isfinite(v) and v.is_integer())
    ),
}

_RANGES: tuple[tuple[str, Callable[[float, float], bool], str], ...] = (
    ("minimum", lambda v, b: v >= b, "at least"),
    ("maximum", lambda v, b: v <= b, "at most"),
    ("exclusiveMinimum", lambda v, b: v > b, "greater than"),
    ("exclusiveMaximum", lambda v, b: v < b, "less than"),
)

_MAX_DEPTH = 128
"""Schema levels (``properties``, ``items``, ``$ref``, combinators) checked at most.

A schema may be cyclic (a ``$ref`` to itself); past this, the value is refused as too
deep to check rather than let through unchecked. Arguments nest at most
``MAX_ARGUMENT_DEPTH`` (32) levels, which leaves each level several schema steps.
Changed in 0.8.0: 128, and a problem (was 64, and silently accepted).
"""


def schema_problems(value: Any, schema: Mapping[str, Any] | bool) -> list[str]:
    """Every way ``value`` fails ``schema``, as ``path: problem`` lines (empty: it fits).

    Args:
        value: A JSON value (dicts, lists, strings, numbers, booleans, ``None``).
        schema: A JSON schema; its ``$defs``/``definitions`` resolve local ``$ref``s.
    """
    root = schema if isinstance(schema, Mapping) else {}
    problems: list[str] = []
    _check(value, schema, root, "", problems, 0)
    return problems


def _check(
    value: Any,
    schema: Mapping[str, Any] | bool,
    root: Mapping[str, Any],
    path: str,
    problems: list[str],
    depth: int,
) -> None:
    where = path or "(arguments)"
    if schema is True:
        return
    if schema is False:
        problems.append(f"{where}: no value is allowed here")
        return
    if depth > _MAX_DEPTH:
        problems.append(f"{where}: nested too deeply to check")
        return
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = _resolve(ref, root)
        if target is not None:
            _check(value, target, root, path, problems, depth + 1)
    if not _check_type(value, schema, where, problems):
        return  # the other keywords would only repeat the type mismatch
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(repr(v) for v in schema["enum"])
        problems.append(f"{where}: must be one of {allowed}")
    if "const" in schema and value != schema["const"]:
        problems.append(f"{where}: must be {schema['const']!r}")
    if isinstance(value, dict):
        _check_object(value, schema, root, path, problems, depth)
    elif isinstance(value, list):
        _check_array(value, schema, root, path, problems, depth)
    elif isinstance(value, str):
        _check_string(value, schema, where, problems)
    elif _TYPES["number"](value):
        _check_number(value, schema, where, problems)
    _check_combinators(value, schema, root, path, problems, depth)


def _check_type(value: Any, schema: Mapping[str, Any], where: str, problems: list[str]) -> bool:
    expected = schema.get("type")
    if expected is None:
        return True
    names = [expected] if isinstance(expected, str) else list(expected)
    if any(_TYPES.get(name, lambda _: True)(value) for name in names):
        return True
    problems.append(f"{where}: expected {' or '.join(names)}, got {_type_of(value)}")
    return False


def _check_object(
    value: dict[str, Any],
    schema: Mapping[str, Any],
    root: Mapping[str, Any],
    path: str,
    problems: list[str],
    depth: int,
) -> None:
    properties: Mapping[str, Any] = schema.get("properties") or {}
    for name in schema.get("required") or ():
        if name not in value:
            problems.append(f"{_join(path, name)}: field required")
    additional = schema.get("additionalProperties", True)
    patterns: Mapping[str, Any] = schema.get("patternProperties") or {}
    for name, item in value.items():
        if name in properties:
            _check(item, properties[name], root, _join(path, name), problems, depth + 1)
            continue
        matched = [p for p in patterns if re.search(p, name)]
        for pattern in matched:
            _check(item, patterns[pattern], root, _join(path, name), problems, depth + 1)
        if matched:
            continue
        if additional is False:
            problems.append(f"{_join(path, name)}: extra field not permitted")
        elif isinstance(additional, Mapping):
            _check(item, additional, root, _join(path, name), problems, depth + 1)
    _bounds(len(value), schema, "minProperties", "maxProperties", "fields", path, problems)


def _check_array(
    value: list[Any],
    schema: Mapping[str, Any],
    root: Mapping[str, Any],
    path: str,
    problems: list[str],
    depth: int,
) -> None:
    prefix = schema.get("prefixItems") or []
    for index, item in enumerate(value):
        item_schema = prefix[index] if index < len(prefix) else schema.get("items")
        if item_schema is not None:
            _check(item, item_schema, root, _join(path, str(index)), problems, depth + 1)
    _bounds(len(value), schema, "minItems", "maxItems", "items", path, problems)
    if schema.get("uniqueItems") and len({repr(v) for v in value}) < len(value):
        problems.append(f"{path or '(arguments)'}: items must be unique")


def _check_string(value: str, schema: Mapping[str, Any], where: str, problems: list[str]) -> None:
    _bounds(len(value), schema, "minLength", "maxLength", "characters", where, problems)
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and re.search(pattern, value) is None:
        problems.append(f"{where}: must match the pattern {pattern!r}")


def _check_number(value: float, schema: Mapping[str, Any], where: str, problems: list[str]) -> None:
    for keyword, holds, words in _RANGES:
        bound = schema.get(keyword)
        if isinstance(bound, int | float) and not holds(value, bound):
            problems.append(f"{where}: must be {words} {bound}")


def _check_combinators(
    value: Any,
    schema: Mapping[str, Any],
    root: Mapping[str, Any],
    path: str,
    problems: list[str],
    depth: int,
) -> None:
    where = path or "(arguments)"
    for sub in schema.get("allOf") or ():
        _check(value, sub, root, path, problems, depth + 1)
    for keyword in ("anyOf", "oneOf"):
        options = schema.get(keyword)
        if not options:
            continue
        fits = sum(1 for sub in options if not _problems_of(value, sub, root, path, depth))
        if fits == 0:
            first = _problems_of(value, options[0], root, path, depth)
            detail = f" (for example {first[0]})" if first else ""
            problems.append(f"{where}: matches none of the allowed shapes{detail}")
        elif keyword == "oneOf" and fits > 1:
            problems.append(f"{where}: matches more than one of the allowed shapes")
    negated = schema.get("not")
    if negated is not None and not _problems_of(value, negated, root, path, depth):
        problems.append(f"{where}: matches a shape that is not allowed")


def _problems_of(
    value: Any, schema: Any, root: Mapping[str, Any], path: str, depth: int
) -> list[str]:
    found: list[str] = []
    _check(value, schema, root, path, found, depth + 1)
    return found


def _bounds(
    size: int,
    schema: Mapping[str, Any],
    low: str,
    high: str,
    unit: str,
    path: str,
    problems: list[str],
) -> None:
    where = path or "(arguments)"
    if isinstance(schema.get(low), int) and size < schema[low]:
        problems.append(f"{where}: needs at least {schema[low]} {unit}")
    if isinstance(schema.get(high), int) and size > schema[high]:
        problems.append(f"{where}: allows at most {schema[high]} {unit}")


def _resolve(ref: str, root: Mapping[str, Any]) -> Mapping[str, Any] | bool | None:
    """A local ``#/...`` reference inside ``root``; ``None`` for anything else."""
    if not ref.startswith("#"):
        return None
    node: Any = root
    for part in ref[1:].split("/")[1:] if ref != "#" else []:
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, Mapping | bool) else None


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _type_of(value: Any) -> str:
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _TYPES[name](value):
            return name
    return type(value).__name__
