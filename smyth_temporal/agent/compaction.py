"""Compaction: archive older turns to memory, then replace them by a summary.

Workflow code. The policy (what to compact) is pure and lives in
``smyth_temporal.context``; this module carries it out with the memory and model
activities and keeps the lineage of every summary.
"""

from __future__ import annotations

from collections.abc import Sequence

from temporalio import workflow
from temporalio.exceptions import ActivityError

from smyth_temporal._telemetry import compacted
from smyth_temporal.agent._commands import call_model
from smyth_temporal.agent.fallback import SUMMARY_FALLBACK_PATCH, fallback_chain, moves_on
from smyth_temporal.agent.run import Run
from smyth_temporal.context import (
    DEFAULT_SUMMARY_INSTRUCTIONS,
    CompactionPlan,
    fallback_summary,
    plan_compaction,
    summary_message,
    transcript_chunks,
)
from smyth_temporal.types.compaction import Compaction
from smyth_temporal.types.events import CompactionDone
from smyth_temporal.types.memory import MemoryRecord
from smyth_temporal.types.messages import Message
from smyth_temporal.types.model import ModelRequest

__all__ = ["CARRIED_COMPACTIONS", "Compactor"]

CARRIED_COMPACTIONS = 50
"""Compaction records kept in the agent's state (the lineage of recent summaries)."""


class Compactor:
    """Carries out compactions and keeps their lineage.

    Args:
        run: The agent's run (config: budget, summarizer, archive namespace; the
            conversation to compact; hooks: the agent's ``plan_compaction``,
            ``remember`` (the archive) and ``summary_prompt``).

    Added in 0.3.0. Changed in 0.9.0: takes the ``Run``.
    """

    def __init__(self, run: Run):
        self.records: list[Compaction] = []
        """The lineage of recent summaries (the last ``CARRIED_COMPACTIONS``)."""
        self.count = 0
        """Compactions so far (counted across continue-as-new; names the next id)."""
        self._run = run
        self._config = run.config
        self._conversation = run.conversation
        self._log = run.log

    def default_plan(self, messages: Sequence[Message]) -> CompactionPlan | None:
        """The default policy: compact beyond ``config.context_budget`` (``None``: no budget).

        Keeps the system prompt, the task and the most recent ``compaction_keep_ratio``
        verbatim (see ``AgentWorkflow.plan_compaction``).
        """
        config = self._config
        if config.context_budget is None:
            return None
        return plan_compaction(
            messages,
            budget=config.context_budget,
            keep_recent=int(config.context_budget * config.compaction_keep_ratio),
            count=config.token_counter,
        )

    def default_summary_prompt(self, span: Sequence[Message]) -> list[Message]:
        """The default instructions and ``span``'s transcript, for the summarizer."""
        transcript = "\n\n".join(transcript_chunks(span, workflow.info().workflow_id))
        return [Message.system(DEFAULT_SUMMARY_INSTRUCTIONS), Message.user(transcript)]

    def forced_plan(self, messages: Sequence[Message]) -> CompactionPlan | None:
        """What to compact when the model refused the prompt as too long for its window.

        The prompt may be under ``context_budget`` (the budget is the agent's guess at
        the window), so the plan keeps ``compaction_keep_ratio`` of the prompt as it
        is now, and of the budget if that is smaller. ``None``: nothing to compact.
        """
        config = self._config
        tokens = config.token_counter(messages)
        ceiling = min(tokens, config.context_budget or tokens)
        return plan_compaction(
            messages,
            budget=0,
            keep_recent=int(ceiling * config.compaction_keep_ratio),
            count=config.token_counter,
        )

    async def compact(self, *, force: bool = False) -> Compaction | None:
        """Archive, then summarize, what the agent plans; see ``AgentWorkflow.compact``.

        The plan, the archive and the summary prompt come from the agent's hooks
        (``plan_compaction``, ``remember``, ``summary_prompt``).

        Args:
            force: The model refused the prompt as too long: compact even when the
                agent's plan would not (``forced_plan``), and fall back to a
                placeholder rather than defer when the summary fails. Added in 0.10.0.
        """
        hooks = self._run.hooks
        plan = hooks.plan_compaction(self._conversation.messages)
        if plan is None and force:
            plan = self.forced_plan(self._conversation.messages)
        if plan is None:
            return None
        config = self._config
        messages = self._conversation.messages
        span = messages[plan.start : plan.end]
        tokens_before = config.token_counter(messages)
        compaction_id = f"cmp-{self.count + 1}"
        try:
            archived = await hooks.remember(
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
            text = await self._summarize(hooks.summary_prompt(span), compaction_id)
        except ActivityError as exc:
            error = str(exc.cause or exc)
            hard_limit = (config.context_budget or tokens_before) * config.context_hard_limit
            if tokens_before <= hard_limit and not force:
                self._log.warning("compaction.deferred", error=error, tokens=tokens_before)
                return None
            text = ""
        compaction = self._record(span, compaction_id, archived, tokens_before, text, error)
        summary = summary_message(text if text.strip() else fallback_summary(span), compaction)
        messages[plan.start : plan.end] = [summary]
        compaction.tokens_after = config.token_counter(messages)
        self.count += 1
        self.records = [*self.records, compaction][-CARRIED_COMPACTIONS:]
        self._log.info(
            "compaction.done",
            compaction=compaction.id,
            messages=len(span),
            tokens_before=tokens_before,
            tokens_after=compaction.tokens_after,
            fallback=compaction.fallback,
        )
        compacted(self._run.tenant, fallback=compaction.fallback)
        self._conversation.publish(CompactionDone(compaction=compaction))
        return compaction

    def restore(self, records: Sequence[Compaction], count: int) -> None:
        """Take over the lineage a previous run carried."""
        self.records = list(records)
        self.count = count

    async def _summarize(self, prompt: list[Message], compaction_id: str) -> str:
        """The summary's text, from a fallback model if the summarizer is overloaded.

        Raises:
            ActivityError: The last model's call failed, or one failed for a reason
                another model would not fix.
        """
        config = self._config
        request = ModelRequest(
            model=config.summary_model or config.model,
            messages=prompt,
            settings=config.model_settings,
            agent=workflow.info().workflow_type,
            step=self._conversation.step,
            purpose="summary",
            tenant=self._run.tenant,
            replay_from=self._run.replay_from,
        )
        chain = fallback_chain(config, request, SUMMARY_FALLBACK_PATCH)
        for index, attempt in enumerate(chain):
            summary = f"summary {compaction_id}"
            if index:
                summary += f" (fallback {attempt.model})"
            try:
                response = await call_model(config, attempt, summary=summary)
            except ActivityError as exc:
                if index == len(chain) - 1 or not moves_on(exc):
                    raise
                self._log.warning(
                    "compaction.model_fallback",
                    compaction=compaction_id,
                    model=attempt.model,
                    fallback=chain[index + 1].model,
                    error=str(exc.cause or exc),
                )
                continue
            self._conversation.count(response.usage)
            return response.message.content or ""
        raise AssertionError("unreachable: the last model's failure is raised")

    def _record(
        self,
        span: Sequence[Message],
        compaction_id: str,
        archived: Sequence[MemoryRecord],
        tokens_before: int,
        text: str,
        error: str | None,
    ) -> Compaction:
        steps = self._covered_steps(span)
        return Compaction(
            id=compaction_id,
            first_step=min(steps) if steps else None,
            last_step=max(steps) if steps else None,
            message_count=len(span),
            folded=[m.compaction for m in span if m.compaction],
            namespace=self._config.archive_namespace,
            archived=[r.id for r in archived],
            at_step=self._conversation.step,
            created_at=workflow.now(),
            tokens_before=tokens_before,
            tokens_after=0,
            fallback=not text.strip(),
            error=error,
        )

    def _covered_steps(self, span: Sequence[Message]) -> list[int]:
        records = {c.id: c for c in self.records}
        steps: list[int] = []
        for message in span:
            if message.compaction and message.compaction in records:
                record = records[message.compaction]
                steps += [s for s in (record.first_step, record.last_step) if s is not None]
            elif message.step is not None:
                steps.append(message.step)
        return steps
