"""``AgentWorkflow``: the base class of every agent, a facade over its components.

Workflow code: deterministic, sandboxed. The building blocks an agent composes and
the Temporal handlers (queries, signals, updates must be methods of the workflow
class) live here, each a short delegation to the component that owns the state and
the logic:

- ``conversation``: messages, step, usage, status (``agent.conversation``);
- the think/act loop (``agent.loop``) and the one tool path (``agent.tooling``);
- ``approvals``: requests and decisions (``agent.approvals``);
- the session inbox (``agent.sessions``), memory (``agent.memory``), sub-agents
  (``agent.delegation``), compaction (``agent.compaction``);
- ``lifecycle``: begin, finish, checkpoint, restore and continue-as-new
  (``agent.lifecycle``).

``__init__`` builds one ``Run`` (``agent.run``: config, conversation, event stream,
interrupts, logger, input, and the agent itself as ``AgentHooks``) and hands it to
each component, which calls the agent's overridable methods through ``run.hooks``.

One tool call, file by file, from the model's response to its recorded result:

1. ``loop.py``: ``Loop.turn`` names the calls (``conversation.assign_call_ids``) and
   records the assistant message; ``Loop.until_answer`` hands its calls to ``act``;
2. ``workflow.py``: ``act``, then ``call_tool`` for each call (hooks a subclass may
   override);
3. ``tooling.py``: ``ToolRunner.act`` asks for every gated call's approval first and
   batches read-only calls; ``ToolRunner.call`` validates, gates, executes, records;
4. ``run.py``: ``Run.tools``, the tools offered this turn (the ``tools`` hook is asked
   once per turn, by ``think``), where the call finds its tool;
5. ``tools/_tool.py``: ``Tool.validate_arguments`` (bounds, then the schema);
6. ``approvals.py``: ``Approvals.request`` (``None`` for a call that needs no
   approval), ``Approvals.wait`` for one that does;
7. ``_commands.py``: ``call_tool_activity``, the activity with the tool's options;
8. ``conversation.py``: ``Conversation.add`` records the result message.

On the way the call reads the interrupt flag (``interrupts.py``), publishes its
``tool_call`` events (``events.py``) and logs (``_logging``).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any, ClassVar, NoReturn

from temporalio import workflow

from smyth_temporal.agent.approvals import Approvals
from smyth_temporal.agent.bounds import RunBounds
from smyth_temporal.agent.compaction import Compactor
from smyth_temporal.agent.config import AgentConfig, config_of
from smyth_temporal.agent.delegation import DELEGATE_EXECUTOR, Delegation
from smyth_temporal.agent.events import carried_stream
from smyth_temporal.agent.lifecycle import MAX_OUTPUT_CHARS, Lifecycle
from smyth_temporal.agent.loop import ContextTooLongError, Loop
from smyth_temporal.agent.mcp import MCPTools
from smyth_temporal.agent.memory import MEMORY_EXECUTOR, AgentMemory
from smyth_temporal.agent.output import Settled, TypedOutput
from smyth_temporal.agent.rewind import before_turn, take_rewind, watch_resets
from smyth_temporal.agent.run import Run
from smyth_temporal.agent.sessions import Inbox
from smyth_temporal.agent.tooling import ToolRunner, limited
from smyth_temporal.context import CompactionPlan
from smyth_temporal.exceptions import ModelError
from smyth_temporal.tools import Tool, ToolExecutor
from smyth_temporal.types.agent import (
    INTERRUPT_UPDATE,
    AgentInput,
    AgentResult,
    AgentState,
    AgentStatus,
    Interrupt,
    InterruptOutcome,
)
from smyth_temporal.types.approvals import (
    APPROVAL_SIGNAL,
    APPROVAL_UPDATE,
    ApprovalDecision,
    ApprovalOutcome,
    ApprovalRequest,
)
from smyth_temporal.types.compaction import Compaction
from smyth_temporal.types.memory import MemoryHit, MemoryRecord
from smyth_temporal.types.messages import Message, ToolCall
from smyth_temporal.types.rewind import REWIND_SIGNAL, RewindNotice
from smyth_temporal.types.sessions import (
    CLOSE_SESSION_SIGNAL,
    SESSION_EVENT_SIGNAL,
    SESSION_MESSAGE_UPDATE,
    SessionMessage,
    SessionReply,
)

__all__ = ["MAX_OUTPUT_CHARS", "AgentWorkflow"]


class AgentWorkflow:
    """Base class of agents: subclass it, set ``config``, decorate with ``@workflow.defn``.

    The default loop is ``run_agent``. A custom agent writes its own ``@workflow.run``
    method and composes the same building blocks: ``begin``, ``think``, ``act``,
    ``call_tool``, ``request_approval``, ``recall``/``remember``/``forget``/
    ``supersede``, ``load_memories``/``record_episode``, ``delegate``, ``respond``,
    ``sleep``, ``compact``, ``continue_as_new_if_needed``, ``finish``. Hooks to
    override: ``prompt``, ``tools``, ``plan_compaction``, ``summary_prompt``.

    The state a subclass sees: ``conversation`` (messages, step, usage, status),
    ``approvals``, ``events`` (the run's event stream), ``lifecycle`` and ``data`` (its
    own, carried across continue-as-new).
    Every agent answers the ``state`` query, takes approval decisions through the
    ``decide_approval`` update and the ``approval_decision`` signal, interrupts through
    the ``interrupt`` update, and session messages through the ``send_message`` update
    and ``post_event`` signal.

    Added in 0.1.0. Changed in 0.3.0: state lives in components. Changed in 0.9.0:
    the components share one ``Run``; ``tools`` is asked once per turn.
    """

    config: ClassVar[AgentConfig]
    """How the agent behaves; every subclass sets it."""

    def __init__(self, *args: Any) -> None:
        # Takes (and ignores) the run method's arguments: see _install_init.
        self.data: dict[str, Any] = {}
        """The agent's own state (JSON-serializable); carried across continue-as-new."""
        self._run = run = Run.new(config_of(type(self)), self, carried_stream(args))
        self.conversation = run.conversation
        """The messages so far and where the agent is."""
        self.events = run.events
        """The run's event stream (``AgentClient.events``); publish your own events here."""
        self._log = run.log
        self._mcp = MCPTools(run)
        self.approvals = Approvals(run, find=self._mcp.configured)
        """Every approval request of the run and its decision."""
        self._inbox = Inbox(run)
        self._memory = AgentMemory(run)
        watch_resets(run)
        self._compactor = Compactor(run)
        self._loop = Loop(run, self._inbox)
        self.bounds = RunBounds(run, self._loop, self.approvals)
        """Where the run stops: steps, tokens, money."""
        self._delegation = Delegation(run, self.bounds)
        output, retries = run.config.output, run.config.output_retries
        self._typed = TypedOutput(output, retries, run.conversation, run.log) if output else None
        executors = {
            MEMORY_EXECUTOR: self._memory.executor(),
            DELEGATE_EXECUTOR: self._delegation.executor(),
            **self.tool_executors(),
        }
        self._tools = ToolRunner(run, self.approvals, executors=executors, mcp=self._mcp)
        parts = (self.approvals, self._compactor, self._inbox, self._delegation)
        self.lifecycle = Lifecycle(run, *parts)
        """Generation, checkpoint and continue-as-new."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _install_init(cls)

    # -- handlers --------------------------------------------------------------------

    @workflow.query(name="state")
    def state(self) -> AgentState:
        """A snapshot of the agent: status, step, recent messages, pending calls, usage."""
        return self.lifecycle.snapshot(self._run.started)

    @workflow.update(name=APPROVAL_UPDATE)
    async def decide_approval(self, decision: ApprovalDecision) -> ApprovalOutcome:
        """Apply a decision and answer with the decided request (see ``Approvals.decide``)."""
        return ApprovalOutcome(request=await self.approvals.decide(decision))

    @decide_approval.validator
    def _validate_decision(self, decision: ApprovalDecision) -> None:
        # Runs before anything is written to history: an invalid decision leaves no trace.
        self.approvals.check(decision)

    # A decision still waiting when the run ends was never applied: no warning.
    @workflow.signal(
        name=APPROVAL_SIGNAL, unfinished_policy=workflow.HandlerUnfinishedPolicy.ABANDON
    )
    async def approval_decision(self, decision: ApprovalDecision) -> None:
        """Apply a decision sent as a signal (see ``Approvals.take_signalled``)."""
        await self.approvals.take_signalled(decision)

    @workflow.update(name=INTERRUPT_UPDATE)
    def interrupt(self, interrupt: Interrupt) -> InterruptOutcome:
        """Stop the current turn at its next safe point (see ``Interrupt``)."""
        return self._run.interrupts.request(interrupt)

    @interrupt.validator
    def _validate_interrupt(self, interrupt: Interrupt) -> None:
        self._run.interrupts.check()  # refused (no trace in history) when nothing runs

    @workflow.update(name=SESSION_MESSAGE_UPDATE)
    async def send_message(self, message: SessionMessage) -> SessionReply:
        """Queue a session message and answer with the reply (one at a time, in order)."""
        return await self._inbox.reply_to(self._inbox.enqueue(message, reply=True))

    @send_message.validator
    def _validate_message(self, message: SessionMessage) -> None:
        # Runs before anything is written to history: a refused message leaves no trace.
        self._inbox.check(message, self._run.started, self.conversation.status)

    @workflow.signal(name=SESSION_EVENT_SIGNAL)
    def post_event(self, message: SessionMessage) -> None:
        """Queue a session message that nobody waits for (an event, a notification)."""
        self._inbox.post(message, self._run.started, self.conversation.status)

    @workflow.signal(name=CLOSE_SESSION_SIGNAL)
    def close_session(self) -> None:
        """End the session once the messages already queued are answered."""
        self._inbox.closing = True

    @workflow.signal(name=REWIND_SIGNAL, unfinished_policy=workflow.HandlerUnfinishedPolicy.ABANDON)
    async def rewound(self, notice: RewindNotice) -> None:
        """Go on from a rewind's reset (see ``agent.rewind``)."""
        await take_rewind(self._run, self._memory, notice)

    # -- the default loops -----------------------------------------------------------

    async def run_agent(self, input: AgentInput) -> AgentResult:
        """Think and act until the model answers (or hold a session, for ``mode="session"``).

        Returns:
            ``completed`` with the model's answer, or ``max_steps`` with its last text.
        """
        if input.mode == "session":
            return await self.run_session(input)
        if not self.begin(input):
            await self.load_memories()
        answer = await self._until_answer(self.step_limit, self.continue_as_new_if_needed)
        settled = Settled(answer)
        if answer is not None and self._typed is not None:  # validate, maybe correct
            settled = await self._typed.settle(answer, lambda: self._until_answer(self.step_limit))
        if settled.answer is None:
            status = self.bounds.stop_status()
            self._log.warning(f"agent.{status}", step=self.conversation.step)
            result = self.finish(self.conversation.last_text(), status)
        else:
            result = self.finish(settled.answer.content or "", settled.status, data=settled.data)
        await self.record_episode(result)
        return result

    async def run_session(self, input: AgentInput) -> AgentResult:
        """Answer session messages one by one, keeping the context, until closed.

        An idle session waits on a condition only; it continues as new between
        messages when the history grows.
        """
        if not self.begin(input) and input.prompt:  # the opening prompt: the first message
            message = SessionMessage(text=input.prompt, tenant=input.tenant)
            self._inbox.enqueue(message, reply=False)
        await self._inbox.serve()
        return self.finish(self.conversation.last_text())

    # -- building blocks: the conversation -------------------------------------------

    @property
    def input(self) -> AgentInput:
        """The input the run started with."""
        return self._run.input

    def begin(self, input: AgentInput) -> bool:
        """Start the conversation (system prompt, task), or resume from ``input.checkpoint``.

        Returns:
            ``True`` when the agent resumed from a checkpoint, ``False`` when it
            started afresh.
        """
        return self.lifecycle.begin(input)

    def tool_executors(self) -> Mapping[str, ToolExecutor]:
        """Executors of the tools made with ``@tool(executor=name)``, by name; override.

        An executor runs in workflow code: ``await executor(spec, call, arguments)``
        returns the text for the model, or raises ``ToolCallError`` to report a failure.
        """
        return {}

    def prompt(self) -> list[Message]:
        """The messages the next model turn sees; override to shape the context."""
        return list(self.conversation.messages)

    @property
    def tools(self) -> list[Tool]:
        """The tools offered: ``config.tools``, built-ins, MCP tools (listed at the first think).

        A sub-agent keeps only those its parent allowed (``AgentLimits.tools``). Asked
        once per model turn, by ``think``; that turn's calls use the same list.
        """
        local = [*self.config.tools, *self._memory.tools(), *self._delegation.tools()]
        return limited([*local, *self._mcp.tools(local)], self._run.started)

    async def think(self, *, tools: Sequence[Tool] | None = None) -> Message:
        """Take one model turn (compacting first if needed); append and return its message.

        The message's ``tool_calls`` are not run yet (see ``act``). Right after a
        rewind's reset, it first waits for the rewind's notice (see ``agent.rewind``).
        """
        await before_turn(self._run)
        await self._mcp.load()  # once per run: the recorded MCP tool lists
        turn = self.conversation.step + 1  # the tools hook is asked once per turn, here
        offered = self._run.tools(turn, fresh=True) if tools is None else tools
        await self.compact()
        try:
            return await self._loop.turn(self.prompt(), offered)
        except ContextTooLongError as exc:
            # The window is the model's, not the budget's: compact however far under
            # the budget the prompt is, then take the turn once more.
            if await self._compactor.compact(force=True) is None:
                self.conversation.status = "failed"
                raise ModelError(
                    f"{exc} (compacting could not shorten it)", retryable=False
                ) from exc
        try:
            return await self._loop.turn(self.prompt(), offered)
        except ContextTooLongError as exc:
            self.conversation.status = "failed"
            raise ModelError(f"{exc} (even after compacting)", retryable=False) from exc

    async def act(self, calls: Sequence[ToolCall]) -> list[Message]:
        """Run tool calls (consecutive read-only ones concurrently); append the results."""
        self.conversation.status = "acting"
        results = await self._tools.act(calls)
        self.conversation.add(*results)
        self.conversation.status = "running"
        return results

    async def call_tool(self, call: ToolCall) -> Message:
        """Run one call (waiting for approval if gated); return its result message.

        Whatever goes wrong becomes the result, so the model can correct itself.
        """
        return await self._tools.call(call)

    def request_approval(
        self, call: ToolCall, *, reason: str | None = None
    ) -> ApprovalRequest | None:
        """Record an approval request for ``call`` if its tool requires one (idempotent).

        ``reason`` defaults to the model's text of that turn.
        """
        return self._tools.request_approval(call, reason=reason)

    async def respond(self, text: str, *, max_steps: int | None = None) -> Message:
        """Add ``text`` as a user message, then think and act until the model answers.

        Returns:
            The answer; if ``max_steps`` (default ``config.max_steps``) turns did not
            suffice, the last assistant message.
        """
        self.conversation.add(Message.user(text))
        limit = max_steps or self.step_limit
        answer = await self._until_answer(self.conversation.step + limit)
        if answer is None and not self._loop.interrupted:
            self._log.warning("agent.max_steps", step=self.conversation.step, limit=limit)
        return answer or self.conversation.last_assistant()

    async def sleep(self, duration: timedelta, *, reason: str | None = None) -> None:
        """Wait ``duration`` on a durable timer (status ``sleeping``), at no worker cost."""
        await self.lifecycle.sleep(duration, reason=reason)

    def finish(
        self, output: str, status: AgentStatus = "completed", *, data: Any = None
    ) -> AgentResult:
        """End the run: record the output (bounded to ``MAX_OUTPUT_CHARS``), build the result.

        ``data`` is the typed answer's JSON form (see ``AgentConfig.output_type``).
        """
        return self.lifecycle.finish(output, status, data=data)

    @property
    def step_limit(self) -> int:
        """The step count at which the agent stops (``max_steps``, or a parent's bound)."""
        return self.bounds.step_limit

    # -- building blocks: memory and sub-agents --------------------------------------

    async def recall(
        self,
        query: str,
        *,
        k: int | None = None,
        kinds: Sequence[str] | None = None,
        include_expired: bool = False,
        include_superseded: bool = False,
    ) -> list[MemoryHit]:
        """Search long-term memory (the agent's tenant and namespace) for ``query``.

        ``k`` hits at most (default ``config.memory_recall_k``), of ``kinds`` only.
        Changed in 0.9.0: typed keyword parameters (before, ``**options``).
        """
        return await self._memory.recall(
            query,
            k=k,
            kinds=kinds,
            include_expired=include_expired,
            include_superseded=include_superseded,
        )

    async def remember(
        self,
        text: str | Sequence[str],
        *,
        kind: str = "fact",
        expires_in: timedelta | None = None,
        metadata: Mapping[str, Any] | None = None,
        namespace: str | None = None,
    ) -> list[MemoryRecord]:
        """Store one or more memories; idempotent (a retry or replay stores nothing twice).

        ``namespace`` defaults to the agent's (the tenant never changes). Changed in
        0.9.0: typed keyword parameters (before, ``**options``).
        """
        return await self._memory.remember(
            text, kind=kind, expires_in=expires_in, metadata=metadata, namespace=namespace
        )

    async def forget(self, ids: Sequence[str]) -> int:
        """Delete memories of the agent's scope by id; returns how many."""
        return await self._memory.forget(ids)

    async def supersede(self, old_id: str, text: str) -> MemoryRecord:
        """Replace memory ``old_id`` with a newer text (the old one is kept for audit)."""
        return await self._memory.supersede(old_id, text)

    async def load_memories(self) -> list[MemoryHit]:
        """Recall what is relevant to the task into the prompt, before the task."""
        return await self._memory.load()

    async def record_episode(self, result: AgentResult) -> None:
        """Store an ``episode`` memory of the run (task, outcome, key tool results)."""
        await self._memory.record_episode(result)

    async def delegate(
        self,
        agent: type[AgentWorkflow] | str,
        task: AgentInput | str,
        *,
        tools: Sequence[str | Tool] | None = None,
        max_steps: int | None = None,
        max_tokens: int | None = None,
    ) -> AgentResult:
        """Run a sub-agent as a child workflow and return its result.

        Bounds: ``tools`` (names or tools; never more than this agent has),
        ``max_steps``, ``max_tokens`` (default: what remains of this agent's bound).
        The child runs in this agent's tenant; its usage is added to this agent's;
        cancelling this agent cancels it. Changed in 0.9.0: typed bounds.

        Raises:
            temporalio.exceptions.ChildWorkflowError: The child failed.
        """
        return await self._delegation.run(
            agent, task, tools=tools, max_steps=max_steps, max_tokens=max_tokens
        )

    # -- building blocks: the run lifecycle ------------------------------------------

    def plan_compaction(self, messages: Sequence[Message]) -> CompactionPlan | None:
        """Decide what to compact before the next turn; override to change the policy.

        The default compacts beyond ``config.context_budget``, keeping the system
        prompt, the task and the most recent ``compaction_keep_ratio`` verbatim.
        """
        return self._compactor.default_plan(messages)

    def summary_prompt(self, span: Sequence[Message]) -> list[Message]:
        """The messages asking the model to summarize ``span``; override to change them."""
        return self._compactor.default_summary_prompt(span)

    async def compact(self) -> Compaction | None:
        """Archive older turns to memory, then replace them by a summary, if planned.

        If the archive fails nothing changes; if the summarizer fails the agent keeps
        its full prompt until ``context_hard_limit``, then a placeholder pointing at
        the archive stands in. No message is dropped without an archive.
        """
        return await self._compactor.compact()

    def should_continue_as_new(self) -> bool:
        """Whether this run has grown enough to hand over to a fresh one."""
        return self.lifecycle.should_continue_as_new()

    def continue_as_new_if_needed(self) -> None:
        """Continue as new if due and no handler is running (call it between steps)."""
        if self.lifecycle.safe_to_continue():
            self.continue_as_new()

    def continue_as_new(self) -> NoReturn:
        """Continue as new now, carrying the agent's state into the next run."""
        self.lifecycle.continue_as_new(self.input)

    # -- internals -------------------------------------------------------------------

    async def _until_answer(self, until_step: int, between: Any = None) -> Message | None:
        return await self._loop.until_answer(
            until_step=until_step, may_go_on=self.bounds.may_go_on, between_steps=between
        )


def _install_init(cls: type[AgentWorkflow]) -> None:
    """Give an agent class an ``@workflow.init`` constructor that restores a checkpoint.

    A signal or update that reaches a new run in its first workflow task is handled
    before the run method starts; restoring the carried state in ``__init__`` means
    such a handler sees the approvals, ``data`` and conversation of the previous run.
    The constructor takes exactly the run method's parameters, as Temporal requires.
    A class that writes its own ``__init__`` keeps it, and restores in ``begin``.
    """
    own = vars(cls).get("__init__")
    if own is not None and not getattr(own, "_smyth_generated", False):
        return
    run = next((m for m in vars(cls).values() if hasattr(m, "__temporal_workflow_run")), None)
    if run is None:
        return

    def __init__(self: AgentWorkflow, *args: Any) -> None:
        super(cls, self).__init__(*args)
        if args and isinstance(args[0], AgentInput):
            # Handlers of the first workflow task (an update-with-start's message, a
            # decision sent during a switch) then see the input and carried state.
            self._run.started = args[0]
            if args[0].checkpoint is not None:
                self.data = self.lifecycle.restore(args[0].checkpoint)

    __init__.__signature__ = inspect.signature(run)  # type: ignore[attr-defined]
    __init__._smyth_generated = True  # type: ignore[attr-defined]
    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    cls.__init__ = workflow.init(__init__)  # type: ignore[method-assign]
