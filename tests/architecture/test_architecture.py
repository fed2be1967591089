"""The architecture, checked: the determinism boundary, the layers, visibility, no cycles, sizes.

These read the package's source (with ``ast``) or import it in a fresh interpreter;
they start no server. A failure names the module and the import that broke the rule.

``LAYERS`` is the one list of layers: the root package's docstring and the docs'
architecture page quote it, and a test here fails when either says something else.

Visibility, one rule: a module whose name starts with ``_`` (and a name that does) is
private to the package that holds it. ``smyth_temporal.x._y`` is imported only from
inside ``smyth_temporal.x``; everyone else imports ``x``'s face, its ``__init__`` (which
re-exports, eagerly or lazily) or one of its public modules. The top-level private modules
(``smyth_temporal._logging``, ``_names``, ``_files``, ...) are private to
``smyth_temporal``: any module of the package may import them, nothing outside it may
(examples, workers, the docs' samples). Tests may open up the package they mirror
(``tests/storage/`` may import ``smyth_temporal.storage._gc``); from any other package
they import its face like everyone else.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import smyth_temporal
from smyth_temporal.agent.workflow import AgentWorkflow
from smyth_temporal.plugin import PASSTHROUGH_MODULES

PACKAGE = Path(smyth_temporal.__file__).parent
MAX_MODULE_LINES = 700
MAX_FACADE_LINES = 450

WORKFLOW_SIDE = (
    "smyth_temporal",
    "smyth_temporal.agent",
    "smyth_temporal.context",
    "smyth_temporal.tools",
    "smyth_temporal.types",
)
"""What workflow code imports: the top-level package and the deterministic layers."""

NOT_IN_WORKFLOWS = (
    "cryptography",
    "openai",
    "httpx",
    "mcp",
    "qdrant_client",
    "qdrant_edge",
    "smyth_temporal.activities",
    "smyth_temporal.cli",
    "smyth_temporal.clients",
    "smyth_temporal.demo",
    "smyth_temporal.mcp",
    "smyth_temporal.memory",
    "smyth_temporal.models",
    "smyth_temporal.plugin",
    "smyth_temporal.security",
    "smyth_temporal.settings",
    "smyth_temporal.storage",
    "smyth_temporal.testing",
    "smyth_temporal.worker",
)
"""Modules with I/O (activities, providers, clients) that workflow code must not load."""

LAYERS: list[tuple[str, set[str]]] = [
    ("interfaces", {"cli", "demo", "gateway", "codec_server", "mcp_server"}),
    (
        "clients and workers",
        {
            "clients",
            "worker",
            "plugin",
            "testing",
            "devserver",
            "_passthrough",
            "_model_queue",
            "_probe",
        },
    ),
    ("agent runtime", {"agent"}),
    (
        "context engine and worker-side activities",
        {"context", "activities", "mcp", "a2a", "notifications"},
    ),
    (
        "tools and providers",
        {"tools", "memory", "models", "storage", "security", "observability", "_live"},
    ),
    (
        "wire types and shared helpers",
        {
            "types",
            "exceptions",
            "settings",
            "_names",
            "_logging",
            "_text",
            "_payloads",
            "_files",
            "_redaction",
            "_telemetry",
            "_prometheus",
        },
    ),
]
"""The layers of smyth_temporal, top to bottom, by name and package: a module imports
only its own layer and the layers below it. The root docstring and docs/architecture.md
quote this list (``test_layers_are_quoted_where_they_are_described``)."""


def _modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        yield name, path


def _imports(
    name: str, path: Path, *, type_only: bool = False, source: str | None = None
) -> Iterator[tuple[str, int]]:
    """Every module ``name`` imports, at any level; under ``TYPE_CHECKING`` only if asked.

    A ``from`` import also yields ``module.name`` for each name, which is the module
    itself when the name is a submodule, and names a private name by its underscore.
    """
    tree = ast.parse(path.read_text() if source is None else source)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if not type_only and isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped |= {id(n) for child in node.body for n in ast.walk(child)}
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            yield base, node.lineno
            for alias in node.names:  # `from pkg import module`
                yield f"{base}.{alias.name}", node.lineno
        elif (
            isinstance(node, ast.Call)
            and ast.unparse(node.func) in ("importlib.import_module", "import_module")
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            yield str(node.args[0].value), node.lineno


def _graph() -> dict[str, dict[str, int]]:
    modules = dict(_modules())
    graph: dict[str, dict[str, int]] = {name: {} for name in modules}
    for name, path in modules.items():
        for target, line in _imports(name, path):
            if target in modules and target != name:
                graph[name].setdefault(target, line)
    return graph


def _graph_of_workflow_side() -> set[str]:
    """Every module the workflow-side modules import directly (ours and others')."""
    return {
        target
        for name, path in _modules()
        if name.startswith(WORKFLOW_SIDE[1:])
        for target, _ in _imports(name, path)
    }


def _layer(module: str) -> int | None:
    parts = module.split(".")
    if len(parts) < 2:
        return None  # the top-level package re-exports from every layer
    for index, (_, packages) in enumerate(LAYERS):
        if parts[1] in packages:
            return index
    raise AssertionError(f"{module} is in no layer of LAYERS: add its package there")


def test_workflow_side_loads_nothing_with_io() -> None:
    # A fresh interpreter: what importing the workflow-side modules really loads.
    code = (
        "import json, sys\n"
        + "".join(f"import {name}\n" for name in WORKFLOW_SIDE)
        + "import examples.market_monitor.workflows\n"
        + "print(json.dumps(sorted(sys.modules)))\n"
    )
    output = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=PACKAGE.parent,
    ).stdout
    loaded = json.loads(output)
    offending = [m for m in loaded if m.startswith(NOT_IN_WORKFLOWS)]
    assert offending == [], f"workflow-side imports load modules with I/O: {offending}"
    # temporalio.client is loaded only by Temporal's own stream library (its package
    # holds the workflow half and the publisher half together), never by our code.
    assert "temporalio.client" not in _graph_of_workflow_side()
    # The check has teeth: the clients are there to be loaded, just not by workflows.
    assert "smyth_temporal.agent.workflow" in loaded


def test_sandbox_passes_through_only_workflow_side_modules() -> None:
    ours = [m for m in PASSTHROUGH_MODULES if m.startswith("smyth_temporal")]
    assert "smyth_temporal" not in ours, "passing the whole package would hide it all"
    for module in ours:
        assert not module.startswith(NOT_IN_WORKFLOWS), module
        assert module.startswith(WORKFLOW_SIDE[1:]) or _layer(module) == len(LAYERS) - 1


def test_imports_go_downward_only() -> None:
    upward = []
    for module, targets in _graph().items():
        here = _layer(module)
        for target, line in targets.items():
            there = _layer(target)
            if here is not None and there is not None and there < here:
                upward.append(f"{module}:{line} imports {target}")
    assert upward == []


def test_no_module_imports_the_top_level_package() -> None:
    # smyth_temporal/__init__ imports (lazily) from everywhere; importing it back from
    # inside the package is a cycle even when a function-level import hides it.
    offending = [
        f"{module}:{line}"
        for module, targets in _graph().items()
        if module != "smyth_temporal"
        for target, line in targets.items()
        if target == "smyth_temporal"
    ]
    assert offending == []


def test_no_import_cycles() -> None:
    graph = _graph()
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        path.append(module)
        for target in graph[module]:
            if state.get(target) == 1:
                cycles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target)
        path.pop()
        state[module] = 2

    for module in graph:
        if module not in state:
            visit(module)
    # A package importing its own submodules (to re-export) is not a cycle unless a
    # submodule imports the package back; those show up as real cycles here.
    assert cycles == [], "\n".join(" -> ".join(c) for c in cycles)


@pytest.mark.parametrize(("module", "path"), list(_modules()), ids=lambda v: str(v))
def test_module_size(module: str, path: Path) -> None:
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_MODULE_LINES, f"{module} has {lines} lines: split it by concern"


def test_agent_facade_stays_small() -> None:
    lines, _ = inspect.getsourcelines(AgentWorkflow)
    assert len(lines) <= MAX_FACADE_LINES, f"AgentWorkflow's class body has {len(lines)} lines"


def test_graph_sees_function_level_imports(tmp_path: Path) -> None:
    # The checks above are only as good as the import reader: make sure it finds
    # imports inside functions and skips type-only ones.
    source = tmp_path / "probe.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import smyth_temporal.cli\n"
        "def f():\n    from smyth_temporal.clients import agents\n"
    )
    found = {target for target, _ in _imports("smyth_temporal.types.probe", source)}
    assert "smyth_temporal.clients.agents" in found
    assert "smyth_temporal.cli" not in found


def _private_owner(target: str) -> str | None:
    """The package a private module or name in ``target`` belongs to (``None``: public)."""
    parts = target.split(".")
    for index, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:index])
    return None


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(f"{package}.")


def _private_imports(
    name: str, path: Path, *, opens: str | None = None, source: str | None = None
) -> Iterator[str]:
    """``name:line imports target`` for each private import from outside its package.

    ``opens``: a package whose privates this code may import besides its own (a test
    opens the package it mirrors).
    """
    for target, line in _imports(name, path, type_only=True, source=source):
        owner = _private_owner(target)
        if owner is None or not owner.startswith("smyth_temporal"):
            continue
        if _inside(name, owner) or (opens is not None and _inside(owner, opens)):
            continue
        face = owner if owner != "smyth_temporal" else "the package's public modules"
        yield f"{name}:{line} imports {target} (private to {owner}; import it from {face})"


def test_no_module_imports_another_packages_private_modules() -> None:
    offending = [hit for name, path in _modules() for hit in _private_imports(name, path)]
    assert offending == [], "\n".join(offending)


def _python_samples(markdown: str) -> Iterator[str]:
    for match in re.finditer(r"```python\n(.*?)```", markdown, re.DOTALL):
        yield match.group(1)


def test_code_outside_the_package_imports_only_public_names() -> None:
    # Examples, worker entry points and the samples a reader copies from the docs are
    # what users write: they show the faces, never a private module.
    root = PACKAGE.parent
    offending: list[str] = []
    for folder in ("examples", "workers"):
        for path in sorted((root / folder).rglob("*.py")):
            name = ".".join(path.relative_to(root).with_suffix("").parts)
            offending += _private_imports(name, path)
    for page in [root / "README.md", *sorted((root / "docs").rglob("*.md"))]:
        for index, sample in enumerate(_python_samples(page.read_text())):
            try:
                ast.parse(sample)
            except SyntaxError:
                continue  # a fragment; the docs' own test runs the samples that run
            label = f"{page.relative_to(root)}[{index}]"
            offending += _private_imports(label, page, source=sample)
    assert offending == [], "\n".join(offending)


NOT_YET_PUBLIC: dict[str, str] = {}
"""Private modules that tests and benchmarks may still import anywhere, and why."""

KNOWN_PRIVATE_IMPORTS: dict[str, set[str]] = {
    # The race of a live channel's close with a late signal: the protocol between the
    # workflow's channel, the model activity's publisher and the client's feed, each
    # private to its package, driven step by step on a real server.
    "tests.agent.test_live_channel_race": {
        "smyth_temporal._live",
        "smyth_temporal.activities._stream",
        "smyth_temporal.clients._events",
    },
    # Benchmarks of private units themselves: the stream reader on a bare workflow, the
    # memory store's filters without the manager around them.
    "bench.event_latency": {"smyth_temporal.clients._stream_reader"},
    "bench.memory_recall": {"smyth_temporal.memory._manager", "smyth_temporal.memory._store"},
}
"""Tests and benchmarks that import another package's private modules, each for the
reason above it (a list that only shrinks): a new one imports the face instead, or moves
to the folder of the package it opens."""


def _opened(parts: tuple[str, ...]) -> str | None:
    """The package a test opens: the one its folder mirrors; invariants open them all."""
    if parts[0] != "tests" or len(parts) < 3:
        return None
    if parts[1] == "invariants":  # property tests of private units, across packages
        return "smyth_temporal"
    return "smyth_temporal" if parts[1] == "runtime" else f"smyth_temporal.{parts[1]}"


def test_tests_and_benchmarks_open_only_the_package_they_mirror() -> None:
    # tests/storage/ may import smyth_temporal.storage._gc; tests/runtime/ (the worker,
    # the plugin, logging) the top-level private modules; from elsewhere, faces only.
    root = PACKAGE.parent
    found: dict[str, set[str]] = {}
    waiting: set[str] = set()  # the NOT_YET_PUBLIC modules still imported
    for folder in ("tests", "bench"):
        for path in sorted((root / folder).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join(parts)
            opens = _opened(parts)
            runtime = opens == "smyth_temporal" and parts[1] == "runtime"
            for hit in _private_imports(name, path, opens=None if runtime else opens):
                owner = _private_owner(target := hit.split(" ")[2]) or ""
                module = ".".join(target.split(".")[: len(owner.split(".")) + 1])
                if runtime and owner == "smyth_temporal":
                    continue
                if module in NOT_YET_PUBLIC:
                    waiting.add(module)
                    continue
                found.setdefault(name, set()).add(module)
    new = {m: sorted(found[m] - KNOWN_PRIVATE_IMPORTS.get(m, set())) for m in found}
    new = {m: t for m, t in new.items() if t}
    assert new == {}, f"import these from their package's face: {new}"
    stale = {m: sorted(t - found.get(m, set())) for m, t in KNOWN_PRIVATE_IMPORTS.items()}
    stale = {m: t for m, t in stale.items() if t}
    assert stale == {}, f"gone, remove them from KNOWN_PRIVATE_IMPORTS: {stale}"
    published = sorted(set(NOT_YET_PUBLIC) - waiting)
    assert published == [], (
        f"imported from their faces now, remove from NOT_YET_PUBLIC: {published}"
    )


def test_every_face_has_the_names_it_exports() -> None:
    # Faces re-export eagerly or load lazily (``__getattr__``): either way every name
    # in ``__all__`` must resolve, or the rule above sends callers to a name not there.
    missing = []
    for name, path in _modules():
        if path.name != "__init__.py":
            continue
        face = importlib.import_module(name)
        missing += [f"{name}.{n}" for n in getattr(face, "__all__", ()) if not hasattr(face, n)]
    assert missing == []


def test_package_docstrings_name_modules_that_exist() -> None:
    # A face's docstring is its package's map (``_runs``: one run, ...): a module it
    # names that has moved or gone sends the reader to nothing.
    missing = []
    for name, path in _modules():
        if path.name != "__init__.py":
            continue
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        for module in re.findall(r"``(_[a-z][a-z_]*)``", doc):
            if not ((path.parent / f"{module}.py").exists() or (path.parent / module).is_dir()):
                missing.append(f"{name} names {module}")
    assert missing == []


def _quoted_layers(text: str, tick: str) -> list[tuple[str, set[str]]]:
    """The numbered list of layers in ``text``: each item's name and the packages it names."""
    layers = []
    for match in re.finditer(r"^ *\d+\. (.+(?:\n {3,}\S.*)*)", text, re.MULTILINE):
        body = " ".join(line.strip() for line in match.group(1).splitlines())
        name = re.sub(r"\s*\(.*?\)", "", body.partition(":")[0]).strip()
        layers.append((name, set(re.findall(rf"{tick}([a-z_][a-z0-9_]*){tick}", body))))
    return layers


def test_layers_are_quoted_where_they_are_described() -> None:
    # One list of layers: the root docstring and the docs' architecture page say
    # LAYERS, name for name and package for package, in order.
    doc = smyth_temporal.__doc__ or ""
    section = doc[doc.index("Layers, top to bottom") :].split("\n\n")[1]
    assert _quoted_layers(section, "``") == LAYERS, "smyth_temporal's docstring differs"
    page = (PACKAGE.parent / "docs" / "architecture.md").read_text()
    section = page[page.index("## Layers") :].split("\n## ")[0]
    assert _quoted_layers(section, "`") == LAYERS, "docs/architecture.md differs"


def test_private_import_reader_has_teeth(tmp_path: Path) -> None:
    source = tmp_path / "probe.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "from smyth_temporal._logging import configure_logging\n"
        "from smyth_temporal.tools import Tool\n"
        "from smyth_temporal.tools._context import _current\n"
        "if TYPE_CHECKING:\n    from smyth_temporal.clients._base import AgentRef\n"
    )
    found = list(_private_imports("smyth_temporal.activities.probe", source))
    assert [hit.split(" ")[2] for hit in found] == [
        "smyth_temporal.tools._context",
        "smyth_temporal.tools._context._current",
        "smyth_temporal.clients._base",
        "smyth_temporal.clients._base.AgentRef",
    ]
    # Inside its package a private module is fine; outside smyth_temporal, _logging is not.
    inside = _private_imports("smyth_temporal.tools.probe", source)
    assert not [hit for hit in inside if "imports smyth_temporal.tools._context" in hit]
    outside = [hit.split(" ")[2] for hit in _private_imports("examples.probe", source)]
    assert "smyth_temporal._logging" in outside
    opened = [
        hit.split(" ")[2]
        for hit in _private_imports("tests.tools.probe", source, opens="smyth_temporal.tools")
    ]
    assert opened == [
        "smyth_temporal._logging",
        "smyth_temporal._logging.configure_logging",
        "smyth_temporal.clients._base",
        "smyth_temporal.clients._base.AgentRef",
    ]
