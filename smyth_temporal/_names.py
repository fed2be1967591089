"""The workflow type name of a ``@workflow.defn`` class (pure; workflow-safe).

The one place that reads temporalio's workflow definition off a class: the agent
runtime, the plugin, the worker and the clients all resolve agent names here.
"""

from __future__ import annotations

from smyth_temporal.exceptions import UserError

__all__ = ["PROBE_ID_PREFIX", "workflow_name", "workflow_type_name"]

PROBE_ID_PREFIX = "smyth-probe-"
"""Workflow ids of the runs ``AgentClient.check_served`` starts to ask whether a worker
has an agent; agent workers end them before any agent code runs (``_probe``)."""


def workflow_type_name(cls: object) -> str | None:
    """The name ``cls`` registers as a workflow type, or ``None`` if it has none.

    The definition is a class attribute, so a subclass without the decorator reports
    its parent's name; callers that must tell them apart compare ``defn.cls``.
    """
    defn = getattr(cls, "__temporal_workflow_definition", None)
    if defn is None or not defn.name:
        return None
    return str(defn.name)


def workflow_name(cls: object) -> str:
    """``workflow_type_name(cls)``, or a ``UserError`` when ``cls`` is no workflow.

    Raises:
        UserError: ``cls`` is not decorated with ``@workflow.defn``.
    """
    name = workflow_type_name(cls)
    if name is None:
        label = getattr(cls, "__qualname__", repr(cls))
        raise UserError(f"{label} is not decorated with @workflow.defn")
    return name
