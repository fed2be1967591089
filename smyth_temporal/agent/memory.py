"""Memory as the agent sees it (workflow side, pure): built-in tools and prompt blocks."""

from __future__ import annotations

from collections.abc import Sequence

from smyth_temporal.exceptions import UserError
from smyth_temporal.tools._tool import Tool, tool
from smyth_temporal.types.memory import MemoryHit
from smyth_temporal.types.messages import Message

__all__ = [
    "BUILTIN_MEMORY_TOOLS",
    "RECALL_TOOL",
    "REMEMBER_TOOL",
    "episode_text",
    "format_hits",
    "memory_block",
]

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


REMEMBER_TOOL: Tool = tool(remember)
RECALL_TOOL: Tool = tool(recall)
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
