"""What crosses the boundary between an agent workflow and a tool activity (pure data)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

__all__ = ["ToolInvocation", "ToolOutcome"]


class ToolInvocation(BaseModel):
    """One tool call, as the workflow hands it to the tool's activity."""

    tool: str
    """The tool's name."""
    call_id: str
    """The model's id for the call."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """Arguments already validated against the tool's schema, in JSON form."""
    idempotency_key: str
    """Stable key of this call (workflow id, step and call id)."""
    agent: str
    """The agent's workflow type name."""
    step: int
    """The agent step that requested the call."""
    tenant: str
    """The tenant the agent runs for."""


class ToolOutcome(BaseModel):
    """What a tool call produced, as text for the model."""

    content: str
    """The output (or error) the model sees."""
    truncated: bool = False
    """Whether the output was cut to the tool's ``max_output_chars``."""
