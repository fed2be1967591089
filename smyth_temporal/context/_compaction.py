"""Compaction policy: which turns become a summary, and the lineage each summary keeps."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from smyth_temporal.context._tokens import TokenCounter
from smyth_temporal.types.compaction import Compaction
from smyth_temporal.types.messages import Message

__all__ = [
    "DEFAULT_SUMMARY_INSTRUCTIONS",
    "TRANSCRIPT_CHUNK_CHARS",
    "CompactionPlan",
    "fallback_summary",
    "pinned_prefix",
    "plan_compaction",
    "summary_message",
    "transcript_chunks",
]

DEFAULT_SUMMARY_INSTRUCTIONS = """\
You compact the working memory of an autonomous agent. Summarize the conversation \
excerpt below for the agent itself, so that it can carry on without the original \
messages. Keep: the goals and constraints it was given, decisions taken and why, \
facts learned from tools (with exact figures, names, ids and dates), actions already \
performed (so they are not repeated), approvals granted or refused, open questions \
and next steps. Drop pleasantries and repetition. If the excerpt starts with an \
earlier summary, fold it in. Write plain text, at most a few hundred words."""
"""The summarizer's instructions; override ``AgentWorkflow.summary_prompt`` to change them."""

TRANSCRIPT_CHUNK_CHARS = 4_000
"""The most characters one archived transcript memory holds (longer messages are split),
so every chunk fits an embedding model's input."""


@dataclass(frozen=True)
class CompactionPlan:
    """Replace ``messages[start:end]`` by one summary message.

    Added in 0.2.0.
    """

    start: int
    """The first message to compact (everything before it is pinned)."""
    end: int
    """One past the last message to compact; from here on messages stay verbatim."""


def pinned_prefix(messages: Sequence[Message]) -> int:
    """How many leading messages are never compacted.

    The system prompt (and recalled-memory blocks) and the task, the first user
    message, define the agent's job; summarizing them away would change it.
    """
    index = 0
    while (
        index < len(messages)
        and messages[index].role == "system"
        and messages[index].compaction is None
    ):
        index += 1
    if index < len(messages) and messages[index].role == "user":
        index += 1
    return index


def plan_compaction(
    messages: Sequence[Message],
    *,
    budget: int,
    keep_recent: int,
    count: TokenCounter,
) -> CompactionPlan | None:
    """Decide what to compact so the prompt fits ``budget`` again.

    The most recent messages that fit in ``keep_recent`` tokens stay verbatim (at
    least the last turn, whatever its size); everything between the pinned prefix
    and them is compacted. The cut never falls on a tool result, so a tool call and
    its results are always kept or compacted together.

    Args:
        messages: The conversation.
        budget: The prompt's token budget.
        keep_recent: Tokens of recent conversation to keep verbatim.
        count: The token counter.

    Returns:
        The plan, or ``None`` when the prompt fits or nothing can be compacted.

    Added in 0.2.0.
    """
    if count(messages) <= budget:
        return None
    start = pinned_prefix(messages)
    sizes = [count([m]) for m in messages]
    cut: int | None = None
    kept = 0
    for index in range(len(messages) - 1, start - 1, -1):
        kept += sizes[index]
        if messages[index].role == "tool":
            continue  # a result stays with the call that asked for it
        if kept > keep_recent and cut is not None:
            break
        cut = index
    if cut is None or cut - start < 2:
        return None  # one message is not worth a summary of its own
    return CompactionPlan(start=start, end=cut)


def transcript_chunks(messages: Sequence[Message], workflow_id: str) -> list[str]:
    """The messages as self-contained texts for the transcript archive.

    Each names the workflow and step, so the same words said in another run or step
    stay a memory of their own (memory ids derive from the text).
    """
    chunks: list[str] = []
    for message in messages:
        speaker = f"tool {message.name}" if message.role == "tool" else message.role
        head = f"[{workflow_id} step {message.step if message.step is not None else 0}] {speaker}"
        body = message.content or ""
        if message.tool_calls:
            calls = "; ".join(f"{c.name}({c.arguments})" for c in message.tool_calls)
            body = f"{body}\ncalls: {calls}".strip()
        parts = [
            body[i : i + TRANSCRIPT_CHUNK_CHARS]
            for i in range(0, max(len(body), 1), TRANSCRIPT_CHUNK_CHARS)
        ]
        for number, part in enumerate(parts, start=1):
            label = f" (part {number}/{len(parts)})" if len(parts) > 1 else ""
            chunks.append(f"{head}{label}: {part}")
    return chunks


def summary_message(text: str, compaction: Compaction) -> Message:
    """The system message that stands for the compacted turns, with their lineage."""
    steps = (
        f"steps {compaction.first_step}-{compaction.last_step}"
        if compaction.first_step is not None
        else "the opening messages"
    )
    return Message(
        role="system",
        content=(
            f"Summary of earlier conversation ({steps}, {compaction.message_count} "
            f"messages, compaction {compaction.id}; the original messages are archived "
            f"in long-term memory, namespace '{compaction.namespace}', kind 'transcript'):"
            f"\n{text}"
        ),
        compaction=compaction.id,
    )


def fallback_summary(span: Sequence[Message]) -> str:
    """What stands in for a summary the summarizer could not write.

    The originals are archived, so nothing is lost; the agent is told where they are,
    and keeps its latest assistant texts from the span so it does not lose its bearings.
    """
    said = [m.content for m in span if m.role == "assistant" and m.content][-3:]
    lines = ["(No summary could be written; recall the transcript for details.)"]
    lines += [f"- earlier you wrote: {text[:500]}" for text in said]
    return "\n".join(lines)
