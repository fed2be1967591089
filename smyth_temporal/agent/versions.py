"""The versions a model step runs with (workflow code, pure).

``step_versions`` hashes the agent's instructions and each tool's schema, and reads the
Worker Deployment Version of the worker that runs the current workflow task (which
Temporal keeps deterministic on replay). Nothing here schedules a command, so adding
it changed no recorded history.

Added in 0.5.0.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from temporalio import workflow

from smyth_temporal.tools import Tool
from smyth_temporal.types.versions import VERSIONS_KEPT, StepVersions

__all__ = ["record_versions", "short_hash", "step_versions"]


def short_hash(value: Any) -> str:
    """The first 12 hex digits of the SHA-256 of ``value`` as canonical JSON."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def step_versions(
    step: int, *, instructions: str, model: str, tools: Sequence[Tool]
) -> StepVersions:
    """What step ``step`` runs with (call it from workflow code, in the step's task)."""
    version = workflow.info().get_current_deployment_version()
    return StepVersions(
        step=step,
        instructions=short_hash(instructions),
        model=model,
        tools={tool.name: short_hash(tool.schema()) for tool in tools},
        deployment=version.to_canonical_string() if version is not None else None,
    )


def record_versions(history: list[StepVersions], versions: StepVersions) -> list[StepVersions]:
    """``history`` with ``versions`` appended if they differ from the last (bounded)."""
    if history and history[-1].same_code(versions):
        return history
    return [*history, versions][-VERSIONS_KEPT:]
