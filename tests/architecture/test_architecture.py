"""The architecture, checked: the determinism boundary, the layers, no cycles, module sizes.

These read the package's source (with ``ast``) or import it in a fresh interpreter;
they start no server. A failure names the module and the import that broke the rule.
"""

from __future__ import annotations

import ast
import inspect
import json
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

LAYERS: list[set[str]] = [
    {"cli", "demo", "gateway", "codec_server"},
    {
        "clients",
        "worker",
        "plugin",
        "_passthrough",
        "_model_queue",
        "_probe",
        "testing",
        "devserver",
        "mcp_server",
    },
    {"agent"},
    {"context", "activities", "mcp", "notifications"},
    {"tools", "memory", "models", "storage", "security", "observability", "_live"},
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
]
"""The packages of smyth_temporal, top to bottom: a module imports only its own layer
and the layers below it."""


def _modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        yield name, path


def _imports(name: str, path: Path) -> Iterator[tuple[str, int]]:
    """Every module ``name`` imports, at any level, except under ``TYPE_CHECKING``."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    type_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            type_only |= {id(n) for child in node.body for n in ast.walk(child)}
    for node in ast.walk(tree):
        if id(node) in type_only:
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
    for index, layer in enumerate(LAYERS):
        if parts[1] in layer:
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
