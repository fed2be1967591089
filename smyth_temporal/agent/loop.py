"""The think/act loop: one model turn, and turns until the model answers.

Workflow code. ``Loop.turn`` sends the prompt to the model activity and records the
assistant message; ``Loop.until_answer`` alternates turns and tool calls until the
model answers without calling tools, the step budget or a parent's token bound runs
out. The loop thinks and acts through the agent's hooks (``run.hooks.think``,
``run.hooks.act``), so a subclass that overrides one changes the loop everywhere.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from typing import NoReturn

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

from smyth_temporal.agent._commands import start_model
from smyth_temporal.agent.conversation import assign_call_ids, unique_call_ids
from smyth_temporal.agent.fallback import fallback_chain, moves_on
from smyth_temporal.agent.live import live_target
from smyth_temporal.agent.run import Run
from smyth_temporal.agent.sessions import Inbox
from smyth_temporal.agent.tooling import CALL_IDS_PATCH
from smyth_temporal.agent.versions import record_versions, step_versions
from smyth_temporal.exceptions import AgentInterruptedError, BudgetExceededError, ModelError
from smyth_temporal.tools import Tool
from smyth_temporal.types.events import TurnFinished, TurnStarted, UsageReported
from smyth_temporal.types.messages import Message
from smyth_temporal.types.model import (
    ModelRequest,
    ModelResponse,
    is_context_too_long,
)

__all__ = ["CONTEXT_COMPACTION_PATCH", "FALLBACK_MODELS_PATCH", "ContextTooLongError", "Loop"]

FALLBACK_MODELS_PATCH = "smyth-fallback-models"
"""Marks runs whose overloaded model calls may move to ``AgentConfig.fallback_models``."""

CONTEXT_COMPACTION_PATCH = "smyth-context-compaction"
"""Marks runs where a prompt over the context window compacts and retries the turn."""


class ContextTooLongError(ModelError):
    """A turn's prompt is longer than the model's context window.

    ``AgentWorkflow.think`` compacts and takes the turn once more; a second one fails
    the run as a ``ModelError``.

    Added in 0.10.0.
    """


class Loop:
    """Model turns and the think/act cycle.

    Args:
        run: The agent's run (config: model, settings, timeouts; the conversation the
            turns extend; interrupts that may stop a turn; the event stream: turns,
            streamed text, usage; hooks: ``think`` and ``act``).
        inbox: The session inbox, whose steering messages join before each turn.

    Added in 0.3.0. Changed in 0.9.0: takes the ``Run`` and the ``Inbox``.
    """

    def __init__(self, run: Run, inbox: Inbox) -> None:
        self.interrupted = False
        """Whether the last ``until_answer`` was stopped by an interrupt."""
        self.refused: str | None = None
        """Why the tenant's budget refused a model call, if it did."""
        self._run = run
        self._config = run.config
        self._conversation = run.conversation
        self._interrupts = run.interrupts
        self._events = run.events
        self._log = run.log
        self._inbox = inbox

    async def turn(self, prompt: list[Message], tools: Sequence[Tool]) -> Message:
        """Send ``prompt`` with ``tools`` to the model; append and return its message.

        Raises:
            ModelError: The model call failed for good (a rejected request, or
                retries used up); the run fails with this message.
            AgentInterruptedError: An interrupt cancelled the call.
        """
        config, conversation, events = self._config, self._conversation, self._events
        message_id = events.next_message_id()
        live = live_target(message_id) if config.stream else None
        started = self._run.started
        # A fork may go on with another model (AgentInput.model): only new inputs set it,
        # so recorded runs replay with the config's model.
        model = (started.model if started is not None else None) or config.model
        request = ModelRequest(
            model=model,
            messages=prompt,
            tools=[t.schema() for t in tools],
            settings=config.model_settings,
            agent=workflow.info().workflow_type,
            step=conversation.step + 1,
            output=config.output.schema if config.output else None,
            stream_id=message_id if config.stream else None,
            live=live,
            tenant=self._run.tenant,
            replay_from=self._run.replay_from,
        )
        versions = step_versions(
            request.step, instructions=config.instructions, model=model, tools=tools
        )
        conversation.versions = record_versions(conversation.versions, versions)
        events.publish(
            TurnStarted(
                step=request.step,
                message_id=message_id,
                versions=versions,
                live=live,
            )
        )
        conversation.status = "thinking"
        response = await self._ask(request, message_id)
        message = response.message
        update: dict[str, object] = {"step": request.step}
        if message.tool_calls:
            update["tool_calls"] = (
                assign_call_ids(message.tool_calls, request.step)
                if workflow.patched(CALL_IDS_PATCH)
                else unique_call_ids(message.tool_calls)
            )
        message = message.model_copy(update=update)
        conversation.step = request.step
        conversation.add(message, message_id=message_id)
        conversation.count(response.usage)
        events.publish(UsageReported(usage=conversation.usage, message_id=message_id))
        conversation.status = "running"
        self._log.info(
            "agent.step",
            step=conversation.step,
            tool_calls=[c.name for c in message.tool_calls],
            input_tokens=response.usage.input_tokens,
            output_tokens=response.usage.output_tokens,
        )
        return message

    async def until_answer(
        self,
        *,
        until_step: int,
        may_go_on: Callable[[], Awaitable[bool]],
        between_steps: Callable[[], None] | None = None,
    ) -> Message | None:
        """Think and act until the model answers; ``None`` if steps, tokens or money run out.

        ``may_go_on`` is asked before every turn (it may wait for a person's approval).

        Also ``None`` when an interrupt stopped the turn (``interrupted`` is then set, and
        the conversation says so); an interrupt that arrives once the model has answered
        is dropped.
        """
        self.interrupted = False
        interrupts, hooks = self._interrupts, self._run.hooks
        try:
            while self._conversation.step < until_step and await may_go_on():
                interrupts.raise_if_requested()
                self._inbox.steer_into(self._conversation)
                reply = await hooks.think()
                if not reply.tool_calls:
                    interrupts.discard()
                    self._turn_finished()
                    return reply
                await hooks.act(reply.tool_calls)
                self._turn_finished()
                interrupts.raise_if_requested()
                if between_steps is not None:
                    between_steps()
        except AgentInterruptedError:
            interrupts.take()
            self.interrupted = True
        except BudgetExceededError as exc:
            self._log.warning("agent.budget_refused", reason=str(exc))
            self.refused = str(exc)
        return None

    async def _ask(self, request: ModelRequest, message_id: str) -> ModelResponse:
        """The model's answer to ``request``, from a fallback model if ``model`` is overloaded.

        Each model is its own activity (its model in the history and the audit); only
        an overloaded or unavailable endpoint moves the turn on, and only while a
        fallback is left (the last model keeps the retry policy's attempts).
        """
        chain = fallback_chain(self._config, request, FALLBACK_MODELS_PATCH)
        for index, attempt in enumerate(chain):
            summary = f"model turn {attempt.step}"
            if index:
                summary += f" (fallback {attempt.model})"
            try:
                return await self._attempt(attempt, message_id, summary)
            except ActivityError as exc:
                if index == len(chain) - 1 or not moves_on(exc):
                    self._fail(attempt, exc, message_id)
                self._log.warning(
                    "agent.model_fallback",
                    step=attempt.step,
                    model=attempt.model,
                    fallback=chain[index + 1].model,
                    error=str(exc.cause or exc),
                )
                self._record_model(attempt.step, chain[index + 1].model)
        raise AssertionError("unreachable: the last model's failure is raised")

    def _record_model(self, step: int, model: str) -> None:
        """Say in the run's versions that ``step`` ran on ``model`` (a fallback)."""
        conversation = self._conversation
        if conversation.versions:
            moved = conversation.versions[-1].model_copy(update={"step": step, "model": model})
            conversation.versions = record_versions(conversation.versions, moved)

    async def _attempt(self, request: ModelRequest, message_id: str, summary: str) -> ModelResponse:
        """One model activity for ``request``; an interrupt cancels it."""
        call = start_model(self._config, request, summary=summary)
        await workflow.wait_condition(lambda: call.done() or self._interrupts.requested())
        if not call.done():
            call.cancel()
            with contextlib.suppress(ActivityError, asyncio.CancelledError):
                await call
            self._conversation.status = "running"
            self._events.publish(
                TurnFinished(step=request.step, message_id=message_id, interrupted=True)
            )
            self._interrupts.raise_if_requested()
        return await call

    def _fail(self, request: ModelRequest, exc: ActivityError, message_id: str) -> NoReturn:
        """Raise what a failed model call means for the run."""
        reason = exc.cause or exc
        conversation = self._conversation
        if isinstance(reason, ApplicationError) and reason.type == BudgetExceededError.__name__:
            conversation.status = "running"
            self._events.publish(TurnFinished(step=request.step, message_id=message_id))
            raise BudgetExceededError(reason.message) from exc
        if (
            isinstance(reason, ApplicationError)
            and is_context_too_long(reason.type, reason.details)
            and workflow.patched(CONTEXT_COMPACTION_PATCH)
        ):
            conversation.status = "running"
            self._log.warning("agent.context_too_long", step=request.step, error=str(reason))
            raise ContextTooLongError(
                f"model call failed at step {request.step}: {reason}", retryable=False
            ) from exc
        conversation.status = "failed"
        self._log.error("agent.model_failed", step=request.step, error=str(reason))
        raise ModelError(
            f"model call failed at step {request.step}: {reason}", retryable=False
        ) from exc

    def _turn_finished(self) -> None:
        step = self._conversation.step
        self._events.publish(TurnFinished(step=step, message_id=self._events.message_id))
