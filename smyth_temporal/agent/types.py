"""What goes into and comes out of an agent: input, result, state, status."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, computed_field

from smyth_temporal.agent.approvals import ApprovalRequest
from smyth_temporal.agent.messages import Message, ToolCall, Usage

__all__ = ["TERMINAL_STATUSES", "AgentInput", "AgentResult", "AgentState", "AgentStatus"]

AgentStatus = Literal[
    "running", "thinking", "acting", "awaiting_approval", "completed", "max_steps", "failed"
]
"""Where an agent is.

- ``running``: started, between steps.
- ``thinking``: waiting for the model.
- ``acting``: running tool calls.
- ``awaiting_approval``: a gated tool call waits for a person's decision.
- ``completed``: the model answered without calling tools; ``output`` is its answer.
- ``max_steps``: stopped at the step limit; ``output`` is the last text the model wrote.
- ``failed``: the run failed (the model endpoint refused the request, for example).
"""

TERMINAL_STATUSES: frozenset[AgentStatus] = frozenset({"completed", "max_steps", "failed"})
"""Statuses after which an agent's run does nothing more."""


class AgentInput(BaseModel):
    """What an agent run starts from.

    Added in 0.1.0.
    """

    prompt: str
    """The task, as the user's first message."""
    tenant: str = "default"
    """Whose agent this is; every memory read and write is confined to it."""
    session_id: str | None = None
    """Groups runs of one conversation or job, if the caller has such a notion."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free-form data for the agent's own code (never sent to the model by default)."""


class AgentResult(BaseModel):
    """How an agent run ended.

    Added in 0.1.0.
    """

    output: str
    """The model's final answer (or its last text, when the run stopped early)."""
    status: AgentStatus
    """``completed`` or ``max_steps``."""
    steps: int
    """Model turns taken."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens, requests and tool calls over the run."""


class AgentState(BaseModel):
    """A snapshot of a running (or finished) agent, answered by the ``state`` query.

    Added in 0.1.0.
    """

    agent: str
    """The agent's workflow type name."""
    workflow_id: str
    """The agent's workflow id."""
    run_id: str
    """The current run id."""
    status: AgentStatus
    """Where the agent is."""
    step: int
    """Model turns taken so far."""
    max_steps: int
    """The step limit."""
    tenant: str
    """Whose agent this is."""
    session_id: str | None = None
    """The session, if any."""
    messages: list[Message] = Field(default_factory=list)
    """The most recent messages (how many: ``AgentConfig.state_messages``)."""
    message_count: int = 0
    """How many messages the conversation has in all."""
    pending_tool_calls: list[ToolCall] = Field(default_factory=list)
    """Tool calls running now."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens, requests and tool calls so far."""
    output: str | None = None
    """The final answer, once there is one."""
    approvals: list[ApprovalRequest] = Field(default_factory=list)
    """Every approval request of the run with its decision: the audit trail."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def pending_approvals(self) -> list[ApprovalRequest]:
        """The approval requests still waiting for a decision."""
        return [r for r in self.approvals if r.status == "pending"]
