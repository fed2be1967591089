"""The run lifecycle: when to hand over to a fresh run, what it carries, what it shows.

Workflow code. A weeks-long agent lives in a chain of runs under one workflow id:
``Lifecycle`` decides when to continue as new (Temporal's suggestion or the agent's
step budget per run), only at a safe point (no handler running), and builds the
``AgentCheckpoint`` the next run restores from, before any handler of its runs. On
versioned workers (``smyth worker --deployment``) the next run starts on the
deployment's current version: continue-as-new is where a pinned agent moves to new code.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, NoReturn

from temporalio import workflow

from smyth_temporal._telemetry import continued_as_new
from smyth_temporal.agent.approvals import Approvals
from smyth_temporal.agent.bounds import carried_extension
from smyth_temporal.agent.compaction import Compactor
from smyth_temporal.agent.delegation import Delegation
from smyth_temporal.agent.run import Run
from smyth_temporal.agent.sessions import Inbox
from smyth_temporal.types.agent import (
    AgentCheckpoint,
    AgentInput,
    AgentResult,
    AgentState,
    AgentStatus,
)
from smyth_temporal.types.events import ContinuedAsNew, RunFinished
from smyth_temporal.types.messages import Message

__all__ = ["CARRIED_APPROVALS", "MAX_OUTPUT_CHARS", "Lifecycle"]

MAX_OUTPUT_CHARS = 200_000
"""The most characters of final output an ``AgentResult`` carries (a workflow result
over Temporal's 2 MiB payload limit leaves the run stuck)."""

CARRIED_APPROVALS = 50
"""Decided approval requests carried into the next run at continue-as-new (pending ones
are always carried); older decisions stay in the history of the run that made them."""


class Lifecycle:
    """Checkpoints, restores and continues the agent's run.

    Args:
        run: The agent's run (config: ``continue_as_new_after_steps``; the event
            stream, carried across continue-as-new; hooks: the agent's ``data``, read
            when checkpointing).
        approvals, compactor, inbox, delegation: The components whose state a
            checkpoint carries besides the conversation.

    Added in 0.3.0. Changed in 0.9.0: takes the ``Run``.
    """

    def __init__(
        self,
        run: Run,
        approvals: Approvals,
        compactor: Compactor,
        inbox: Inbox,
        delegation: Delegation,
    ) -> None:
        self.generation = 1
        """Which run of the chain this is (the first is 1)."""
        self.run_start_step = 0
        """The step count this run started at."""
        self.restored = False
        """Whether this run restored a checkpoint (in its constructor or ``begin``)."""
        self._run = run
        self._config = run.config
        self._log = run.log
        self._conversation = run.conversation
        self._approvals = approvals
        self._compactor = compactor
        self._inbox = inbox
        self._delegation = delegation
        self._events = run.events
        self._extension = 0.0  # approved over-budget extensions no request carries

    def begin(self, input: AgentInput) -> bool:
        """Start the conversation, or resume from ``input.checkpoint``; see ``AgentWorkflow.begin``.

        Added in 0.9.0 (before, in ``AgentWorkflow.begin``).
        """
        run, conversation = self._run, self._conversation
        run.started = input
        self._events.run_started(input)
        if input.checkpoint is not None:
            if not self.restored:  # a class with its own __init__ restores here
                run.hooks.data = self.restore(input.checkpoint)
            if self._approvals.pending:
                self._approvals.publish()
            return True
        if self._config.instructions:
            conversation.add(Message.system(self._config.instructions))
        if input.prompt and input.mode == "task":  # a session answers it as a message
            conversation.add(Message.user(input.prompt))
        self._log.info("agent.started", tenant=input.tenant, session_id=input.session_id)
        return False

    def finish(self, output: str, status: AgentStatus, *, data: Any = None) -> AgentResult:
        """End the run: record the output (bounded), build the result; see ``AgentWorkflow.finish``.

        Added in 0.9.0 (before, in ``AgentWorkflow.finish``).
        """
        if len(output) > MAX_OUTPUT_CHARS:
            output = output[:MAX_OUTPUT_CHARS] + "\n[output truncated]"
        conversation = self._conversation
        conversation.output, conversation.status = output, status
        if self._approvals.requests:
            self._approvals.publish()
        self._log.info("agent.finished", status=status, steps=conversation.step)
        self._events.publish(RunFinished(status=status, output=output))
        steps, usage = conversation.step, conversation.usage
        return AgentResult(output=output, status=status, steps=steps, usage=usage, data=data)

    async def sleep(self, duration: timedelta, *, reason: str | None = None) -> None:
        """Wait on a durable timer with status ``sleeping``; see ``AgentWorkflow.sleep``.

        Added in 0.9.0 (before, in ``AgentWorkflow.sleep``).
        """
        conversation = self._conversation
        previous, conversation.status = conversation.status, "sleeping"
        self._log.info("agent.sleeping", seconds=duration.total_seconds())
        await workflow.sleep(duration, summary=reason or f"sleep {duration}")
        conversation.status = previous

    def should_continue_as_new(self) -> bool:
        """Whether this run has grown enough to hand over to a fresh one."""
        limit = self._config.continue_as_new_after_steps
        if limit is not None and self._conversation.step - self.run_start_step >= limit:
            return True
        return workflow.info().is_continue_as_new_suggested()

    def safe_to_continue(self) -> bool:
        """Whether continue-as-new is due and no handler is running."""
        if not self.should_continue_as_new():
            return False
        if not workflow.all_handlers_finished():
            # Subscribers' polls are handlers that wait for events: release them, so
            # the next safe point finds none (unless another handler still runs).
            self._events.release_subscribers()
            self._log.info("agent.continue_as_new_deferred", step=self._conversation.step)
            return False
        return True

    def continue_as_new(self, input: AgentInput) -> NoReturn:
        """Continue as new now, carrying ``checkpoint()`` into the next run."""
        checkpoint = self.checkpoint()
        self._events.publish(ContinuedAsNew(generation=checkpoint.generation))
        checkpoint.stream = self._events.handover()
        self._log.info(
            "agent.continue_as_new",
            step=self._conversation.step,
            generation=checkpoint.generation,
            messages=len(checkpoint.messages),
        )
        continued_as_new()
        # On versioned workers a run is pinned to the build that started it; the next
        # run starts on the deployment's current version instead, so the checkpoint is
        # where a weeks-long agent moves to new code. (No effect without versioning.)
        workflow.continue_as_new(
            input.model_copy(update={"checkpoint": checkpoint}),
            initial_versioning_behavior=workflow.ContinueAsNewVersioningBehavior.AUTO_UPGRADE,
        )

    def checkpoint(self) -> AgentCheckpoint:
        """The state the next run starts from (see ``AgentCheckpoint``)."""
        conversation, approvals = self._conversation, self._approvals
        carried = approvals.carried(CARRIED_APPROVALS)
        extension = carried_extension(self._extension, approvals.requests.values(), carried)
        return AgentCheckpoint(
            messages=conversation.messages,
            step=conversation.step,
            usage=conversation.usage,
            approvals=carried,
            over_budget_extension=extension,
            compactions=self._compactor.records,
            compaction_count=self._compactor.count,
            generation=self.generation + 1,
            data=self._run.hooks.data,
            session_messages=self._inbox.received,
            delegations=self._delegation.count,
            versions=conversation.versions,
            rewind=self._run.rewind,
        )

    def snapshot(self, input: AgentInput | None) -> AgentState:
        """The agent's state as the ``state`` query answers it."""
        info, conversation = workflow.info(), self._conversation
        recent = self._config.state_messages
        return AgentState(
            agent=info.workflow_type,
            workflow_id=info.workflow_id,
            run_id=info.run_id,
            status=conversation.status,
            step=conversation.step,
            max_steps=self._config.max_steps,
            tenant=input.tenant if input else "default",
            session_id=input.session_id if input else None,
            messages=conversation.messages[-recent:] if recent > 0 else [],
            message_count=len(conversation.messages),
            pending_tool_calls=list(conversation.pending.values()),
            usage=conversation.usage,
            output=conversation.output,
            approvals=list(self._approvals.requests.values()),
            context_tokens=self._config.token_counter(conversation.messages),
            compactions=self._compactor.records,
            generation=self.generation,
            data=self._run.hooks.data,
            versions=conversation.versions,
            fork_of=input.fork_of if input else None,
        )

    def restore(self, checkpoint: AgentCheckpoint) -> dict[str, Any]:
        """Restore every component from ``checkpoint``; returns the agent's ``data``."""
        conversation = self._conversation
        conversation.messages = list(checkpoint.messages)
        conversation.step = self.run_start_step = checkpoint.step
        conversation.usage = checkpoint.usage
        conversation.versions = list(checkpoint.versions)
        self._approvals.restore(checkpoint.approvals)
        self._extension = checkpoint.over_budget_extension
        self._compactor.restore(checkpoint.compactions, checkpoint.compaction_count)
        self.generation = checkpoint.generation
        self._inbox.received = checkpoint.session_messages
        self._delegation.count = checkpoint.delegations
        self._run.rewind = checkpoint.rewind
        self.restored = True
        self._log.info("agent.resumed", step=conversation.step, generation=self.generation)
        return dict(checkpoint.data)
