"""``AgentWorkflow``: the base class of every agent, and the loop it runs.

Workflow code: deterministic, sandboxed. It imports only pure modules (messages,
types, config, tool specs) and reaches the model and tools through activities
scheduled by name, so the event history is the agent's authoritative state.
"""

from __future__ import annotations

import asyncio
import inspect
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any, ClassVar, NoReturn

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, ChildWorkflowError

from smyth_temporal._logging import WorkflowLogger
from smyth_temporal._names import workflow_type_name
from smyth_temporal.agent.approvals import InvalidDecision, check_decision
from smyth_temporal.agent.config import AgentConfig
from smyth_temporal.agent.memory import (
    BUILTIN_MEMORY_TOOLS,
    REMEMBER_TOOL,
    episode_text,
    format_hits,
    memory_block,
)
from smyth_temporal.agent.subagents import DELEGATE_TOOL, delegate_tool_for
from smyth_temporal.context import (
    DEFAULT_SUMMARY_INSTRUCTIONS,
    CompactionPlan,
    fallback_summary,
    plan_compaction,
    summary_message,
    transcript_chunks,
)
from smyth_temporal.exceptions import UserError
from smyth_temporal.tools._tool import Tool, ToolArgumentsError
from smyth_temporal.types.agent import (
    TERMINAL_STATUSES,
    AgentCheckpoint,
    AgentInput,
    AgentLimits,
    AgentResult,
    AgentState,
    AgentStatus,
)
from smyth_temporal.types.approvals import (
    APPROVAL_SIGNAL,
    APPROVAL_UPDATE,
    ApprovalDecision,
    ApprovalOutcome,
    ApprovalRequest,
    ApprovalStatus,
    arguments_sha256,
)
from smyth_temporal.types.compaction import Compaction
from smyth_temporal.types.memory import (
    MEMORY_ACTIVITY_FORGET,
    MEMORY_ACTIVITY_RECALL,
    MEMORY_ACTIVITY_REMEMBER,
    MEMORY_ACTIVITY_SUPERSEDE,
    ForgetRequest,
    ForgetResult,
    MemoryHit,
    MemoryRecord,
    MemoryScope,
    Provenance,
    RecallRequest,
    RememberRequest,
    SupersedeRequest,
)
from smyth_temporal.types.messages import Message, ToolCall, Usage
from smyth_temporal.types.model import MODEL_ACTIVITY, ModelRequest, ModelResponse
from smyth_temporal.types.sessions import (
    CLOSE_SESSION_SIGNAL,
    SESSION_EVENT_SIGNAL,
    SESSION_MESSAGE_UPDATE,
    SessionMessage,
    SessionReply,
)
from smyth_temporal.types.tools import ToolInvocation, ToolOutcome
from smyth_temporal.types.visibility import (
    PENDING_APPROVALS_ATTRIBUTE,
    PENDING_APPROVALS_MEMO,
    STATUS_ATTRIBUTE,
)

__all__ = [
    "CARRIED_APPROVALS",
    "CARRIED_COMPACTIONS",
    "MAX_OUTPUT_CHARS",
    "AgentWorkflow",
]

MAX_OUTPUT_CHARS = 200_000
"""The most characters of final output an ``AgentResult`` carries.

A workflow result over Temporal's 2 MiB payload limit leaves the run stuck, so a
run's output is bounded like every tool's.
"""

CARRIED_APPROVALS = 50
"""Decided approval requests carried into the next run at continue-as-new (pending ones
are always carried); older decisions stay in the history of the run that made them."""

CARRIED_COMPACTIONS = 50
"""Compaction records kept in the agent's state (the lineage of recent summaries)."""

MAX_SESSION_MESSAGE_CHARS = 100_000
"""The longest session message accepted; a longer one is refused, not truncated."""


class AgentWorkflow:
    """Base class of agents: subclass it, set ``config``, decorate with ``@workflow.defn``.

    The default loop is ``run_agent``. A custom agent writes its own ``@workflow.run``
    method and composes the same building blocks ``run_agent`` uses:

    - ``begin(input)``: start the conversation (system prompt and task).
    - ``think()``: one model turn; appends and returns the assistant message.
    - ``act(calls)``: run tool calls (read-only ones concurrently), append the results.
    - ``call_tool(call)``: run one tool call and return its result message (waiting
      for a person's decision first when the tool requires approval).
    - ``request_approval(call)``: record an approval request for a call.
    - ``recall(query)``, ``remember(text)``, ``forget(ids)``, ``supersede(old_id, text)``:
      long-term memory in the agent's tenant and ``config.memory_namespace``.
    - ``load_memories()`` / ``record_episode(result)``: what ``run_agent`` does with
      memory before the first turn and after the last.
    - ``respond(text)``: add a user message and think/act until the model answers
      (a monitoring cycle, a chat message).
    - ``sleep(duration)``: wait on a durable timer (hours, days) at no worker cost.
    - ``compact()``: summarize older turns when the prompt exceeds the context budget
      (``think`` does it before every turn; the originals are archived to memory).
    - ``continue_as_new_if_needed()``: at a safe point, start a fresh run with the
      agent's state when Temporal suggests it or ``continue_as_new_after_steps`` says.
    - ``finish(output)``: end the run with an ``AgentResult``.

    Every subclass answers the ``state`` query with an ``AgentState``, and takes
    approval decisions through the ``decide_approval`` update (validated, answered)
    and the ``approval_decision`` signal (fire-and-forget).

    Added in 0.1.0.
    """

    config: ClassVar[AgentConfig]
    """How the agent behaves; every subclass sets it."""

    def __init__(self, *args: Any) -> None:
        # Takes (and ignores) the run method's arguments: see _install_init.
        self.messages: list[Message] = []
        """The conversation so far; the next prompt is built from it."""
        self.step = 0
        """Model turns taken."""
        self.usage = Usage()
        """Tokens, requests and tool calls so far."""
        self.status: AgentStatus = "running"
        """Where the agent is."""
        self._input: AgentInput | None = None
        self._pending: dict[str, ToolCall] = {}
        self._output: str | None = None
        self._approvals: dict[str, ApprovalRequest] = {}
        self.data: dict[str, Any] = {}
        """The agent's own state (JSON-serializable); carried across continue-as-new."""
        self.compactions: list[Compaction] = []
        """The lineage of recent summaries."""
        self._compaction_count = 0
        self._generation = 1
        self._run_start_step = 0
        self._delegations = 0
        self._inbox: deque[tuple[int, SessionMessage, bool]] = deque()
        self._replies: dict[int, SessionReply] = {}
        self._received = 0
        self._closing = False
        self._restored = False
        self._log = WorkflowLogger("smyth_temporal.agent")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _install_init(cls)

    # -- queries -------------------------------------------------------------------

    @workflow.query(name="state")
    def state(self) -> AgentState:
        """A snapshot of the agent: status, step, recent messages, pending calls, usage."""
        info = workflow.info()
        recent = self.config.state_messages
        return AgentState(
            agent=info.workflow_type,
            workflow_id=info.workflow_id,
            run_id=info.run_id,
            status=self.status,
            step=self.step,
            max_steps=self.config.max_steps,
            tenant=self.input.tenant if self._input else "default",
            session_id=self._input.session_id if self._input else None,
            messages=self.messages[-recent:] if recent > 0 else [],
            message_count=len(self.messages),
            pending_tool_calls=list(self._pending.values()),
            usage=self.usage,
            output=self._output,
            approvals=list(self._approvals.values()),
            context_tokens=self.config.token_counter(self.messages),
            compactions=self.compactions,
            generation=self._generation,
            data=self.data,
        )

    # -- approval decisions --------------------------------------------------------

    @workflow.update(name=APPROVAL_UPDATE)
    def decide_approval(self, decision: ApprovalDecision) -> ApprovalOutcome:
        """Apply a decision and answer with the decided request."""
        request = self._check_decision(decision)
        self._apply_decision(request, decision)
        return ApprovalOutcome(request=request)

    @decide_approval.validator
    def _validate_decision(self, decision: ApprovalDecision) -> None:
        # Runs before anything is written to history: an invalid decision leaves no trace.
        self._check_decision(decision)

    @workflow.signal(name=APPROVAL_SIGNAL)
    def approval_decision(self, decision: ApprovalDecision) -> None:
        """Apply a decision sent as a signal; an invalid one is logged and ignored."""
        try:
            request = self._check_decision(decision)
        except InvalidDecision as exc:
            self._log.warning("approval.invalid_decision", error=str(exc), by=decision.by)
            return
        self._apply_decision(request, decision)

    # -- the default loop ----------------------------------------------------------

    async def run_agent(self, input: AgentInput) -> AgentResult:
        """Run the default loop: think, act on the tool calls, until the model answers.

        Args:
            input: The task.

        Returns:
            ``status="completed"`` with the model's answer, or ``status="max_steps"``
            with its last text when ``config.max_steps`` turns did not suffice.
        """
        if input.mode == "session":
            return await self.run_session(input)
        if not self.begin(input):
            await self.load_memories()
        answer = await self._until_answer(self.step_limit, self.continue_as_new_if_needed)
        if answer is None:
            self._log.warning("agent.max_steps", step=self.step)
            result = self.finish(self.last_text(), status="max_steps")
        else:
            result = self.finish(answer.content or "")
        await self.record_episode(result)
        return result

    # -- building blocks -----------------------------------------------------------

    @property
    def input(self) -> AgentInput:
        """The input the run started with."""
        if self._input is None:
            raise UserError("the agent has no input yet: call begin(input) first")
        return self._input

    def begin(self, input: AgentInput) -> bool:
        """Start the conversation: the system prompt, then the task as a user message.

        A run that continues an earlier one (``input.checkpoint``) restores its state
        instead: conversation, step, usage, approvals, compactions and ``data``.

        Returns:
            ``True`` when the agent resumed from a checkpoint, ``False`` when it
            started afresh.
        """
        if not hasattr(type(self), "config"):
            raise UserError(f"{type(self).__name__} must set the class attribute `config`")
        self._input = input
        checkpoint = input.checkpoint
        if checkpoint is not None:
            if not self._restored:  # a class with its own __init__ restores here
                self._restore(checkpoint)
            if any(r.status == "pending" for r in self._approvals.values()):
                self._publish_approvals()
            return True
        if self.config.instructions:
            self.messages.append(Message.system(self.config.instructions))
        if input.prompt:
            self.messages.append(Message.user(input.prompt))
        self._log.info("agent.started", tenant=input.tenant, session_id=input.session_id)
        return False

    def prompt(self) -> list[Message]:
        """The messages the next model turn sees; override to shape the context."""
        return list(self.messages)

    async def think(self, *, tools: Sequence[Tool] | None = None) -> Message:
        """Take one model turn: send the prompt, append and return the assistant message.

        Args:
            tools: The tools offered this turn (default: ``self.tools``).

        Returns:
            The assistant message; its ``tool_calls`` are not run yet (see ``act``).

        Raises:
            ApplicationError: The model call failed for good (a rejected request, or
                retries used up); the run fails with this message.
        """
        config = self.config
        offered = self.tools if tools is None else tools
        await self.compact()
        request = ModelRequest(
            model=config.model,
            messages=self.prompt(),
            tools=[t.schema() for t in offered],
            settings=config.model_settings,
            agent=workflow.info().workflow_type,
            step=self.step + 1,
        )
        self.status = "thinking"
        try:
            response: ModelResponse = await workflow.execute_activity(
                MODEL_ACTIVITY,
                request,
                result_type=ModelResponse,
                start_to_close_timeout=config.model_timeout,
                heartbeat_timeout=config.model_heartbeat_timeout,
                retry_policy=config.model_retry,
                summary=f"model turn {request.step}",
            )
        except ActivityError as exc:
            self.status = "failed"
            reason = exc.cause or exc
            self._log.error("agent.model_failed", step=request.step, error=str(reason))
            raise ApplicationError(
                f"model call failed at step {request.step}: {reason}",
                type="ModelError",
                non_retryable=True,
            ) from exc
        message = response.message.model_copy(update={"step": request.step})
        self.messages.append(message)
        self.usage = self.usage + response.usage
        self.step = request.step
        self.status = "running"
        self._log.info(
            "agent.step",
            step=self.step,
            tool_calls=[c.name for c in message.tool_calls],
            input_tokens=response.usage.input_tokens,
            output_tokens=response.usage.output_tokens,
        )
        return message

    async def act(self, calls: Sequence[ToolCall]) -> list[Message]:
        """Run tool calls and append their results, in the order the model asked.

        Consecutive read-only calls run concurrently; every other call runs alone, in
        order, so side effects happen in the sequence the model chose.

        Args:
            calls: The calls, usually the ``tool_calls`` of the last ``think()``.

        Returns:
            The tool result messages, in the order of ``calls``.
        """
        self.status = "acting"
        # Every gated call of the turn asks at once, so people can decide in any order.
        for call in calls:
            self.request_approval(call)
        results: list[Message] = []
        batch: list[ToolCall] = []
        for call in calls:
            spec = self._tool(call.name)
            if spec is not None and spec.read_only:
                batch.append(call)
                continue
            results += await self._run_concurrently(batch)
            batch = []
            results.append(await self.call_tool(call))
        results += await self._run_concurrently(batch)
        self.messages.extend(results)
        self.status = "running"
        return results

    async def call_tool(self, call: ToolCall) -> Message:
        """Run one tool call as its activity and return the result message (not appended).

        Whatever goes wrong (an unknown tool, arguments that do not fit, a tool that
        still fails after its retries) becomes the result, so the model can correct
        itself; the run goes on.
        """
        spec = self._tool(call.name)
        if spec is None:
            known = ", ".join(t.name for t in self.tools) or "none"
            return self._tool_error(call, f"unknown tool '{call.name}'. Available tools: {known}.")
        try:
            arguments = spec.validate_arguments(call.arguments)
        except ToolArgumentsError as exc:
            return self._tool_error(call, str(exc))
        if spec in BUILTIN_MEMORY_TOOLS:
            return await self._call_memory_tool(call, spec, arguments)
        if spec.name == DELEGATE_TOOL:
            return await self._call_delegate_tool(call, arguments)
        request = self.request_approval(call)
        if request is not None:
            await self._await_decision(request)
            decision = request.decision
            if decision is None or not decision.approved:
                return self._tool_error(call, _refusal(request))
            if decision.arguments is not None:
                arguments = spec.validate_arguments(decision.arguments)
            request.executed_arguments_sha256 = arguments_sha256(arguments)
        info = workflow.info()
        invocation = ToolInvocation(
            tool=spec.name,
            call_id=call.id,
            arguments=arguments,
            idempotency_key=f"{info.workflow_id}/{self.step}/{call.id}",
            agent=info.workflow_type,
            step=self.step,
            tenant=self.input.tenant,
        )
        self._pending[call.id] = call
        self.usage = self.usage + Usage(tool_calls=1)
        try:
            outcome: ToolOutcome = await workflow.execute_activity(
                spec.activity_name,
                invocation,
                result_type=ToolOutcome,
                start_to_close_timeout=spec.timeout,
                heartbeat_timeout=spec.heartbeat_timeout,
                retry_policy=spec.retry,
                summary=f"{spec.name} (step {self.step})",
            )
        except ActivityError as exc:
            reason = exc.cause or exc
            return self._tool_error(call, f"tool '{call.name}' failed: {reason}")
        finally:
            del self._pending[call.id]
        self._log.info("agent.tool_result", step=self.step, tool=call.name, call_id=call.id)
        return Message.tool_result(call, outcome.content, step=self.step)

    @property
    def tools(self) -> list[Tool]:
        """The tools the model is offered.

        ``config.tools``, plus ``remember`` and ``recall`` when the agent has memory.
        """
        config = self.config
        builtins = BUILTIN_MEMORY_TOOLS if config.memory_namespace and config.memory_tools else ()
        offered = [*config.tools, *builtins]
        if config.subagents:
            offered.append(delegate_tool_for(tuple(config.subagents)))
        limits = self._input.limits if self._input else None
        if limits is not None and limits.tools is not None:
            # A sub-agent keeps only what its parent allowed.
            offered = [t for t in offered if t.name in limits.tools]
        return offered

    @property
    def step_limit(self) -> int:
        """The step count at which the agent stops (``max_steps``, or a parent's bound)."""
        limits = self._input.limits if self._input else None
        if limits is not None and limits.max_steps is not None:
            return min(self.config.max_steps, limits.max_steps)
        return self.config.max_steps

    @property
    def out_of_tokens(self) -> bool:
        """Whether a parent's token bound (``AgentLimits.max_tokens``) is used up."""
        limits = self._input.limits if self._input else None
        return bool(limits and limits.max_tokens and self.usage.total_tokens >= limits.max_tokens)

    # -- memory --------------------------------------------------------------------

    @property
    def memory_scope(self) -> MemoryScope:
        """The tenant (from the input) and namespace (from the config) of memory."""
        namespace = self.config.memory_namespace
        if namespace is None:
            raise UserError(
                f"{type(self).__name__} has no memory: set AgentConfig.memory_namespace"
            )
        return self._scope(namespace)

    async def recall(
        self,
        query: str,
        *,
        k: int | None = None,
        kinds: Sequence[str] | None = None,
        include_expired: bool = False,
        include_superseded: bool = False,
    ) -> list[MemoryHit]:
        """Search long-term memory for ``query`` (in the agent's tenant and namespace)."""
        request = RecallRequest(
            scope=self.memory_scope,
            query=query,
            k=k or self.config.memory_recall_k or 5,
            kinds=list(kinds) if kinds else None,
            include_expired=include_expired,
            include_superseded=include_superseded,
            now=workflow.now(),
        )
        hits: list[MemoryHit] = await self._memory_activity(
            MEMORY_ACTIVITY_RECALL, request, list[MemoryHit], "recall"
        )
        return hits

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

        ``namespace`` overrides ``config.memory_namespace`` (the tenant never changes).
        """
        now = workflow.now()
        request = RememberRequest(
            scope=self._scope(namespace) if namespace else self.memory_scope,
            texts=[text] if isinstance(text, str) else list(text),
            kind=kind,
            provenance=self._provenance(),
            created_at=now,
            expires_at=now + expires_in if expires_in else None,
            metadata=dict(metadata or {}),
        )
        records: list[MemoryRecord] = await self._memory_activity(
            MEMORY_ACTIVITY_REMEMBER, request, list[MemoryRecord], f"remember {kind}"
        )
        return records

    async def forget(self, ids: Sequence[str]) -> int:
        """Delete memories of the agent's scope by id; returns how many."""
        request = ForgetRequest(scope=self.memory_scope, ids=list(ids))
        result: ForgetResult = await self._memory_activity(
            MEMORY_ACTIVITY_FORGET, request, ForgetResult, "forget"
        )
        return result.count

    async def supersede(self, old_id: str, text: str) -> MemoryRecord:
        """Replace memory ``old_id`` with a newer text (the old one is kept for audit)."""
        request = SupersedeRequest(
            scope=self.memory_scope,
            old_id=old_id,
            text=text,
            provenance=self._provenance(),
            created_at=workflow.now(),
        )
        record: MemoryRecord = await self._memory_activity(
            MEMORY_ACTIVITY_SUPERSEDE, request, MemoryRecord, "supersede"
        )
        return record

    async def load_memories(self) -> list[MemoryHit]:
        """Recall what is relevant to the task and put it into the prompt.

        Does nothing for agents without memory. The memories go in as a delimited
        system message, with their ids, just before the task.
        """
        if not self.config.memory_namespace or self.config.memory_recall_k <= 0:
            return []
        hits = await self.recall(self.input.prompt)
        if hits:
            task = max(i for i, m in enumerate(self.messages) if m.role == "user")
            self.messages.insert(task, memory_block(hits))
        return hits

    async def record_episode(self, result: AgentResult) -> None:
        """Store an ``episode`` memory of the run (task, outcome, key tool results)."""
        if not self.config.memory_namespace or not self.config.memory_episodes:
            return
        text = episode_text(
            self.input.prompt, result.status, result.steps, result.output, self.messages
        )
        await self.remember(text, kind="episode")

    def request_approval(
        self, call: ToolCall, *, reason: str | None = None
    ) -> ApprovalRequest | None:
        """Record an approval request for ``call`` if its tool requires one.

        Idempotent: the same call gets the same request. Calls to unknown tools or
        with invalid arguments get none (``call_tool`` reports those to the model).

        Args:
            call: The tool call.
            reason: What to show the approver (default: the model's text of that turn).

        Returns:
            The request, or ``None`` when the call needs no approval.
        """
        existing = self._approvals.get(_request_id(self.step, call))
        if existing is not None:
            return existing
        spec = self._tool(call.name)
        if spec is None or not spec.requires_approval:
            return None
        try:
            arguments = spec.validate_arguments(call.arguments)
        except ToolArgumentsError:
            return None
        try:
            gated = spec.needs_approval(arguments)
        except Exception as exc:
            # A broken predicate must not let a gated call through: ask a person.
            self._log.error("approval.predicate_failed", tool=spec.name, error=repr(exc))
            gated = True
        if not gated:
            return None
        now = workflow.now()
        timeout = spec.approval_timeout or self.config.approval_timeout
        request = ApprovalRequest(
            id=_request_id(self.step, call),
            tool=spec.name,
            call_id=call.id,
            step=self.step,
            arguments=arguments,
            arguments_sha256=arguments_sha256(arguments),
            reason=reason if reason is not None else self._reason_for(call),
            requested_at=now,
            deadline=now + timeout,
            on_timeout=spec.on_timeout or self.config.on_approval_timeout,
        )
        self._approvals[request.id] = request
        self._log.info("approval.requested", request_id=request.id, tool=spec.name)
        self._publish_approvals()
        return request

    def finish(self, output: str, status: AgentStatus = "completed") -> AgentResult:
        """End the run: record the output and build the result.

        Args:
            output: The final answer (bounded to ``MAX_OUTPUT_CHARS``).
            status: ``completed`` (default) or ``max_steps``.
        """
        if len(output) > MAX_OUTPUT_CHARS:
            output = output[:MAX_OUTPUT_CHARS] + "\n[output truncated]"
        self._output = output
        self.status = status
        if self._approvals:
            self._publish_approvals()
        self._log.info("agent.finished", status=status, steps=self.step)
        return AgentResult(output=output, status=status, steps=self.step, usage=self.usage)

    def last_text(self) -> str:
        """The text of the last assistant message that had any."""
        for message in reversed(self.messages):
            if message.role == "assistant" and message.content:
                return message.content
        return ""

    # -- sessions -------------------------------------------------------------------

    @workflow.update(name=SESSION_MESSAGE_UPDATE)
    async def send_message(self, message: SessionMessage) -> SessionReply:
        """Queue a session message and answer with the agent's reply to it.

        Messages are answered one at a time, in the order they arrived.
        """
        number = self._enqueue(message, reply=True)
        await workflow.wait_condition(lambda: number in self._replies)
        return self._replies.pop(number)

    @send_message.validator
    def _validate_message(self, message: SessionMessage) -> None:
        # Runs before anything is written to history: a refused message leaves no trace.
        self._check_message(message)

    @workflow.signal(name=SESSION_EVENT_SIGNAL)
    def post_event(self, message: SessionMessage) -> None:
        """Queue a session message that nobody waits for (an event, a notification)."""
        try:
            self._check_message(message)
        except ApplicationError as exc:
            self._log.warning("session.invalid_event", error=exc.message)
            return
        self._enqueue(message, reply=False)

    @workflow.signal(name=CLOSE_SESSION_SIGNAL)
    def close_session(self) -> None:
        """End the session once the messages already queued are answered."""
        self._closing = True

    async def run_session(self, input: AgentInput) -> AgentResult:
        """Stay alive and answer session messages one by one, keeping the context.

        ``run_agent`` does this for ``AgentInput(mode="session")``, so every agent
        class can hold sessions. An idle session waits on a condition only: no timer,
        no worker memory once evicted. It continues as new when the history grows,
        between messages, and ends when ``close_session`` is signalled.
        """
        if not self.begin(input) and input.prompt:
            # An opening prompt is the first message of the session.
            self.messages.pop()
            self._enqueue(SessionMessage(text=input.prompt, tenant=input.tenant), reply=False)
        while True:
            self.status = "idle"
            await workflow.wait_condition(
                lambda: bool(self._inbox) or self._closing or self.should_continue_as_new()
            )
            if self._inbox:
                await self._answer(*self._inbox.popleft())
                continue
            if self._closing:
                break
            # Switch runs between messages; answer any message that arrives first.
            await workflow.wait_condition(
                lambda: workflow.all_handlers_finished() or bool(self._inbox) or self._closing
            )
            if not self._inbox and not self._closing:
                self.continue_as_new()
        self._log.info("session.closed", messages=self._received)
        return self.finish(self.last_text())

    # -- sub-agents -----------------------------------------------------------------

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

        The child may use only the tools both this agent has and ``tools`` allows (all
        of this agent's when left out; none it lacks, ever). It runs in this agent's
        tenant, within ``max_steps`` and ``max_tokens`` (by default what remains of
        this agent's own token bound), and its usage is added to this agent's.
        Cancelling this agent cancels the child; a crashed worker only delays it.

        Raises:
            temporalio.exceptions.ChildWorkflowError: The child failed.
        """
        own = {t.name for t in self.tools}
        wanted = own if tools is None else {t if isinstance(t, str) else t.name for t in tools}
        parent_limits = self.input.limits
        if max_tokens is None and parent_limits and parent_limits.max_tokens:
            max_tokens = max(parent_limits.max_tokens - self.usage.total_tokens, 1)
        child_input = task if isinstance(task, AgentInput) else AgentInput(prompt=task)
        child_input = child_input.model_copy(
            update={
                "tenant": self.input.tenant,
                "session_id": child_input.session_id or self.input.session_id,
                "limits": AgentLimits(
                    tools=sorted(own & wanted), max_steps=max_steps, max_tokens=max_tokens
                ),
            }
        )
        name = agent if isinstance(agent, str) else _workflow_name(agent)
        self._delegations += 1
        child_id = f"{workflow.info().workflow_id}/{name}-{self._delegations}"
        self._log.info("agent.delegating", child=child_id, tools=child_input.limits.tools)  # type: ignore[union-attr]
        result: AgentResult = await workflow.execute_child_workflow(
            name,
            child_input,
            id=child_id,
            result_type=AgentResult,
            # Closing the parent any way (even terminating it) cancels the child.
            parent_close_policy=workflow.ParentClosePolicy.REQUEST_CANCEL,
            static_summary=f"sub-agent {name} (step {self.step})",
        )
        self.usage = self.usage + result.usage
        self._log.info("agent.delegated", child=child_id, status=result.status, steps=result.steps)
        return result

    # -- long-running agents --------------------------------------------------------

    async def respond(self, text: str, *, max_steps: int | None = None) -> Message:
        """Add ``text`` as a user message, then think and act until the model answers.

        One cycle of a monitoring agent, or one message of a session.

        Args:
            text: The user message.
            max_steps: The most model turns to take (default: ``config.max_steps``).

        Returns:
            The model's answer; if the turns ran out first, its last assistant message
            (whose ``tool_calls`` were run).
        """
        self.messages.append(Message.user(text))
        limit = max_steps or self.step_limit
        answer = await self._until_answer(self.step + limit)
        if answer is not None:
            return answer
        self._log.warning("agent.max_steps", step=self.step, limit=limit)
        last = (m for m in reversed(self.messages) if m.role == "assistant")
        return next(last, Message(role="assistant", content=""))

    async def sleep(self, duration: timedelta, *, reason: str | None = None) -> None:
        """Wait ``duration`` on a durable timer (status ``sleeping``).

        A sleeping agent costs nothing: the worker may evict it from its cache, a
        deploy may replace every worker, and it wakes on time all the same.
        """
        previous, self.status = self.status, "sleeping"
        self._log.info("agent.sleeping", seconds=duration.total_seconds())
        await workflow.sleep(duration, summary=reason or f"sleep {duration}")
        self.status = previous

    def plan_compaction(self, messages: Sequence[Message]) -> CompactionPlan | None:
        """Decide what to compact before the next turn; override to change the policy.

        The default compacts once the prompt exceeds ``config.context_budget``, keeping
        the system prompt, the task and the most recent ``compaction_keep_ratio`` of
        the budget verbatim (see ``smyth_temporal.context.plan_compaction``).
        """
        config = self.config
        if config.context_budget is None:
            return None
        return plan_compaction(
            messages,
            budget=config.context_budget,
            keep_recent=int(config.context_budget * config.compaction_keep_ratio),
            count=config.token_counter,
        )

    def summary_prompt(self, span: Sequence[Message]) -> list[Message]:
        """The messages asking the model to summarize ``span``; override to change them."""
        transcript = "\n\n".join(transcript_chunks(span, workflow.info().workflow_id))
        return [Message.system(DEFAULT_SUMMARY_INSTRUCTIONS), Message.user(transcript)]

    async def compact(self) -> Compaction | None:
        """Compact older turns into a summary if ``plan_compaction`` says so.

        The originals are archived to long-term memory (kind ``transcript``) first; a
        summary replaces them only once they are. If the archive fails, nothing
        changes. If the summarizer fails, the agent keeps its full prompt and tries
        again at its next turn; only beyond ``context_hard_limit`` budgets does a
        placeholder pointing at the archive replace the turns. Either way no message
        is dropped without an archive.

        Returns:
            The compaction's record, or ``None`` when nothing was compacted.
        """
        plan = self.plan_compaction(self.messages)
        if plan is None:
            return None
        config = self.config
        count = config.token_counter
        span = self.messages[plan.start : plan.end]
        tokens_before = count(self.messages)
        compaction_id = f"cmp-{self._compaction_count + 1}"
        try:
            archived = await self.remember(
                transcript_chunks(span, workflow.info().workflow_id),
                kind="transcript",
                namespace=config.archive_namespace,
                metadata={"compaction": compaction_id},
            )
        except ActivityError as exc:
            self._log.error("compaction.archive_failed", error=str(exc.cause or exc))
            return None
        error: str | None = None
        try:
            text = await self._summarize(span, compaction_id)
        except ActivityError as exc:
            error = str(exc.cause or exc)
            hard_limit = (config.context_budget or tokens_before) * config.context_hard_limit
            if tokens_before <= hard_limit:
                self._log.warning("compaction.deferred", error=error, tokens=tokens_before)
                return None
            text = ""
        steps = [*self._covered_steps(span)]
        compaction = Compaction(
            id=compaction_id,
            first_step=min(steps) if steps else None,
            last_step=max(steps) if steps else None,
            message_count=len(span),
            folded=[m.compaction for m in span if m.compaction],
            namespace=config.archive_namespace,
            archived=[r.id for r in archived],
            at_step=self.step,
            created_at=workflow.now(),
            tokens_before=tokens_before,
            tokens_after=0,
            fallback=not text.strip(),
            error=error,
        )
        summary = summary_message(text if text.strip() else fallback_summary(span), compaction)
        self.messages[plan.start : plan.end] = [summary]
        compaction.tokens_after = count(self.messages)
        self._compaction_count += 1
        self.compactions = [*self.compactions, compaction][-CARRIED_COMPACTIONS:]
        self._log.info(
            "compaction.done",
            compaction=compaction.id,
            messages=len(span),
            tokens_before=tokens_before,
            tokens_after=compaction.tokens_after,
            fallback=compaction.fallback,
        )
        return compaction

    def should_continue_as_new(self) -> bool:
        """Whether this run has grown enough to hand over to a fresh one."""
        limit = self.config.continue_as_new_after_steps
        if limit is not None and self.step - self._run_start_step >= limit:
            return True
        return workflow.info().is_continue_as_new_suggested()

    def continue_as_new_if_needed(self) -> None:
        """Continue as new if ``should_continue_as_new`` and no handler is running.

        Call it at a safe point: between steps, with no tool call in flight. While an
        update or signal handler is still running the switch waits for a later call,
        so no handler is ever cut off; the next run answers everything after.
        """
        if not self.should_continue_as_new():
            return
        if not workflow.all_handlers_finished():
            self._log.info("agent.continue_as_new_deferred", step=self.step)
            return
        self.continue_as_new()

    def continue_as_new(self) -> NoReturn:
        """Continue as new now, carrying ``checkpoint()`` into the next run."""
        checkpoint = self.checkpoint()
        self._log.info(
            "agent.continue_as_new",
            step=self.step,
            generation=checkpoint.generation,
            messages=len(checkpoint.messages),
        )
        workflow.continue_as_new(self.input.model_copy(update={"checkpoint": checkpoint}))

    def checkpoint(self) -> AgentCheckpoint:
        """The state the next run starts from (see ``AgentCheckpoint``)."""
        approvals = list(self._approvals.values())
        decided = [r for r in approvals if r.status != "pending"][-CARRIED_APPROVALS:]
        carried = {r.id for r in decided}
        return AgentCheckpoint(
            messages=self.messages,
            step=self.step,
            usage=self.usage,
            approvals=[r for r in approvals if r.status == "pending" or r.id in carried],
            compactions=self.compactions,
            compaction_count=self._compaction_count,
            generation=self._generation + 1,
            data=self.data,
            session_messages=self._received,
            delegations=self._delegations,
        )

    # -- internals -----------------------------------------------------------------

    async def _until_answer(
        self, until_step: int, between_steps: Callable[[], None] | None = None
    ) -> Message | None:
        """Think and act until the model answers; ``None`` if the steps or tokens run out."""
        while self.step < until_step and not self.out_of_tokens:
            reply = await self.think()
            if not reply.tool_calls:
                return reply
            await self.act(reply.tool_calls)
            if between_steps is not None:
                between_steps()
        return None

    def _restore(self, checkpoint: AgentCheckpoint) -> None:
        self.messages = list(checkpoint.messages)
        self.step = self._run_start_step = checkpoint.step
        self.usage = checkpoint.usage
        self._approvals = {r.id: r for r in checkpoint.approvals}
        self.compactions = list(checkpoint.compactions)
        self._compaction_count = checkpoint.compaction_count
        self._generation = checkpoint.generation
        self.data = dict(checkpoint.data)
        self._received = checkpoint.session_messages
        self._delegations = checkpoint.delegations
        self._restored = True
        self._log.info("agent.resumed", step=self.step, generation=self._generation)

    def _enqueue(self, message: SessionMessage, *, reply: bool) -> int:
        self._received += 1
        self._inbox.append((self._received, message, reply))
        self._log.info("session.message", number=self._received, sender=message.sender)
        return self._received

    def _check_message(self, message: SessionMessage) -> None:
        problem: str | None = None
        if self._input is None or self._input.mode != "session":
            problem = "this agent run is not a session (start it with AgentClient.send)"
        elif message.tenant != self._input.tenant:
            problem = f"the session belongs to another tenant than {message.tenant!r}"
        elif self._closing or self.status in TERMINAL_STATUSES:
            problem = "the session is closed"
        elif not message.text.strip():
            problem = "the message is empty"
        elif len(message.text) > MAX_SESSION_MESSAGE_CHARS:
            problem = (
                f"the message has {len(message.text)} characters; "
                f"the limit is {MAX_SESSION_MESSAGE_CHARS}"
            )
        if problem:
            raise ApplicationError(problem, type="InvalidSessionMessage", non_retryable=True)

    async def _answer(self, number: int, message: SessionMessage, reply: bool) -> None:
        self.status = "running"
        answer = await self.respond(message.text)
        text = answer.content if not answer.tool_calls else self.last_text()
        if reply:
            self._replies[number] = SessionReply(
                text=text or "", number=number, step=self.step, usage=self.usage
            )
        self._log.info("session.answered", number=number, step=self.step)

    async def _call_delegate_tool(self, call: ToolCall, arguments: dict[str, Any]) -> Message:
        names = {_workflow_name(a): a for a in self.config.subagents}
        agent = names.get(arguments["agent"])
        if agent is None:
            known = ", ".join(sorted(names)) or "none"
            return self._tool_error(
                call, f"unknown sub-agent {arguments['agent']!r}; known: {known}"
            )
        self.usage = self.usage + Usage(tool_calls=1)
        try:
            result = await self.delegate(agent, arguments["task"])
        except ChildWorkflowError as exc:
            return self._tool_error(
                call, f"sub-agent {arguments['agent']} failed: {exc.cause or exc}"
            )
        content = f"[{result.status}, {result.steps} steps] {result.output}"
        return Message.tool_result(call, content, step=self.step)

    async def _summarize(self, span: Sequence[Message], compaction_id: str) -> str:
        config = self.config
        request = ModelRequest(
            model=config.summary_model or config.model,
            messages=self.summary_prompt(span),
            settings=config.model_settings,
            agent=workflow.info().workflow_type,
            step=self.step,
            purpose="summary",
        )
        response: ModelResponse = await workflow.execute_activity(
            MODEL_ACTIVITY,
            request,
            result_type=ModelResponse,
            start_to_close_timeout=config.summary_timeout,
            heartbeat_timeout=config.model_heartbeat_timeout,
            retry_policy=config.summary_retry,
            summary=f"summary {compaction_id}",
        )
        self.usage = self.usage + response.usage
        return response.message.content or ""

    def _covered_steps(self, span: Sequence[Message]) -> list[int]:
        records = {c.id: c for c in self.compactions}
        steps: list[int] = []
        for message in span:
            if message.compaction and message.compaction in records:
                record = records[message.compaction]
                steps += [s for s in (record.first_step, record.last_step) if s is not None]
            elif message.step is not None:
                steps.append(message.step)
        return steps

    async def _run_concurrently(self, calls: Sequence[ToolCall]) -> list[Message]:
        if len(calls) <= 1:
            return [await self.call_tool(call) for call in calls]
        # gather keeps the order of its arguments and schedules deterministically.
        return list(await asyncio.gather(*(self.call_tool(call) for call in calls)))

    def _tool(self, name: str) -> Tool | None:
        return next((t for t in self.tools if t.name == name), None)

    def _scope(self, namespace: str) -> MemoryScope:
        return MemoryScope(tenant=self.input.tenant, namespace=namespace)

    def _provenance(self) -> Provenance:
        info = workflow.info()
        return Provenance(
            agent=info.workflow_type,
            workflow_id=info.workflow_id,
            run_id=info.run_id,
            step=self.step,
        )

    async def _memory_activity(
        self, name: str, request: Any, result_type: Any, summary: str
    ) -> Any:
        return await workflow.execute_activity(
            name,
            request,
            result_type=result_type,
            start_to_close_timeout=self.config.memory_timeout,
            summary=summary,
        )

    async def _call_memory_tool(
        self, call: ToolCall, spec: Tool, arguments: dict[str, Any]
    ) -> Message:
        self.usage = self.usage + Usage(tool_calls=1)
        try:
            if spec is REMEMBER_TOOL:
                [record] = await self.remember(arguments["text"], kind=arguments["kind"])
                content = f"Remembered as [{record.id}]."
            else:
                hits = await self.recall(arguments["query"], k=max(1, min(arguments["k"], 20)))
                content = format_hits(hits) or "No memories match."
        except ActivityError as exc:
            return self._tool_error(call, f"memory failed: {exc.cause or exc}")
        return Message.tool_result(call, content, step=self.step)

    async def _await_decision(self, request: ApprovalRequest) -> None:
        if request.status != "pending":
            return
        previous, self.status = self.status, "awaiting_approval"
        self._publish_approvals()
        remaining = max(request.deadline - workflow.now(), timedelta(0))
        try:
            await workflow.wait_condition(lambda: request.status != "pending", timeout=remaining)
        except TimeoutError:
            self._expire(request)
        self.status = previous
        self._publish_approvals()

    def _expire(self, request: ApprovalRequest) -> None:
        self._log.warning("approval.expired", request_id=request.id, policy=request.on_timeout)
        if request.on_timeout == "fail":
            request.status = "expired"
            request.decided_at = workflow.now()
            self.status = "failed"
            raise ApplicationError(
                f"approval request {request.id} for tool '{request.tool}' expired at "
                f"{request.deadline.isoformat()} without a decision",
                type="ApprovalExpired",
                non_retryable=True,
            )
        approved = request.on_timeout == "approve"
        comment = "approved" if approved else "rejected"
        self._apply_decision(
            request,
            ApprovalDecision(
                request_id=request.id,
                approved=approved,
                by="system:timeout",
                comment=f"no decision before the deadline; {comment} by policy",
            ),
            status="expired",
        )

    def _check_decision(self, decision: ApprovalDecision) -> ApprovalRequest:
        return check_decision(decision, self._approvals, self._validate_tool_arguments)

    def _validate_tool_arguments(self, tool: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        spec = self.config.tool(tool)
        if spec is None:
            raise ValueError(f"the agent no longer has tool '{tool}'")
        return spec.validate_arguments(arguments)

    def _apply_decision(
        self,
        request: ApprovalRequest,
        decision: ApprovalDecision,
        *,
        status: ApprovalStatus | None = None,
    ) -> None:
        request.decision = decision.model_copy(update={"request_id": request.id})
        request.status = status or ("approved" if decision.approved else "rejected")
        request.decided_at = workflow.now()
        self._log.info(
            "approval.decided",
            request_id=request.id,
            tool=request.tool,
            approved=decision.approved,
            by=decision.by,
            edited=decision.arguments is not None,
        )

    def _publish_approvals(self) -> None:
        if not self.config.search_attributes:
            return
        pending = [r for r in self._approvals.values() if r.status == "pending"]
        workflow.upsert_search_attributes(
            [
                STATUS_ATTRIBUTE.value_set("awaiting_approval" if pending else self.status),
                PENDING_APPROVALS_ATTRIBUTE.value_set(len(pending)),
            ]
        )
        # The memo travels with visibility listings, so pending requests can be shown
        # without querying the run, which needs a live worker.
        workflow.upsert_memo(
            {
                PENDING_APPROVALS_MEMO: {
                    "tenant": self.input.tenant,
                    "requests": [r.model_dump(mode="json") for r in pending],
                }
            }
        )

    def _reason_for(self, call: ToolCall) -> str | None:
        for message in reversed(self.messages):
            if message.role == "assistant" and any(c.id == call.id for c in message.tool_calls):
                return message.content
        return None

    def _tool_error(self, call: ToolCall, text: str) -> Message:
        self._log.warning("agent.tool_error", step=self.step, tool=call.name, error=text)
        return Message.tool_result(call, f"Error: {text}", step=self.step)


def _workflow_name(agent: type[AgentWorkflow]) -> str:
    name = workflow_type_name(agent)
    if name is None:
        raise UserError(f"{agent.__qualname__} is not decorated with @workflow.defn")
    return name


def _install_init(cls: type[AgentWorkflow]) -> None:
    """Give an agent class an ``@workflow.init`` constructor that restores a checkpoint.

    A signal or update that reaches a new run in its first workflow task is handled
    before the run method starts; restoring the carried state in ``__init__`` means
    such a handler sees the approvals, ``data`` and conversation of the previous run
    (an approval decided during the switch is applied, not refused as unknown). The
    constructor takes exactly the run method's parameters, as Temporal requires. A
    class that writes its own ``__init__`` keeps it, and restores in ``begin``.
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
            self._input = args[0]
            if args[0].checkpoint is not None:
                self._restore(args[0].checkpoint)

    __init__.__signature__ = inspect.signature(run)  # type: ignore[attr-defined]
    __init__._smyth_generated = True  # type: ignore[attr-defined]
    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    cls.__init__ = workflow.init(__init__)  # type: ignore[method-assign]


def _request_id(step: int, call: ToolCall) -> str:
    return f"apr-{step}-{call.id}"


def _refusal(request: ApprovalRequest) -> str:
    decision = request.decision
    if request.status == "expired":
        return (
            f"the call to '{request.tool}' was not run: its approval request expired at "
            f"{request.deadline.isoformat()} without a decision. Do not retry it unchanged."
        )
    by = decision.by if decision else "an approver"
    why = f": {decision.comment}" if decision and decision.comment else ""
    return (
        f"the call to '{request.tool}' was not run: it was rejected by {by}{why}. "
        "Adapt your plan instead of retrying it unchanged."
    )
