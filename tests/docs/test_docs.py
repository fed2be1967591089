"""The documentation site's samples and generated pages are true (issue 25 items 6 and 7).

Every ```python block under ``docs/`` is compiled (top-level ``await`` allowed, as in a
notebook or ``python -m asyncio``). A block preceded by ``<!-- run -->`` is a complete
program: it is run in its own process against the session's Temporal dev server
(``TEMPORAL_ADDRESS``), with a scripted model, and must exit 0. A block that defines an
agent must be run, or say why not with ``<!-- not run: REASON -->`` (it needs an MCP
server, weeks of timers, ...). The markers are HTML comments, so the site does not show
them.

The quick start is checked the way a newcomer would trip over it: every ``module:Class``
it names must import, and so must the example ``smyth worker --help`` cites; a worker
started without ``OPENAI_API_KEY`` must say how to use the scripted model instead.
"""

from __future__ import annotations

import ast
import importlib
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer

from smyth_temporal.cli.main import app, main

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PACKAGE = ROOT / "smyth_temporal"
README = ROOT / "README.md"

sys.path.insert(0, str(DOCS / "hooks"))
from settings_table import SETTINGS, settings_markdown  # noqa: E402

RUN_TIMEOUT = 120.0
"""Seconds a runnable sample may take (they take 2-3 s): a hang fails, it does not block CI."""

_FENCE = re.compile(r"^```(\w*)\s*$")
_MARKER = re.compile(r"^<!--\s*(run|not run:\s*(?P<reason>.*?))\s*-->$")
_SPEC = re.compile(r"\b((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*):([A-Za-z_]\w*)\b")
_ENV_NAME = re.compile(
    r"^(SMYTH|TEMPORAL|OPENAI|ANTHROPIC|GOOGLE|GEMINI|QDRANT|OTEL)_[A-Z0-9_]*[A-Z0-9]$"
)


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: str
    line: int
    language: str
    code: str
    marker: str | None
    reason: str | None

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def blocks(language: str | None = None) -> list[Block]:
    """The fenced blocks of the README and every page, in order (optionally of one language)."""
    found: list[Block] = []
    for path in [README, *sorted(DOCS.rglob("*.md"))]:
        lines = path.read_text(encoding="utf-8").splitlines()
        index = 0
        while index < len(lines):
            opening = _FENCE.match(lines[index].strip())
            if opening is None:
                index += 1
                continue
            start = index
            index += 1
            body: list[str] = []
            while index < len(lines) and lines[index].strip() != "```":
                body.append(lines[index])
                index += 1
            index += 1
            previous = next((ln.strip() for ln in reversed(lines[:start]) if ln.strip()), "")
            mark = _MARKER.match(previous)
            indent = len(lines[start]) - len(lines[start].lstrip())
            found.append(
                Block(
                    page="README.md" if path == README else str(path.relative_to(DOCS)),
                    line=start + 1,
                    language=opening.group(1),
                    code="\n".join(ln[indent:] for ln in body) + "\n",
                    marker=mark.group(1).split(":")[0] if mark else None,
                    reason=mark.group("reason") if mark else None,
                )
            )
    return [b for b in found if language is None or b.language == language]


PYTHON = blocks("python")
RUNNABLE = [b for b in PYTHON if b.marker == "run"]


def test_the_docs_have_samples_and_some_run() -> None:
    # Guards the collector itself: a parsing slip would otherwise pass vacuously.
    assert len(PYTHON) >= 15
    assert RUNNABLE


@pytest.mark.parametrize("block", PYTHON, ids=lambda b: b.id)
def test_every_python_sample_compiles(block: Block) -> None:
    compile(block.code, block.id, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


def _defines_an_agent(code: str) -> bool:
    tree = ast.parse(code)
    return any(
        isinstance(node, ast.ClassDef)
        and any(isinstance(base, ast.Name) and base.id == "AgentWorkflow" for base in node.bases)
        for node in ast.walk(tree)
    )


@pytest.mark.parametrize("block", PYTHON, ids=lambda b: b.id)
def test_every_sample_that_defines_an_agent_runs_or_says_why(block: Block) -> None:
    if not _defines_an_agent(block.code):
        return
    assert block.marker == "run" or (block.marker == "not run" and block.reason), (
        f"{block.id} defines an agent: mark it <!-- run --> (a complete program) or "
        "<!-- not run: REASON -->"
    )


@pytest.mark.parametrize("block", RUNNABLE, ids=lambda b: b.id)
def test_runnable_samples_run_against_a_dev_server(
    block: Block, address: str, tmp_path: Path
) -> None:
    done = run_sample(block, address, tmp_path)
    assert done.returncode == 0, f"{block.id} failed:\n{done.stdout}\n{done.stderr[-4000:]}"


def test_the_first_agent_sample_prints_what_it_promises(address: str, tmp_path: Path) -> None:
    (block,) = [b for b in RUNNABLE if b.page == "getting-started.md"]
    done = run_sample(block, address, tmp_path)
    assert done.stdout.strip().endswith("completed ACME is at 101.50."), done.stderr[-4000:]


SAMPLE_RUNNER = """
import os, runpy, sys
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)
"""
"""Runs a sample as ``python sample.py`` would, then leaves without the interpreter's
teardown: temporalio's Rust threads can outlive the interpreter and abort it
(temporalio/sdk-python#300: "PyGILState_Release ... finalizing", SIGABRT or SIGSEGV)
after the program has done and printed everything, in a form that varies. A sample
that raises still exits non-zero with its traceback; one a reader copies needs no
``os._exit`` of its own."""


def run_sample(block: Block, address: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run one sample against the dev server at ``address``, in ``tmp_path``, offline."""
    program = tmp_path / "sample.py"
    program.write_text(block.code, encoding="utf-8")
    environment = {**os.environ, "TEMPORAL_ADDRESS": address}
    for name in ("OPENAI_API_KEY", "SMYTH_API_KEY", "SMYTH_ENV", "TEMPORAL_PROFILE"):
        environment.pop(name, None)
    return subprocess.run(
        [sys.executable, "-c", SAMPLE_RUNNER, str(program)],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )


# -- the settings page -------------------------------------------------------------


def _variables_read_by_the_package() -> set[str]:
    """Every string literal of the package that is exactly an environment variable's name."""
    names: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        exported = {  # names in __all__ are Python names (OPENAI_PREFIX), not variables
            id(node)
            for assign in ast.walk(tree)
            if isinstance(assign, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in assign.targets)
            for node in ast.walk(assign.value)
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and _ENV_NAME.match(node.value)
                and id(node) not in exported
            ):
                names.add(node.value)
    return names


def test_the_settings_page_names_every_variable_the_package_reads() -> None:
    documented = {setting.variable for setting in SETTINGS}
    read = _variables_read_by_the_package()
    by_libraries = {setting.variable for setting in SETTINGS if setting.library}
    assert read - documented == set(), "add them to docs/hooks/settings_table.py"
    assert documented - read - by_libraries == set(), "nothing reads these: drop them"


def test_the_settings_page_has_one_row_per_variable() -> None:
    page = settings_markdown()
    for setting in SETTINGS:
        assert page.count(f"| `{setting.variable}` |") == 1


# -- the quick start ---------------------------------------------------------------


def _import_spec(module: str, attribute: str) -> object:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))  # examples/ import from a checkout, as smyth does
    return getattr(importlib.import_module(module), attribute)


def _specs(text: str) -> list[tuple[str, str]]:
    return [
        (m.group(1), m.group(2))
        for m in _SPEC.finditer(text)
        if "." in m.group(1) and not m.group(1).startswith(("http", "localhost"))
    ]


def test_the_quick_start_names_modules_that_exist() -> None:
    for page in ("getting-started.md", "README.md"):
        shell = [b for b in blocks("bash") if b.page == page]
        names = [spec for block in shell for spec in _specs(block.code)]
        assert ("examples.market_monitor.workflows", "MarketMonitor") in names, page
    specs = [spec for block in blocks("bash") for spec in _specs(block.code)]
    specs = [spec for spec in specs if spec[0].startswith("examples.")]
    for module, attribute in specs:
        assert _import_spec(module, attribute) is not None, f"{module}:{attribute}"


def test_worker_help_cites_an_example_module_that_exists() -> None:
    command = typer.main.get_command(app).commands["worker"]  # type: ignore[attr-defined]
    helps = " ".join(str(getattr(param, "help", "") or "") for param in command.params)
    helps += f" {command.help or ''} {command.epilog or ''}"
    specs = _specs(helps)
    assert specs, helps
    for module, attribute in specs:
        assert _import_spec(module, attribute) is not None, f"{module}:{attribute}"


def test_worker_without_an_api_key_points_to_the_scripted_model(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], reset_structlog: None
) -> None:
    # reset_structlog: main() points structlog at the captured stderr, closed after
    # the test; later tests' log lines would fail on it.
    for name in ("OPENAI_API_KEY", "SMYTH_MODEL_PROVIDER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(ROOT)
    code = main(["worker", "examples.market_monitor.workflows:MarketMonitor"])
    error = capsys.readouterr().err
    assert code == 1
    assert "OPENAI_API_KEY" in error
    assert "--model examples.market_monitor.script:model" in error


# -- the API reference -------------------------------------------------------------

DOCUMENTED_ELSEWHERE = {
    "agent": "its public names are re-exported by smyth_temporal",
    "clients": "its public names are re-exported by smyth_temporal",
    "tools": "its public names are re-exported by smyth_temporal",
    "types": "its public names are re-exported by smyth_temporal",
    "activities": "the worker's activities, registered by SmythPlugin",
    "context": "the compaction policy's internals, behind AgentWorkflow's hooks",
    "cli": "the smyth command, documented by its --help and the guides",
    "demo": "the scenario of smyth demo",
}


def test_the_api_reference_has_a_page_per_public_package() -> None:
    pages = " ".join(p.read_text(encoding="utf-8") for p in (DOCS / "reference").rglob("*.md"))
    for init in sorted(PACKAGE.glob("*/__init__.py")):
        name = init.parent.name
        if name.startswith("_") or name in DOCUMENTED_ELSEWHERE:
            continue
        assert f"::: smyth_temporal.{name}\n" in pages, f"docs/reference/api/{name}.md"
    assert "::: smyth_temporal\n" in pages


# -- the commands the docs show ----------------------------------------------------


def _smyth_command_lines(code: str) -> list[str]:
    """The ``smyth ...`` commands of a shell block (continuations joined, comments cut)."""
    code = re.sub(r"\\\n\s*", " ", code)
    found: list[str] = []
    for line in code.splitlines():
        for part in re.split(r"&&|;|\|\s", line.split(" #")[0]):
            part = part.strip().rstrip("&").strip()
            if part.startswith("smyth "):
                found.append(part)
    return found


def _unknown_in(line: str) -> list[str]:
    """What ``line`` names that the ``smyth`` command does not have (``a|b``: each)."""
    text = re.sub(r"[\[\]]", " ", line)  # [--json]: an optional option, still an option
    try:
        tokens = shlex.split(text)
    except ValueError:
        tokens = text.split()
    commands: list[Any] = [typer.main.get_command(app)]
    index = 1
    while index < len(tokens) and hasattr(commands[0], "commands"):
        names = tokens[index].split("|")
        if not all(name in commands[0].commands for name in names):
            return [f"command {tokens[index]}"]
        commands = [commands[0].commands[name] for name in names]
        index += 1
    unknown: list[str] = []
    for command in commands:
        options = {"--help", "-h"} | {
            option
            for param in command.params
            for option in [*param.opts, *getattr(param, "secondary_opts", [])]
        }
        for token in tokens[index:]:
            if token.startswith("--"):
                unknown += [
                    f"{command.name} {name}"
                    for name in token.split("=")[0].split("|")
                    if name not in options
                ]
    return unknown


def test_every_smyth_command_the_docs_show_exists_with_its_options() -> None:
    lines = [(b.id, line) for b in blocks("bash") for line in _smyth_command_lines(b.code)]
    assert len(lines) >= 40  # the collector found them
    wrong = {f"{where}: {line}": _unknown_in(line) for where, line in lines}
    assert {where: names for where, names in wrong.items() if names} == {}


def test_the_command_check_catches_a_missing_option() -> None:
    assert _unknown_in("smyth approve ID --by me --no-such-option") == ["approve --no-such-option"]
    assert _unknown_in("smyth schedule pause|frobnicate ID") == ["command pause|frobnicate"]


# -- the README --------------------------------------------------------------------

FIRST_LINES = [
    "# smyth-temporal",
    "",
    "```bash",
    "make demo   # fresh machine: installs everything into .venv, then runs the crash-recovery"
    " demo (`smyth demo`)",
    "make test   # fresh machine: installs everything into .venv, then runs the test suite"
    " (`pytest`)",
    "```",
]


def test_the_readme_starts_with_the_two_commands() -> None:
    assert README.read_text(encoding="utf-8").splitlines()[: len(FIRST_LINES)] == FIRST_LINES


def test_the_readme_is_what_a_newcomer_reads_in_five_minutes() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    assert "make docs" in text
    assert "15 to 18 minutes" in text  # how long make test takes
    assert "docs/getting-started.md" in text


def test_the_readme_links_to_files_that_exist() -> None:
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if not t.startswith(("http://", "https://", "mailto:"))]
    assert local
    assert [t for t in local if not (ROOT / t).exists()] == []
