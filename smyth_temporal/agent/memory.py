"""Long-term memory as the agent sees it: its scope, the memory activities, the built-ins.

Workflow code. ``AgentMemory`` runs the memory activities in the agent's tenant (from
its input, never from the model) and namespace (from its config); it also runs the
built-in ``remember`` and ``recall`` tools and renders memories for the prompt.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError

from smyth_temporal.agent._commands import call_memory
from smyth_temporal.agent.run import Run
from smyth_temporal.exceptions import ToolCallError, UserError
from smyth_temporal.tools import Tool, ToolExecutor, tool
from smyth_temporal.types.agent import AgentResult
from smyth_temporal.types.memory import (
    MEMORY_ACTIVITY_FORGET,
    MEMORY_ACTIVITY_RECALL,
    MEMORY_ACTIVITY_REMEMBER,
    MEMORY_ACTIVITY_SUPERSEDE,
    MEMORY_ACTIVITY_UNDO_RUN,
    ForgetRequest,
    ForgetResult,
    MemoryHit,
    MemoryRecord,
    MemoryScope,
    MemoryView,
    Provenance,
    RecallRequest,
    RememberRequest,
    SupersedeRequest,
    UndoRunRequest,
)
from smyth_temporal.types.messages import Message, ToolCall
from smyth_temporal.types.rewind import RewindNotice

__all__ = [
    "BUILTIN_MEMORY_TOOLS",
    "MEMORY_EXECUTOR",
    "RECALL_TOOL",
    "REMEMBER_TOOL",
    "AgentMemory",
    "episode_text",
    "format_hits",
    "memory_block",
]

_FORK_MEMORY_PATCH = "smyth-fork-memory"
"""Forks recorded before a fork had its own memory view read and wrote shared memory."""
_EPISODE_RESULT_CHARS = 300
_EPISODE_OUTPUT_CHARS = 2_000


async def remember(text: str, kind: str = "fact") -> str:
    """Store something worth knowing later (in this run and in future runs).

    Args:
        text: One self-contained statement, e.g. "ACME reports earnings on May 3".
        kind: fact, preference or note.
    """
    raise UserError("the built-in remember tool is run by the agent itself")


async def recall(query: str, k: int = 5) -> str:
    """Search long-term memory for what was learned or done before.

    Args:
        query: What to look for.
        k: How many memories to return (1-20).
    """
    raise UserError("the built-in recall tool is run by the agent itself")


MEMORY_EXECUTOR = "memory"
"""The executor of the built-in memory tools: ``AgentMemory.run_tool``."""

REMEMBER_TOOL: Tool = dataclasses.replace(tool(remember), executor=MEMORY_EXECUTOR)
RECALL_TOOL: Tool = dataclasses.replace(tool(recall), executor=MEMORY_EXECUTOR)
BUILTIN_MEMORY_TOOLS: tuple[Tool, ...] = (REMEMBER_TOOL, RECALL_TOOL)
"""Tools an agent with memory offers the model (unless ``memory_tools=False``)."""


def format_hits(hits: Sequence[MemoryHit]) -> str:
    """One line per memory: id, kind, date, text."""
    return "\n".join(
        f"- [{h.record.id}] ({h.record.kind}, {h.record.created_at.date().isoformat()}) "
        f"{h.record.text}"
        for h in hits
    )


def memory_block(hits: Sequence[MemoryHit]) -> Message:
    """The recalled memories as a clearly delimited system message."""
    return Message.system(
        "Relevant memories from earlier work (refer to them by id when you rely on them):\n"
        f"<memories>\n{format_hits(hits)}\n</memories>"
    )


def episode_text(
    task: str, status: str, steps: int, output: str, messages: Sequence[Message]
) -> str:
    """What an episode record says about a finished run: task, outcome, key tool results."""
    results = [
        f"- {m.name}: {(m.content or '')[:_EPISODE_RESULT_CHARS]}"
        for m in messages
        if m.role == "tool" and m.name not in ("remember", "recall")
    ]
    lines = [
        f"Task: {task}",
        f"Outcome ({status}, {steps} steps): {output[:_EPISODE_OUTPUT_CHARS]}",
    ]
    if results:
        lines += ["Key tool results:", *results[-10:]]
    return "\n".join(lines)


class AgentMemory:
    """The agent's long-term memory: the tenant from its input, the namespace from config.

    Args:
        run: The agent's run (config; conversation: the step of each memory's
            provenance; input: the tenant, the task; hooks: the built-in tools and
            ``load`` go through the agent's ``recall`` and ``remember``).

    Added in 0.3.0. Changed in 0.9.0: takes the ``Run``.
    """

    def __init__(self, run: Run) -> None:
        self._run = run
        self._config = run.config
        self._conversation = run.conversation
        self._undoing = False

    @property
    def enabled(self) -> bool:
        """Whether the agent has memory (``config.memory_namespace`` is set)."""
        return self._config.memory_namespace is not None

    @property
    def scope(self) -> MemoryScope:
        """The tenant (from the input) and namespace (from the config) of memory."""
        namespace = self._config.memory_namespace
        if namespace is None:
            raise UserError("the agent has no memory: set AgentConfig.memory_namespace")
        return self.scope_for(namespace)

    def scope_for(self, namespace: str) -> MemoryScope:
        """The agent's tenant with another namespace (the tenant never changes)."""
        return MemoryScope(tenant=self._run.tenant, namespace=namespace)

    async def recall(
        self,
        query: str,
        *,
        k: int | None = None,
        kinds: Sequence[str] | None = None,
        include_expired: bool = False,
        include_superseded: bool = False,
    ) -> list[MemoryHit]:
        """Search memory for ``query``; see ``AgentWorkflow.recall``.

        Right after a rewind, it waits until the abandoned steps' memories are gone.
        """
        if self._undoing:  # never set on a run without a rewind: old histories unchanged
            await workflow.wait_condition(lambda: not self._undoing)
        request = RecallRequest(
            scope=self.scope,
            query=query,
            k=k or self._config.memory_recall_k or 5,
            kinds=list(kinds) if kinds else None,
            include_expired=include_expired,
            include_superseded=include_superseded,
            now=workflow.now(),
            view=self.view(),
        )
        hits: list[MemoryHit] = await call_memory(
            self._config, MEMORY_ACTIVITY_RECALL, request, list[MemoryHit], "recall"
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
        """Store memories; see ``AgentWorkflow.remember``."""
        now = workflow.now()
        request = RememberRequest(
            scope=self.scope_for(namespace) if namespace else self.scope,
            texts=[text] if isinstance(text, str) else list(text),
            kind=kind,
            provenance=self._provenance(),
            created_at=now,
            expires_at=now + expires_in if expires_in else None,
            metadata=dict(metadata or {}),
        )
        records: list[MemoryRecord] = await call_memory(
            self._config, MEMORY_ACTIVITY_REMEMBER, request, list[MemoryRecord], f"remember {kind}"
        )
        return records

    async def forget(self, ids: Sequence[str]) -> int:
        """Delete memories of the agent's scope by id; returns how many.

        A fork deletes only memories it wrote itself (an inherited id counts none).
        """
        request = ForgetRequest(scope=self.scope, ids=list(ids), view=self.view())
        result: ForgetResult = await call_memory(
            self._config, MEMORY_ACTIVITY_FORGET, request, ForgetResult, "forget"
        )
        return result.count

    async def supersede(self, old_id: str, text: str) -> MemoryRecord:
        """Replace memory ``old_id`` with a newer text (the old one is kept for audit).

        A fork supersedes only memories it wrote itself: an inherited one is not found.
        """
        request = SupersedeRequest(
            scope=self.scope,
            old_id=old_id,
            text=text,
            provenance=self._provenance(),
            created_at=workflow.now(),
            view=self.view(),
        )
        record: MemoryRecord = await call_memory(
            self._config, MEMORY_ACTIVITY_SUPERSEDE, request, MemoryRecord, "supersede"
        )
        return record

    async def undo_rewound(self, notice: RewindNotice) -> int:
        """Remove the memories the abandoned steps wrote (after ``notice.to_step``).

        Every scope of the tenant, written by the runs ``notice.memory_runs`` names
        (the client read them from the history it abandoned); returns how many.
        """
        if not notice.memory_runs:
            return 0
        self._undoing = True
        removed = 0
        try:
            for run_id in notice.memory_runs:
                request = UndoRunRequest(
                    tenant=self._run.tenant,
                    workflow_id=workflow.info().workflow_id,
                    run_id=run_id,
                    after_step=notice.to_step,
                )
                result: ForgetResult = await call_memory(
                    self._config,
                    MEMORY_ACTIVITY_UNDO_RUN,
                    request,
                    ForgetResult,
                    f"forget what steps after {notice.to_step} remembered",
                )
                removed += result.count
        finally:
            self._undoing = False
        return removed

    async def load(self) -> list[MemoryHit]:
        """Recall what is relevant to the task and put it into the prompt before the task.

        Through the agent's (overridable) ``recall``.
        """
        if not self.enabled or self._config.memory_recall_k <= 0:
            return []
        hits = await self._run.hooks.recall(self._run.input.prompt)
        if hits:
            messages = self._conversation.messages
            task = max(i for i, m in enumerate(messages) if m.role == "user")
            messages.insert(task, memory_block(hits))
        return hits

    async def record_episode(self, result: AgentResult) -> None:
        """Store an ``episode`` memory of the run (task, outcome, key tool results)."""
        if not self.enabled or not self._config.memory_episodes:
            return
        text = episode_text(
            self._run.input.prompt,
            result.status,
            result.steps,
            result.output,
            self._conversation.messages,
        )
        await self.remember(text, kind="episode")

    def tools(self) -> tuple[Tool, ...]:
        """The built-in tools the model is offered (none without memory or tools)."""
        return BUILTIN_MEMORY_TOOLS if self.enabled and self._config.memory_tools else ()

    def executor(self) -> ToolExecutor:
        """The executor of the built-in tools, through the agent's ``recall``/``remember``."""
        hooks = self._run.hooks

        async def run_tool(spec: Tool, call: ToolCall, arguments: dict[str, Any]) -> str:
            try:
                if spec.name == REMEMBER_TOOL.name:
                    [record] = await hooks.remember(arguments["text"], kind=arguments["kind"])
                    return f"Remembered as [{record.id}]."
                hits = await hooks.recall(arguments["query"], k=max(1, min(arguments["k"], 20)))
                return format_hits(hits) or "No memories match."
            except ActivityError as exc:
                raise ToolCallError(f"memory failed: {exc.cause or exc}") from exc

        return run_tool

    def view(self) -> MemoryView | None:
        """The run's memory view: ``None`` for an ordinary run, the lineage for a fork.

        A fork reads what its ancestors had written up to the step it branched off and
        writes to its own branch (its workflow id), which no run but its own forks sees.
        """
        origin = self._run.input.fork_of
        # Only forks take the patch: ordinary histories stay free of the marker.
        if origin is None or not workflow.patched(_FORK_MEMORY_PATCH):
            return None
        return MemoryView.of_fork(workflow.info().workflow_id, origin)

    def _provenance(self) -> Provenance:
        info = workflow.info()
        view = self.view()
        return Provenance(
            agent=info.workflow_type,
            workflow_id=info.workflow_id,
            run_id=info.run_id,
            step=self._conversation.step,
            branch=view.branch if view else "",
        )
