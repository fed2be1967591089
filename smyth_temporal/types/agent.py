"""What goes into and comes out of an agent: input, result, state, status."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, computed_field
from temporalio.contrib.workflow_streams import WorkflowStreamState

from smyth_temporal.types.approvals import ApprovalRequest
from smyth_temporal.types.compaction import Compaction
from smyth_temporal.types.lineage import ForkRef, RewindRecord
from smyth_temporal.types.messages import Message, ToolCall, Usage
from smyth_temporal.types.rewind import RewindNotice
from smyth_temporal.types.versions import StepVersions

__all__ = [
    "INTERRUPT_UPDATE",
    "TERMINAL_STATUSES",
    "AgentCheckpoint",
    "AgentInput",
    "AgentLimits",
    "AgentResult",
    "AgentState",
    "AgentStatus",
    "ForkOrigin",
    "Interrupt",
    "InterruptOutcome",
]

AgentStatus = Literal[
    "running",
    "thinking",
    "acting",
    "awaiting_approval",
    "sleeping",
    "idle",
    "completed",
    "max_steps",
    "failed",
    "invalid_output",
    "interrupted",
    "over_budget",
]
"""Where an agent is.

- ``running``: started, between steps.
- ``thinking``: waiting for the model.
- ``acting``: running tool calls.
- ``awaiting_approval``: a gated tool call waits for a person's decision.
- ``sleeping``: waiting on a durable timer until its next check (``AgentWorkflow.sleep``).
- ``idle``: a session waiting for its next message.
- ``completed``: the model answered without calling tools; ``output`` is its answer.
- ``max_steps``: stopped at the step limit; ``output`` is the last text the model wrote.
- ``failed``: the run failed (the model endpoint refused the request, for example).
- ``invalid_output``: the final answer did not fit ``AgentConfig.output_type``, even after
  ``output_retries`` corrections; ``output`` is the last answer. Added in 0.3.0.
- ``interrupted``: an ``interrupt`` stopped the run's turn (``AgentClient.interrupt``);
  ``output`` is the last text the model wrote. Added in 0.3.0.
- ``over_budget``: the run's ``max_cost`` is spent, or its tenant's budget refused a
  model call; ``output`` is the last text the model wrote. Added in 0.5.0.
"""

TERMINAL_STATUSES: frozenset[AgentStatus] = frozenset(
    {"completed", "max_steps", "failed", "invalid_output", "interrupted", "over_budget"}
)
"""Statuses after which an agent's run does nothing more."""


INTERRUPT_UPDATE = "interrupt"
"""Update carrying an ``Interrupt``; answers ``InterruptOutcome`` or is refused."""


class Interrupt(BaseModel):
    """A request to stop what an agent is doing now.

    The model call in flight is cancelled; tool calls already running finish (their
    effect is never abandoned half-way); the calls not started are not run. A task then
    ends with status ``interrupted``; a session answers its next message.

    Added in 0.3.0.
    """

    reason: str | None = None
    """Why; the model is told at its next turn."""
    by: str | None = None
    """Who interrupted (for the audit trail)."""


class InterruptOutcome(BaseModel):
    """What the ``interrupt`` update answers: where the agent was when it took it.

    Added in 0.3.0.
    """

    status: AgentStatus
    """The status the agent had."""
    step: int
    """The step it was at."""


class AgentCheckpoint(BaseModel):
    """What an agent carries into its next run when it continues as new.

    Temporal starts the next run with a fresh, empty history under the same workflow
    id; this is everything the agent needs to carry on as if nothing happened.

    Added in 0.2.0.
    """

    messages: list[Message]
    """The conversation: pinned prompt, summaries, recent turns."""
    session_messages: int = 0
    """Session messages received so far."""
    delegations: int = 0
    """Sub-agents started so far (numbers the next child's workflow id)."""
    step: int
    """Model turns taken so far, over all runs."""
    usage: Usage = Field(default_factory=Usage)
    """Usage so far, over all runs."""
    approvals: list[ApprovalRequest] = Field(default_factory=list)
    """Pending approval requests, and the most recent decided ones for the audit trail
    (every decision stays in the history of the run it was made in)."""
    compactions: list[Compaction] = Field(default_factory=list)
    """The lineage of the summaries still in the conversation, and recent ones."""
    compaction_count: int = 0
    """Compactions so far, over all runs (numbers the next one)."""
    generation: int = 1
    """Which run of the agent's chain is starting (the first is 1)."""
    data: dict[str, Any] = Field(default_factory=dict)
    """The agent's own state, from ``AgentWorkflow.data``."""
    stream: WorkflowStreamState | None = None
    """The run's event stream (retained events, offsets, publisher dedup), so watchers
    carry on in the next run where they were. Added in 0.3.0."""
    versions: list[StepVersions] = Field(default_factory=list)
    """What the steps so far ran with (see ``AgentState.versions``). Added in 0.5.0."""
    over_budget_extension: float = 0.0
    """What approved ``continue_over_budget`` requests not carried in ``approvals`` add to
    the run's ``max_cost``: an extension stays in force however many decisions come
    after it. Added in 0.8.0."""
    rewind: RewindNotice | None = None
    """The notice of the rewind the run went through, listing only the side effects no
    call has reconciled yet, so the next run still asks before repeating them. Added in
    0.10.0."""


class AgentLimits(BaseModel):
    """Bounds a parent agent puts on a sub-agent (see ``AgentWorkflow.delegate``).

    Added in 0.2.0.
    """

    tools: list[str] | None = None
    """The only tools the agent may use (``None``: all of its own)."""
    max_steps: int | None = None
    """At most this many model turns (and never more than its own ``max_steps``)."""
    max_tokens: int | None = None
    """Stop once this many tokens (input plus output) are used."""
    max_cost: float | None = None
    """Stop once the run (its own sub-agents included) has cost this much. Added in 0.5.0."""


class ForkOrigin(BaseModel):
    """Where a forked run branched off (see ``AgentClient.fork``).

    Added in 0.9.0.
    """

    workflow_id: str
    """The parent run's workflow id."""
    run_id: str
    """The run of the parent's chain the step was taken in."""
    step: int
    """The parent's step the fork starts right after."""
    parent: ForkOrigin | None = None
    """The parent's own origin when the parent is a fork too (the fork's memory view
    follows the whole lineage). Added in 0.9.0."""


class AgentInput(BaseModel):
    """What an agent run starts from.

    Added in 0.1.0.
    """

    prompt: str = ""
    """The task, as the user's first message (a session may start without one)."""
    tenant: str = "default"
    """Whose agent this is; every memory read and write is confined to it."""
    session_id: str | None = None
    """Groups runs of one conversation or job, if the caller has such a notion."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free-form data for the agent's own code (never sent to the model by default)."""
    mode: Literal["task", "session"] = "task"
    """``task``: run until the model answers the prompt. ``session``: stay alive and
    answer ``SessionMessage``s one by one (``AgentClient.send``). Added in 0.2.0."""
    limits: AgentLimits | None = None
    """Bounds set by a parent agent. Added in 0.2.0."""
    checkpoint: AgentCheckpoint | None = None
    """Set by the agent itself when it continues as new: the state it resumes from.
    Added in 0.2.0."""
    started_by: str | None = None
    """Who started the run: the API key's name where keys are used (set by the client
    from the key, never taken from the caller then). An ``ApprovalPolicy`` keeps it from
    deciding the run's own requests. Added in 0.9.0."""
    fork_of: ForkOrigin | None = None
    """Set on a fork: the run and step it branched off (``AgentClient.fork``). Added in
    0.9.0."""
    model: str | None = None
    """Run the model turns on this model instead of ``AgentConfig.model`` (a fork's
    ``--model``). Added in 0.9.0."""
    replay_model_turns: bool = False
    """A fork's turns are answered from the parent's recorded responses (from the run
    in ``fork_of`` on) while its requests equal them; the model is called only from the
    first that differs (``AgentClient.fork(replay_model_turns=...)``). Added in 0.10.0."""


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
    data: Any = None
    """The final answer as ``AgentConfig.output_type`` (validated in the workflow), for
    agents that have one; ``output`` is its text. Across Temporal it travels as JSON:
    ``AgentClient.run`` and ``AgentWorkflow.delegate`` give it back typed. Added in 0.3.0."""


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
    context_tokens: int = 0
    """Estimated tokens of the prompt the next model turn would get. Added in 0.2.0."""
    compactions: list[Compaction] = Field(default_factory=list)
    """The lineage of the conversation's summaries (recent ones). Added in 0.2.0."""
    generation: int = 1
    """Which run of the agent's continue-as-new chain this is. Added in 0.2.0."""
    data: dict[str, Any] = Field(default_factory=dict)
    """The agent's own state (``AgentWorkflow.data``). Added in 0.2.0."""
    versions: list[StepVersions] = Field(default_factory=list)
    """What its model steps ran with (instructions and tool schema hashes, model, worker
    build), one entry each time that changed, the latest last (at most
    ``VERSIONS_KEPT``). Added in 0.5.0."""
    fork_of: ForkOrigin | None = None
    """The run and step this run was forked from (``AgentClient.fork``). Added in 0.9.0."""
    forks: list[ForkRef] = Field(default_factory=list)
    """The runs forked from this one, oldest first. Filled by the client
    (``AgentClient.state(..., lineage=True)``, the gateway, ``smyth state``) from
    visibility: the state query leaves it empty. Added in 0.10.0."""
    rewinds: list[RewindRecord] = Field(default_factory=list)
    """The rewinds the current run went through, oldest first. Filled by the client from
    the run's history, like ``forks``. Added in 0.10.0."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def pending_approvals(self) -> list[ApprovalRequest]:
        """The approval requests still waiting for a decision."""
        return [r for r in self.approvals if r.status == "pending"]
