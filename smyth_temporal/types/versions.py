"""What code a model step ran with: instructions, model, tool schemas, worker build.

Every model turn records a ``StepVersions`` (in ``AgentState.versions`` and on the
``TurnStarted`` event), so that after a deploy one can tell which runs, and which of
their steps, ran the old prompt, the old tools or the old build.

Added in 0.5.0.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["VERSIONS_KEPT", "StepVersions"]

VERSIONS_KEPT = 20
"""How many distinct ``StepVersions`` a run keeps (the most recent; carried across
continue-as-new). A new entry is only added when something changed."""


class StepVersions(BaseModel):
    """The versions a model step ran with.

    Hashes are the first 12 hex digits of a SHA-256, enough to tell versions apart.

    Added in 0.5.0.
    """

    model_config = ConfigDict(frozen=True)

    step: int = 0
    """The first step that ran with these versions (the later ones ran with them too,
    until the next entry)."""
    instructions: str = ""
    """Hash of ``AgentConfig.instructions``."""
    model: str = ""
    """The model name the step asked for."""
    tools: dict[str, str] = Field(default_factory=dict)
    """Each tool offered to the model, by name: the hash of its schema."""
    deployment: str | None = None
    """The Worker Deployment Version that ran the step (``name.build_id``); ``None`` on
    a worker without versioning."""

    def same_code(self, other: StepVersions) -> bool:
        """Whether ``other`` ran with the same versions (whatever its step)."""
        return self.model_copy(update={"step": 0}) == other.model_copy(update={"step": 0})
