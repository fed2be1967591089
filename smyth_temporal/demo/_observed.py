"""What the demo saw of the agent run, as it happened; the summary is made of it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from smyth_temporal.demo._example import Execution
from smyth_temporal.types.agent import AgentState
from smyth_temporal.types.approvals import ApprovalRequest
from smyth_temporal.types.messages import ToolCall

__all__ = ["Observed", "SeenApproval"]


@dataclass
class SeenApproval:
    """An approval request the demo saw pending, and how it was decided."""

    request: ApprovalRequest
    """As seen pending, then as decided."""
    seen: float
    """Wall-clock time the demo first saw it pending."""
    listed: float | None = None
    """When ``AgentClient.pending_approvals()`` first listed it."""
    not_before: float = 0.0
    """A wall-clock time known to precede the decision (see ``check_approval``): when
    the demo sent its approval, or a query that still found the request pending."""
    sent: float | None = None
    """When the demo sent its approval (``None``: a person decided)."""
    decided: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once the decision is known (and printed)."""


@dataclass
class Observed:
    """What the demo saw of the agent run (wall-clock times, seconds since the epoch)."""

    workflow_id: str
    """The run's workflow id."""
    started: float = 0.0
    """When the run was started."""
    finished: float = 0.0
    """When its result came."""
    run_ids: set[str] = field(default_factory=set)
    """Every run id its state showed (one, unless the workflow changed runs)."""
    shown: int = 0
    """Messages of the conversation printed so far."""
    calls: dict[str, ToolCall] = field(default_factory=dict)
    """The tool calls the model made, by id."""
    results: list[tuple[int, str]] = field(default_factory=list)
    """``(step, call_id)`` of every tool result seen, in order."""
    killed_at: float | None = None
    """When the first worker was killed."""
    killed_step: int = 0
    """The step of the calls the kill cut off."""
    cut_off: list[Execution] = field(default_factory=list)
    """The executions running when the worker was killed."""
    completed_before_kill: list[tuple[int, str]] = field(default_factory=list)
    """``(step, call_id)`` of every tool result the state showed before the kill."""
    replacement_polling: float | None = None
    """When the replacement worker was first seen polling."""
    rerun_started: float | None = None
    """When a cut-off call started again on the replacement."""
    first_progress: float | None = None
    """When the first new message after the kill was seen."""
    approvals: dict[str, SeenApproval] = field(default_factory=dict)
    """Every approval request seen pending, by id, in the order seen."""
    final_state: AgentState | None = None
    """The state once the run had finished (``None`` if no worker answered)."""
