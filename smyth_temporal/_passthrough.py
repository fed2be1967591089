"""Which of the user's modules the workflow sandbox may share between runs.

temporalio's sandbox imports a workflow's module afresh for every run it starts, and
with it every module that module imports and nobody passed through. An agent module
that imports its tools and their pydantic models from a module of its own then builds
all of them again for each run: every model class is a new pydantic schema, and a run
parked for a person's decision keeps its copies for as long as it waits (about 75 KiB
a run for ``tests.helpers.agents``, more than the whole of a plain temporalio workflow).

temporalio's advice is to import such modules under
``workflow.unsafe.imports_passed_through()``. A worker knows which modules its agents'
tools and their argument and output types come from, so it passes those through on
its own, unless the module defines or imports a workflow: a workflow module is
re-imported per run on purpose (its class state stays the run's own), and so is any
module that holds one. The standard library is left to temporalio's own list.
"""

from __future__ import annotations

import sys
import typing
from collections.abc import Iterable, Iterator, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from smyth_temporal.agent.workflow import AgentWorkflow
    from smyth_temporal.tools import Tool

__all__ = ["shared_modules"]


def shared_modules(agents: Sequence[type[AgentWorkflow]], tools: Iterable[Tool]) -> list[str]:
    """The modules of these agents' tools and types that every run can share, sorted.

    Args:
        agents: The agent classes a worker runs.
        tools: Every tool the worker serves (the agents' and any extra ones).

    Returns:
        Names of loaded modules that define a tool's function, a type a tool's
        arguments name, or an agent's ``output_type``, and hold no workflow class.
    """
    names: set[str] = set()
    for spec in tools:
        names.add(getattr(spec.fn, "__module__", None) or "")
        for field in spec.arguments_model.model_fields.values():
            names.update(_modules_of(field.annotation))
    for agent in agents:
        names.update(_modules_of(agent.config.output_type))
    shared = []
    for name in names:
        module = sys.modules.get(name)
        if module is not None and _shareable(name, module):
            shared.append(name)
    return sorted(shared)


def _modules_of(annotation: Any) -> Iterator[str]:
    """The modules of the classes an annotation names (``list[Order] | None``: Order's)."""
    if isinstance(annotation, type):
        yield annotation.__module__
    for argument in typing.get_args(annotation):
        yield from _modules_of(argument)


def _shareable(name: str, module: ModuleType) -> bool:
    top = name.partition(".")[0]
    if name == "__main__" or top in sys.stdlib_module_names or top == "smyth_temporal":
        return False  # stdlib: temporalio's list; ours: PASSTHROUGH_MODULES
    return not any(_is_workflow(value) for value in vars(module).values())


def _is_workflow(value: object) -> bool:
    return isinstance(value, type) and hasattr(value, "__temporal_workflow_definition")
