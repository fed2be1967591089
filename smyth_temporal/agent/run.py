"""The run context: what every component of an agent shares, handed over as one object.

Workflow code (pure state, no commands). ``AgentWorkflow.__init__`` builds one ``Run``
and gives it to each component (approvals, the tool runner, the loop, memory, ...)
instead of a lambda per value it reads later: the config, the conversation, the
event stream, the interrupts, the logger, the input once the run has one, and the
agent itself as ``AgentHooks``, the methods a subclass may override. A component calls
the hooks through ``run.hooks``, so an override changes the agent everywhere.

``Run.tools`` computes the offered tools once per model turn (the ``tools`` hook
builds its list from the config, memory, sub-agents and MCP servers); the tool calls
of that turn look their tools up in the same list.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, NoReturn, Protocol

from temporalio.contrib.workflow_streams import WorkflowStreamState

from smyth_temporal._logging import WorkflowLogger
from smyth_temporal.agent.config import AgentConfig
from smyth_temporal.agent.conversation import Conversation
from smyth_temporal.agent.events import EventLog
from smyth_temporal.agent.interrupts import Interrupts
from smyth_temporal.context import CompactionPlan
from smyth_temporal.exceptions import UserError
from smyth_temporal.tools import Tool, ToolExecutor
from smyth_temporal.types.agent import AgentInput, AgentResult
from smyth_temporal.types.memory import MemoryHit, MemoryRecord
from smyth_temporal.types.messages import Message, ToolCall
from smyth_temporal.types.model import RecordedRun
from smyth_temporal.types.rewind import RewindNotice

__all__ = ["AgentHooks", "Resets", "Run"]


class AgentHooks(Protocol):
    """What components ask of the agent: its own state and the methods it may override.

    ``AgentWorkflow`` satisfies it; a subclass that overrides one of these methods
    changes what every component does with it (the loop thinks and acts through
    ``think``/``act``, the tool runner runs each call through ``call_tool``, the
    built-in memory tools go through ``recall``/``remember``, ...).

    Added in 0.9.0.
    """

    data: dict[str, Any]
    """The agent's own state, carried across continue-as-new."""

    @property
    def tools(self) -> list[Tool]:
        """The tools offered to the model (asked once per turn, see ``Run.tools``)."""
        ...

    def prompt(self) -> list[Message]:
        """The messages the next model turn sees."""
        ...

    def tool_executors(self) -> Mapping[str, ToolExecutor]:
        """Executors of ``@tool(executor=name)`` tools, by name."""
        ...

    def plan_compaction(self, messages: Sequence[Message]) -> CompactionPlan | None:
        """What to compact before the next turn (``None``: nothing)."""
        ...

    def summary_prompt(self, span: Sequence[Message]) -> list[Message]:
        """The messages asking the model to summarize ``span``."""
        ...

    async def think(self, *, tools: Sequence[Tool] | None = None) -> Message:
        """One model turn."""
        ...

    async def act(self, calls: Sequence[ToolCall]) -> list[Message]:
        """Run a turn's tool calls."""
        ...

    async def call_tool(self, call: ToolCall) -> Message:
        """Run one tool call."""
        ...

    async def respond(self, text: str, *, max_steps: int | None = None) -> Message:
        """Answer a user message: think and act until the model answers."""
        ...

    def should_continue_as_new(self) -> bool:
        """Whether this run has grown enough to hand over to a fresh one."""
        ...

    def continue_as_new(self) -> NoReturn:
        """Continue as new now, carrying the agent's state into the next run."""
        ...

    async def recall(
        self,
        query: str,
        *,
        k: int | None = None,
        kinds: Sequence[str] | None = None,
        include_expired: bool = False,
        include_superseded: bool = False,
    ) -> list[MemoryHit]:
        """Search long-term memory."""
        ...

    async def remember(
        self,
        text: str | Sequence[str],
        *,
        kind: str = "fact",
        expires_in: timedelta | None = None,
        metadata: Mapping[str, Any] | None = None,
        namespace: str | None = None,
    ) -> list[MemoryRecord]:
        """Store memories."""
        ...

    async def delegate(
        self,
        agent: type[Any] | str,
        task: AgentInput | str,
        *,
        tools: Sequence[str | Tool] | None = None,
        max_steps: int | None = None,
        max_tokens: int | None = None,
    ) -> AgentResult:
        """Run a sub-agent."""
        ...


@dataclass
class Resets:
    """A run's resets and the rewind notices that explain them (see ``agent.rewind``).

    Added in 0.10.0.
    """

    seen: int = 0
    """How many resets Temporal told this run of (each reseeds it)."""
    noticed: int = 0
    """How many rewind notices came (or resets were given up waiting for)."""
    prompt: str | None = None
    """A notice's prompt not in the conversation yet (the next turn adds it first)."""
    prompt_after: int = 0
    """How many messages the conversation had when the notice came."""


@dataclass(kw_only=True, eq=False)
class Run:
    """One agent run as its components see it.

    Added in 0.9.0 (before, each component took the values it needed as callbacks).
    """

    config: AgentConfig
    """The agent's config."""
    hooks: AgentHooks
    """The agent itself: its state and the methods a subclass may override."""
    conversation: Conversation
    """The messages so far and where the agent is."""
    events: EventLog
    """The run's event stream."""
    log: WorkflowLogger
    """The agent's logger."""
    interrupts: Interrupts
    """The interrupt waiting to be taken, if any."""
    started: AgentInput | None = None
    """The input the run started with (``None`` until ``begin`` or the constructor sets it)."""
    rewind: RewindNotice | None = None
    """What the rewind that made this run said (``None``: not rewound); the tool runner
    reconciles the side effects it lists. Added in 0.10.0."""
    resets: Resets = field(default_factory=Resets)
    """Its resets and the rewind notices that explain them (see ``agent.rewind``)."""
    _offered: tuple[int, list[Tool]] | None = field(default=None, init=False, repr=False)

    @classmethod
    def new(cls, config: AgentConfig, hooks: AgentHooks, prior: WorkflowStreamState | None) -> Run:
        """A fresh run: an empty conversation publishing to a new event stream.

        Args:
            config: The agent's config.
            hooks: The agent.
            prior: The stream state the previous run carried (``None``: a fresh start).
                Call it from the workflow's ``__init__``: the stream registers its
                handlers there, before any signal or update of the first task.
        """
        conversation = Conversation()
        events = EventLog(prior, lambda: conversation.step)
        conversation.publish = events.publish
        log = WorkflowLogger("smyth_temporal.agent")
        interrupts = Interrupts(conversation, log)
        return cls(
            config=config,
            hooks=hooks,
            conversation=conversation,
            events=events,
            log=log,
            interrupts=interrupts,
        )

    @property
    def input(self) -> AgentInput:
        """The input the run started with.

        Raises:
            UserError: The run has no input yet.
        """
        if self.started is None:
            raise UserError("the agent has no input yet: call begin(input) first")
        return self.started

    @property
    def tenant(self) -> str:
        """The tenant the run works for (from its input, never from the model)."""
        return self.input.tenant

    @property
    def replay_from(self) -> RecordedRun | None:
        """The parent run whose recorded model calls may answer this fork's.

        Only a fork started with ``replay_model_turns`` names one. It is a field of the
        model activity's input, never a command, so recorded runs replay unchanged.
        Added in 0.10.0.
        """
        started = self.started
        if started is None or not started.replay_model_turns or started.fork_of is None:
            return None
        origin = started.fork_of
        return RecordedRun(
            workflow_id=origin.workflow_id, run_id=origin.run_id, after_step=origin.step
        )

    def tools(self, turn: int | None = None, *, fresh: bool = False) -> list[Tool]:
        """The tools offered in model turn ``turn`` (default: the current step's).

        The ``tools`` hook is asked once per turn: ``think`` asks ``fresh`` for the
        turn it is about to take, and that turn's tool calls find their tools in the
        same list. Asked for another turn (a custom loop that acts without thinking),
        the hook is asked again.
        """
        turn = self.conversation.step if turn is None else turn
        if fresh or self._offered is None or self._offered[0] != turn:
            self._offered = (turn, list(self.hooks.tools))
        return self._offered[1]
