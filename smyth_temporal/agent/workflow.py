"""``AgentWorkflow``: the base class of every agent, and the loop it runs.

Workflow code: deterministic, sandboxed. It imports only pure modules (messages,
types, config, tool specs) and reaches the model and tools through activities
scheduled by name, so the event history is the agent's authoritative state.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any, ClassVar

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

from smyth_temporal._logging import WorkflowLogger
from smyth_temporal.agent.approvals import (
    PENDING_APPROVALS_ATTRIBUTE,
    PENDING_APPROVALS_MEMO,
    STATUS_ATTRIBUTE,
    ApprovalDecision,
    ApprovalOutcome,
    ApprovalRequest,
    ApprovalStatus,
    InvalidDecision,
    arguments_sha256,
    check_decision,
)
from smyth_temporal.agent.config import AgentConfig
from smyth_temporal.agent.memory import (
    BUILTIN_MEMORY_TOOLS,
    REMEMBER_TOOL,
    episode_text,
    format_hits,
    memory_block,
)
from smyth_temporal.agent.messages import Message, ToolCall, Usage
from smyth_temporal.agent.types import AgentInput, AgentResult, AgentState, AgentStatus
from smyth_temporal.exceptions import UserError
from smyth_temporal.memory._types import (
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
from smyth_temporal.models._types import MODEL_ACTIVITY, ModelRequest, ModelResponse
from smyth_temporal.tools._tool import Tool, ToolArgumentsError
from smyth_temporal.tools._types import ToolInvocation, ToolOutcome

__all__ = ["APPROVAL_SIGNAL", "APPROVAL_UPDATE", "MAX_OUTPUT_CHARS", "AgentWorkflow"]

APPROVAL_SIGNAL = "approval_decision"
"""Signal carrying an ``ApprovalDecision`` (fire-and-forget; invalid ones are logged)."""

APPROVAL_UPDATE = "decide_approval"
"""Update carrying an ``ApprovalDecision``; answers ``ApprovalOutcome`` or rejects it."""

MAX_OUTPUT_CHARS = 200_000
"""The most characters of final output an ``AgentResult`` carries.

A workflow result over Temporal's 2 MiB payload limit leaves the run stuck, so a
run's output is bounded like every tool's.
"""


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
    - ``finish(output)``: end the run with an ``AgentResult``.

    Every subclass answers the ``state`` query with an ``AgentState``, and takes
    approval decisions through the ``decide_approval`` update (validated, answered)
    and the ``approval_decision`` signal (fire-and-forget).

    Added in 0.1.0.
    """

    config: ClassVar[AgentConfig]
    """How the agent behaves; every subclass sets it."""

    def __init__(self) -> None:
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
        self._log = WorkflowLogger("smyth_temporal.agent")

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
        self.begin(input)
        await self.load_memories()
        result: AgentResult | None = None
        while self.step < self.config.max_steps:
            reply = await self.think()
            if not reply.tool_calls:
                result = self.finish(reply.content or "")
                break
            await self.act(reply.tool_calls)
        if result is None:
            self._log.warning("agent.max_steps", step=self.step)
            result = self.finish(self.last_text(), status="max_steps")
        await self.record_episode(result)
        return result

    # -- building blocks -----------------------------------------------------------

    @property
    def input(self) -> AgentInput:
        """The input the run started with."""
        if self._input is None:
            raise UserError("the agent has no input yet: call begin(input) first")
        return self._input

    def begin(self, input: AgentInput) -> None:
        """Start the conversation: the system prompt, then the task as a user message."""
        if not hasattr(type(self), "config"):
            raise UserError(f"{type(self).__name__} must set the class attribute `config`")
        self._input = input
        if self.config.instructions:
            self.messages.append(Message.system(self.config.instructions))
        self.messages.append(Message.user(input.prompt))
        self._log.info("agent.started", tenant=input.tenant, session_id=input.session_id)

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
        return [*config.tools, *builtins]

    # -- memory --------------------------------------------------------------------

    @property
    def memory_scope(self) -> MemoryScope:
        """The tenant (from the input) and namespace (from the config) of memory."""
        namespace = self.config.memory_namespace
        if namespace is None:
            raise UserError(
                f"{type(self).__name__} has no memory: set AgentConfig.memory_namespace"
            )
        return MemoryScope(tenant=self.input.tenant, namespace=namespace)

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
    ) -> list[MemoryRecord]:
        """Store one or more memories; idempotent (a retry or replay stores nothing twice)."""
        now = workflow.now()
        request = RememberRequest(
            scope=self.memory_scope,
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
        spec = self.config.tool(call.name)
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

    # -- internals -----------------------------------------------------------------

    async def _run_concurrently(self, calls: Sequence[ToolCall]) -> list[Message]:
        if len(calls) <= 1:
            return [await self.call_tool(call) for call in calls]
        # gather keeps the order of its arguments and schedules deterministically.
        return list(await asyncio.gather(*(self.call_tool(call) for call in calls)))

    def _tool(self, name: str) -> Tool | None:
        return next((t for t in self.tools if t.name == name), None)

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
