"""``AgentConfig``: how an agent class behaves."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal

from temporalio.common import RetryPolicy

from smyth_temporal.agent.output import OutputType
from smyth_temporal.context import TokenCounter, estimate_tokens
from smyth_temporal.exceptions import ConfigurationError, UserError
from smyth_temporal.tools import DEFAULT_TOOL_TIMEOUT, ApprovalPolicy, ApprovalRequirement, Tool
from smyth_temporal.types.sessions import WhileBusy
from smyth_temporal.types.tools import OnTimeout, ToolEffect

__all__ = [
    "DEFAULT_APPROVAL_TIMEOUT",
    "DEFAULT_CONTEXT_BUDGET",
    "DEFAULT_MAX_STEPS",
    "DEFAULT_MAX_TOOL_CALLS_PER_TURN",
    "DEFAULT_MODEL_HEARTBEAT_TIMEOUT",
    "DEFAULT_MODEL_RETRY",
    "DEFAULT_MODEL_TIMEOUT",
    "DEFAULT_SUMMARY_RETRY",
    "DEFAULT_TRANSCRIPT_NAMESPACE",
    "AgentConfig",
    "config_of",
]

DEFAULT_APPROVAL_TIMEOUT = timedelta(days=7)
"""How long an approval request waits for a decision when nothing else is said."""

DEFAULT_MAX_STEPS = 20
"""Model turns an agent may take before it stops with status ``max_steps``."""

DEFAULT_MAX_TOOL_CALLS_PER_TURN = 64
"""Tool calls of one model turn that run; the model is told the others were not run.

Every call of a turn is in flight at once (read-only ones) or waits for a person at
once (gated ones); far past this, a turn reaches Temporal's limit of pending activities
per run and wedges it, and its pending approvals outgrow the run's memo. Added in 0.8.0.
"""

DEFAULT_MODEL_TIMEOUT = timedelta(minutes=3)
"""How long one attempt of the model activity may run."""

DEFAULT_MODEL_HEARTBEAT_TIMEOUT = timedelta(seconds=2)
"""How soon a model call on a crashed worker is retried elsewhere (the activity beats
automatically, every half second, while it waits for the endpoint). Changed in 0.5.0:
2 s (was 5 s)."""

DEFAULT_MODEL_RETRY = RetryPolicy(
    initial_interval=timedelta(milliseconds=250),
    backoff_coefficient=3.0,
    maximum_interval=timedelta(minutes=1),
    maximum_attempts=10,
)
"""Retries of the model activity; ``Retry-After`` from the endpoint overrides the delay.

The first retry (the re-run of a call lost with its worker) comes after 250 ms; the
steeper backoff keeps the whole budget about what it was (some 4.5 minutes). Changed
in 0.5.0: 250 ms, backoff 3 (was 1 s, backoff 2)."""

DEFAULT_CONTEXT_BUDGET = 32_000
"""Prompt tokens an agent aims to stay under (compacting older turns beyond it).

Well under the context window of current models (128k and more), so that a summary
that fails and is retried later, or a turn with large tool results, never hits the
window itself; and small enough that every turn does not pay for a huge prompt.
"""

DEFAULT_SUMMARY_RETRY = RetryPolicy(
    initial_interval=timedelta(milliseconds=250),
    backoff_coefficient=3.0,
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=3,
)
"""Retries of a summary call: few, because a failed summary only postpones compaction
(the agent goes on with its full prompt and tries again at its next turn)."""

DEFAULT_TRANSCRIPT_NAMESPACE = "transcripts"
"""Where an agent without ``memory_namespace`` archives the messages it compacts."""

_SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_EFFECTS: tuple[ToolEffect, ...] = ("read_only", "idempotent", "side_effect")


@dataclass(frozen=True, kw_only=True)
class AgentConfig:
    """How an agent class behaves: set it as the class attribute ``config``.

    Everything here is read by workflow code, so it must stay the same for as long as
    runs of the agent may be replayed; change prompts and tools with new agent
    versions, not under running agents.

    Added in 0.1.0.
    """

    model: str
    """The model name; the worker's provider resolves it (``gpt-4o-mini``, ``llama3``...)."""
    instructions: str = ""
    """The system prompt."""
    tools: Sequence[Tool] = ()
    """The tools the model may call."""
    max_steps: int = DEFAULT_MAX_STEPS
    """Model turns before the run stops with status ``max_steps``."""
    max_tool_calls_per_turn: int = DEFAULT_MAX_TOOL_CALLS_PER_TURN
    """Tool calls of one model turn that run (in the model's order); each further call
    is answered to the model as an error, unrun. Added in 0.8.0."""
    model_settings: dict[str, Any] = field(default_factory=dict)
    """Extra chat-completions parameters (``temperature``, ``max_tokens``, ...)."""
    model_timeout: timedelta = DEFAULT_MODEL_TIMEOUT
    """Start-to-close timeout of one model call."""
    model_heartbeat_timeout: timedelta = DEFAULT_MODEL_HEARTBEAT_TIMEOUT
    """Heartbeat timeout of one model call; bounds recovery from a crashed worker."""
    model_retry: RetryPolicy = field(default_factory=lambda: DEFAULT_MODEL_RETRY)
    """Retry policy of the model activity."""
    fallback_models: Sequence[str] = ()
    """Models to turn to, in order, when the provider says ``model`` is overloaded or
    unavailable (``ModelOverloaded``, a 503 or 529): after ``fallback_after_attempts``
    such attempts the turn is sent to the next model, as its own model call in the
    history (and ``smyth audit``). Other errors never move a call. Added in 0.10.0."""
    fallback_after_attempts: int = 2
    """Attempts at an overloaded model before its turn moves to the next fallback model
    (the last model keeps ``model_retry``). Added in 0.10.0."""
    state_messages: int = 20
    """How many recent messages the ``state`` query returns."""
    stream: bool = True
    """Stream the model's text to the run's event stream as it is written (``smyth
    watch``, ``AgentClient.events``, ``send(stream=True)``), when the worker's provider
    can. Each batch of text (75 ms apart, growing to 300 ms) is a signal in the run's
    history; turn it off for agents nobody watches live. Added in 0.3.0."""
    max_cost: float | None = None
    """Stop a run once its model calls (its sub-agents' included) have cost this much,
    priced by the worker's ``PriceTable``; the run ends ``over_budget`` with its last
    text. ``None``: no bound. Added in 0.5.0."""
    on_over_budget: Literal["stop", "ask"] = "stop"
    """What a task run does once its ``max_cost`` is spent: ``"stop"`` (status
    ``over_budget``), or ``"ask"``: it requests an approval of the built-in
    ``continue_over_budget`` tool (``smyth approvals``, the console, the gateway) and,
    approved, may spend another ``max_cost`` (an approver may edit ``extra``); rejected
    or expired, it stops. A tenant's budget is never overridden. Added in 0.5.0."""
    model_task_queue: bool = True
    """Run model calls on their own task queue (``<task queue>-models``, polled by the
    same workers), with the tenant as fairness key, so the server limits model calls
    for the whole fleet and shares them between tenants by weight (``smyth limits``),
    while a limit or a weight is set there; until then workers keep them on the
    agent's queue, where they are dispatched eagerly. ``False``: always on the agent's
    own task queue. Added in 0.5.0. Changed in 0.8.0: only while limits are set."""
    approval_timeout: timedelta = DEFAULT_APPROVAL_TIMEOUT
    """How long an approval request waits, unless its tool says otherwise."""
    on_approval_timeout: OnTimeout = "reject"
    """What happens at an approval deadline, unless the tool says otherwise."""
    approval_policy: ApprovalPolicy | None = None
    """Who decides the gated calls whose tool says only ``requires_approval=True`` (or a
    predicate), roles, quorum, escalation and all; ``None``: one decision by anyone who
    may approve. A tool's own ``ApprovalPolicy`` wins. Added in 0.9.0."""
    memory_namespace: str | None = None
    """Long-term memory shared by every agent given the same namespace (``None``: off).
    The tenant always comes from ``AgentInput.tenant``."""
    memory_tools: bool = True
    """Offer the model the built-in ``remember`` and ``recall`` tools."""
    memory_recall_k: int = 5
    """Memories recalled into the prompt before the first turn (0: none)."""
    memory_episodes: bool = True
    """Store an ``episode`` record (task, outcome, key tool results) when a run ends."""
    memory_timeout: timedelta = timedelta(minutes=1)
    """Start-to-close timeout of one memory activity."""
    context_budget: int | None = DEFAULT_CONTEXT_BUDGET
    """Prompt tokens to stay under: beyond it, older turns are summarized (and archived
    to memory as ``transcript``) before the next model turn. ``None``: never compact.
    Added in 0.2.0."""
    compaction_keep_ratio: float = 0.5
    """The share of ``context_budget`` kept verbatim as the most recent turns."""
    context_hard_limit: float = 2.0
    """While summaries keep failing the prompt may grow up to this many budgets; beyond
    it the archived turns are replaced by a placeholder that points at the archive."""
    token_counter: TokenCounter = estimate_tokens
    """Counts a prompt's tokens (deterministic, no I/O: it runs in workflow code)."""
    summary_model: str | None = None
    """The model that writes summaries (default: ``model``)."""
    summary_timeout: timedelta = timedelta(minutes=2)
    """Start-to-close timeout of one summary call."""
    summary_retry: RetryPolicy = field(default_factory=lambda: DEFAULT_SUMMARY_RETRY)
    """Retry policy of a summary call."""
    transcript_namespace: str | None = None
    """The memory namespace compacted messages are archived to (default:
    ``memory_namespace``, else ``DEFAULT_TRANSCRIPT_NAMESPACE``)."""
    continue_as_new_after_steps: int | None = None
    """Continue as new after this many model turns in one run (``None``: only when
    Temporal suggests it, from about 4 MB or 4,000 events of history). Added in 0.2.0."""
    subagents: Sequence[Any] = ()
    """Agent classes the model may hand tasks to through the built-in ``delegate`` tool
    (each runs as a child workflow; see ``AgentWorkflow.delegate``). Added in 0.2.0."""
    output_type: Any = None
    """The shape of the final answer: a pydantic model, a ``TypedDict``, a dataclass or a
    primitive. The model is asked for it; the answer is validated in the workflow and
    handed back as ``AgentResult.data`` (``None``: plain text). Added in 0.3.0."""
    output_retries: int = 2
    """How often an answer that does not fit ``output_type`` goes back to the model with
    the validation errors before the run ends with status ``invalid_output``."""
    while_busy: WhileBusy = "enqueue"
    """What a session does with a message that arrives while it answers another one,
    unless the message says (see ``WhileBusy``). Added in 0.3.0."""
    mcp_servers: Sequence[str] = ()
    """MCP servers whose tools the model may call, by the names the worker gives them
    (``SmythPlugin(mcp_servers=...)``, ``smyth worker --mcp NAME=...``): commands, URLs
    and credentials stay on the worker. Each server's tools are listed once per run and
    recorded. Added in 0.3.0."""
    mcp_allow: Mapping[str, Sequence[str]] = field(default_factory=dict)
    """Per server, the only tools the model sees (``fnmatch`` patterns over the server's
    tool names); a server not named here offers all its tools."""
    mcp_deny: Mapping[str, Sequence[str]] = field(default_factory=dict)
    """Per server, tools the model never sees (patterns; applied after ``mcp_allow``)."""
    mcp_approval: Mapping[str, ApprovalRequirement] = field(default_factory=dict)
    """Approval rules of MCP tools, by tool name (``git_commit``) or ``server.tool``:
    ``True``, ``False``, a predicate over the arguments or (added in 0.9.0) an
    ``ApprovalPolicy``. They win over what the annotations imply (a destructive tool
    needs an approval by default)."""
    mcp_effects: Mapping[str, ToolEffect] = field(default_factory=dict)
    """Effect classes of MCP tools, by name or ``server.tool``, winning over the
    annotations (for a server that gives none, say)."""
    mcp_timeout: timedelta = DEFAULT_TOOL_TIMEOUT
    """Start-to-close timeout of one MCP tool call attempt."""
    search_attributes: bool = True
    """Publish ``SmythStatus`` and ``SmythPendingApprovals`` while approvals are involved,
    so waiting agents can be listed across runs (the cluster must have them registered;
    ``smyth dev`` does)."""

    def __post_init__(self) -> None:
        if not self.model:
            raise ConfigurationError("AgentConfig.model must name a model")
        if isinstance(self.fallback_models, str) or not all(
            isinstance(m, str) and m for m in self.fallback_models
        ):
            raise ConfigurationError(
                "AgentConfig.fallback_models must be a list of model names, "
                f"got {self.fallback_models!r}"
            )
        if self.fallback_after_attempts < 1:
            raise ConfigurationError(
                "AgentConfig.fallback_after_attempts must be at least 1, "
                f"got {self.fallback_after_attempts}"
            )
        if self.max_steps < 1:
            raise ConfigurationError(
                f"AgentConfig.max_steps must be at least 1, not {self.max_steps}"
            )
        if self.max_tool_calls_per_turn < 1:
            raise ConfigurationError(
                "AgentConfig.max_tool_calls_per_turn must be at least 1, "
                f"not {self.max_tool_calls_per_turn}"
            )
        if self.context_budget is not None and self.context_budget < 256:
            raise ConfigurationError(
                f"AgentConfig.context_budget must be at least 256 tokens, not {self.context_budget}"
            )
        if not 0 < self.compaction_keep_ratio < 1:
            raise ConfigurationError("AgentConfig.compaction_keep_ratio must be between 0 and 1")
        if self.context_hard_limit < 1:
            raise ConfigurationError("AgentConfig.context_hard_limit must be at least 1")
        if self.output_retries < 0:
            raise ConfigurationError("AgentConfig.output_retries must be at least 0")
        if self.output_type is not None:
            try:
                self.__dict__["output"] = OutputType(self.output_type)
            except Exception as exc:
                raise ConfigurationError(
                    f"AgentConfig.output_type {self.output_type!r} cannot be validated: {exc}"
                ) from exc
        if self.continue_as_new_after_steps is not None and self.continue_as_new_after_steps < 1:
            raise ConfigurationError("AgentConfig.continue_as_new_after_steps must be at least 1")
        strays = [t for t in self.tools if not isinstance(t, Tool)]
        if strays:
            raise ConfigurationError(f"AgentConfig.tools takes tools made with @tool, not {strays}")
        names = [t.name for t in self.tools]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ConfigurationError(f"AgentConfig.tools has duplicate names: {duplicates}")
        self._check_mcp()
        if self.memory_namespace is not None and self.memory_tools:
            clash = sorted({"remember", "recall"} & set(names))
            if clash:
                raise ConfigurationError(
                    f"tools {clash} clash with the built-in memory tools; "
                    "rename them or set memory_tools=False"
                )

    def _check_mcp(self) -> None:
        servers = list(self.mcp_servers)
        if isinstance(self.mcp_servers, str):
            raise ConfigurationError("AgentConfig.mcp_servers takes a list of server names")
        bad = [s for s in servers if not isinstance(s, str) or not _SERVER_NAME.match(s)]
        if bad:
            raise ConfigurationError(
                f"AgentConfig.mcp_servers: {bad} are not server names "
                "(1-64 letters, digits, '_' or '-')"
            )
        duplicates = sorted({s for s in servers if servers.count(s) > 1})
        if duplicates:
            raise ConfigurationError(f"AgentConfig.mcp_servers names {duplicates} twice")
        for option in ("mcp_allow", "mcp_deny"):
            strays = sorted(set(getattr(self, option)) - set(servers))
            if strays:
                raise ConfigurationError(
                    f"AgentConfig.{option} names servers {strays} that are not in mcp_servers"
                )
        effects = {k: v for k, v in self.mcp_effects.items() if v not in _EFFECTS}
        if effects:
            raise ConfigurationError(
                f"AgentConfig.mcp_effects: {effects} must be one of {list(_EFFECTS)}"
            )

    @property
    def output(self) -> OutputType | None:
        """``output_type`` with its validator and schema (built once, in ``__init__``)."""
        found: OutputType | None = self.__dict__.get("output")
        return found

    @property
    def archive_namespace(self) -> str:
        """The memory namespace compacted messages go to."""
        return self.transcript_namespace or self.memory_namespace or DEFAULT_TRANSCRIPT_NAMESPACE

    def tool(self, name: str) -> Tool | None:
        """The tool called ``name``, if the agent has it."""
        return next((t for t in self.tools if t.name == name), None)


def config_of(agent: type) -> AgentConfig:
    """The ``config`` an agent class sets.

    Raises:
        UserError: The class sets none (or not an ``AgentConfig``).
    """
    config = getattr(agent, "config", None)
    if not isinstance(config, AgentConfig):
        raise UserError(f"{agent.__name__} must set the class attribute `config`")
    return config
