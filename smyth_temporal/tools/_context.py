"""What a tool can know about the call it is serving."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from pydantic import BaseModel, Field

from smyth_temporal.exceptions import UserError

__all__ = ["ToolContext", "serving_tool_call", "tool_context"]


class ToolContext(BaseModel):
    """The agent run and call a tool is serving; see ``tool_context()``.

    Added in 0.1.0.
    """

    tool_name: str
    """The tool's name."""
    call_id: str
    """The model's id for this call."""
    idempotency_key: str
    """Stable across retries, replays and worker crashes: use it to deduplicate side effects."""
    agent: str
    """The agent's workflow type name."""
    workflow_id: str
    """The agent's workflow id."""
    run_id: str
    """The agent's current run id."""
    step: int
    """The agent step that requested the call."""
    tenant: str
    """The tenant the agent runs for."""
    attempt: int
    """The activity attempt, from 1."""
    secrets: dict[str, str] = Field(default_factory=dict, repr=False, exclude=True)
    """The values of the secrets the tool declares (``@tool(secrets=[...])``), by name,
    resolved on this worker for this call; never serialized or shown. Added in 0.4.0."""


_current: ContextVar[ToolContext | None] = ContextVar("smyth_tool_context", default=None)


def tool_context() -> ToolContext:
    """The context of the tool call being served.

    Returns:
        The current ``ToolContext``.

    Raises:
        UserError: Called outside a tool run by an agent.

    Added in 0.1.0.
    """
    context = _current.get()
    if context is None:
        raise UserError("tool_context() is only available inside a tool called by an agent")
    return context


@contextmanager
def serving_tool_call(context: ToolContext) -> Iterator[ToolContext]:
    """Make ``context`` what ``tool_context()`` returns inside the ``with`` block.

    The tool activity serves every call inside one; a test can call a tool function
    directly inside one, without an agent or a worker.

    Args:
        context: The call being served.

    Yields:
        ``context``.

    Added in 0.9.0 (the tool activity set a private context variable).
    """
    token = _current.set(context)
    try:
        yield context
    finally:
        _current.reset(token)
