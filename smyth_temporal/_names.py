"""The workflow type name of a ``@workflow.defn`` class (pure; workflow-safe)."""

from __future__ import annotations

__all__ = ["workflow_type_name"]


def workflow_type_name(cls: object) -> str | None:
    """The name ``cls`` registers as a workflow type, or ``None`` if it has none.

    The definition is a class attribute, so a subclass without the decorator reports
    its parent's name; callers that must tell them apart compare ``defn.cls``.
    """
    defn = getattr(cls, "__temporal_workflow_definition", None)
    if defn is None or not defn.name:
        return None
    return str(defn.name)
