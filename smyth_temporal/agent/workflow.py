"""``AgentWorkflow``: the base class of every agent, and the loop it runs.

Workflow code: deterministic, sandboxed. It imports only pure modules (messages,
types, config, tool specs) and reaches the model and tools through activities
scheduled by name, so the event history is the agent's authoritative state.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import ClassVar

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

from smyth_temporal._logging import WorkflowLogger
from smyth_temporal.agent.config import AgentConfig
from smyth_temporal.agent.messages import Message, ToolCall, Usage
from smyth_temporal.agent.types import AgentInput, AgentResult, AgentState, AgentStatus
from smyth_temporal.exceptions import UserError
from smyth_temporal.models._types import MODEL_ACTIVITY, ModelRequest, ModelResponse
from smyth_temporal.tools._tool import Tool, ToolArgumentsError
from smyth_temporal.tools._types import ToolInvocation, ToolOutcome

__all__ = ["MAX_OUTPUT_CHARS", "AgentWorkflow"]

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
    - ``call_tool(call)``: run one tool call and return its result message.
    - ``finish(output)``: end the run with an ``AgentResult``.

    Every subclass answers the ``state`` query with an ``AgentState``.

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
        )

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
        while self.step < self.config.max_steps:
            reply = await self.think()
            if not reply.tool_calls:
                return self.finish(reply.content or "")
            await self.act(reply.tool_calls)
        self._log.warning("agent.max_steps", step=self.step)
        return self.finish(self.last_text(), status="max_steps")

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
            tools: The tools offered this turn (default: all of ``config.tools``).

        Returns:
            The assistant message; its ``tool_calls`` are not run yet (see ``act``).

        Raises:
            ApplicationError: The model call failed for good (a rejected request, or
                retries used up); the run fails with this message.
        """
        config = self.config
        offered = config.tools if tools is None else tools
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
        results: list[Message] = []
        batch: list[ToolCall] = []
        for call in calls:
            spec = self.config.tool(call.name)
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
        spec = self.config.tool(call.name)
        if spec is None:
            known = ", ".join(t.name for t in self.config.tools) or "none"
            return self._tool_error(call, f"unknown tool '{call.name}'. Available tools: {known}.")
        try:
            arguments = spec.validate_arguments(call.arguments)
        except ToolArgumentsError as exc:
            return self._tool_error(call, str(exc))
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

    def _tool_error(self, call: ToolCall, text: str) -> Message:
        self._log.warning("agent.tool_error", step=self.step, tool=call.name, error=text)
        return Message.tool_result(call, f"Error: {text}", step=self.step)
