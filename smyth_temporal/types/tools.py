"""What crosses the boundary between an agent workflow and a tool activity (pure data)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

__all__ = ["OnTimeout", "ToolEffect", "ToolInvocation", "ToolOutcome"]

ToolEffect = Literal["read_only", "idempotent", "side_effect"]
"""What calling a tool does to the world; it sets the retry policy and concurrency.

- ``read_only``: changes nothing; retried on any error, runs concurrently with other
  read-only calls of the same model turn.
- ``idempotent``: changes the world, but doing it twice equals doing it once; retried
  on any error, runs alone.
- ``side_effect``: changes the world and may not be safe to repeat; an exception from
  the tool is final (reported to the model), only infrastructure failures (a crashed
  worker, a timeout) retry, with the same idempotency key. Runs alone.
"""

OnTimeout = Literal["reject", "approve", "fail"]
"""What happens when nobody decides an approval request before its deadline.

- ``reject`` (default): the tool does not run; the model is told the request expired.
- ``approve``: the tool runs as requested (set it only on purpose).
- ``fail``: the run fails.
"""


class ToolInvocation(BaseModel):
    """One tool call, as the workflow hands it to the tool's activity."""

    tool: str
    """The tool's name."""
    call_id: str
    """The call's id in the run (``ToolCall.id``; changed in 0.8.0: given by the workflow)."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """Arguments already validated against the tool's schema, in JSON form."""
    idempotency_key: str
    """Stable key of this call: workflow id, first run id, step and call id, each part
    with ``%`` and ``/`` escaped (changed in 0.8.0: the run id, the escaping)."""
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
