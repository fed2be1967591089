"""Only the settings package reads the environment (issue 25 item 4).

Every setting is a field of a settings model in ``smyth_temporal.settings``, with its
variable, default and docstring; the docs' settings page is generated from them. A module
that reads ``os.environ`` itself would add a setting nobody can find, so this scan
(``ast``, no imports) refuses any read of the environment outside that package, except
where a protocol demands the environment itself, listed in ``EXCEPTIONS`` with why.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import smyth_temporal

PACKAGE = Path(smyth_temporal.__file__).parent
SETTINGS = PACKAGE / "settings"

EXCEPTIONS: dict[tuple[str, str], str] = {
    ("security/_secrets.py", "EnvSecrets.get"): (
        "secret('NAME') resolves a name a tool chose, which no settings model can list"
    ),
    ("demo/_processes.py", "Workers._environment"): (
        "the workers the demo starts inherit its environment (a subprocess's env)"
    ),
}
"""(module, function) -> why it may touch the environment."""

_READERS = frozenset({"environ", "getenv", "putenv", "unsetenv", "environb", "getenvb"})


def _reads(tree: ast.Module) -> Iterator[tuple[str, int, str]]:
    """(enclosing function, line, what) for each use of the environment in ``tree``."""

    def visit(node: ast.AST, scope: str) -> Iterator[tuple[str, int, str]]:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            scope = f"{scope}.{node.name}" if scope else node.name
        if isinstance(node, ast.Attribute) and node.attr in _READERS:
            yield scope, node.lineno, ast.unparse(node)
        if isinstance(node, ast.ImportFrom) and node.module == "os":
            for alias in node.names:
                if alias.name in _READERS:
                    yield scope, node.lineno, f"from os import {alias.name}"
        if isinstance(node, ast.keyword) and node.arg == "envvar":  # Click reads it
            yield scope, getattr(node.value, "lineno", 0), "envvar="
        for child in ast.iter_child_nodes(node):
            yield from visit(child, scope)

    yield from visit(tree, "")


def test_only_the_settings_package_reads_the_environment() -> None:
    found = []
    allowed_seen = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        if SETTINGS in path.parents:
            continue
        module = path.relative_to(PACKAGE).as_posix()
        for scope, line, what in _reads(ast.parse(path.read_text(encoding="utf-8"))):
            if (module, scope) in EXCEPTIONS:
                allowed_seen.add((module, scope))
                continue
            found.append(f"{module}:{line} ({scope or 'module'}): {what}")
    assert found == [], "read it through a settings model in smyth_temporal.settings"
    # An exception nobody needs any more goes.
    assert allowed_seen == set(EXCEPTIONS)


def test_the_scan_finds_what_it_must_refuse() -> None:
    source = (
        "import os\nfrom os import getenv\n"
        "def f():\n    return os.environ.get('X'), os.getenv('Y')\n"
        "typer.Option('--x', envvar='SMYTH_X')\n"
    )
    found = {what for _, _, what in _reads(ast.parse(source))}
    assert found == {"from os import getenv", "os.environ", "os.getenv", "envvar="}
