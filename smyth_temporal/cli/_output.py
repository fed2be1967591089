"""How the CLI shows things: one-line errors, progress lines, state summaries.

Results go to stdout (so ``ID=$(smyth run ...)`` works); progress and errors go to
stderr.
"""

from __future__ import annotations

import sys
from typing import TextIO

from smyth_temporal.agent.messages import Message, ToolCall, Usage
from smyth_temporal.agent.types import AgentState

__all__ = [
    "error_line",
    "format_state",
    "format_usage",
    "last_tool",
    "one_line",
    "progress_line",
    "status",
]

_CONTENT_WIDTH = 160
_ARGUMENTS_WIDTH = 80


def one_line(text: object, width: int | None = None) -> str:
    """``text`` on one line (whitespace collapsed), cut to ``width`` with an ellipsis."""
    flat = " ".join(str(text).split())
    if width is not None and len(flat) > width:
        return flat[: width - 1] + "…"
    return flat


def error_line(message: object) -> str:
    """The one line the CLI prints for an error, argparse style."""
    return f"smyth: error: {one_line(message)}"


def status(text: str, *, file: TextIO | None = None) -> None:
    """Print a progress or status line to stderr (flushed, so pipes see it at once)."""
    print(text, file=file or sys.stderr, flush=True)


def format_usage(usage: Usage) -> str:
    """``2 requests, 40 tokens (20 in, 20 out), 1 tool call``."""
    requests = _plural(usage.requests, "request")
    calls = _plural(usage.tool_calls, "tool call")
    return (
        f"{requests}, {usage.total_tokens} tokens "
        f"({usage.input_tokens} in, {usage.output_tokens} out), {calls}"
    )


def last_tool(state: AgentState) -> str | None:
    """The tool the agent runs now, or else the last one it called."""
    if state.pending_tool_calls:
        return ", ".join(call.name for call in state.pending_tool_calls)
    for message in reversed(state.messages):
        if message.tool_calls:
            return ", ".join(call.name for call in message.tool_calls)
        if message.role == "tool" and message.name:
            return message.name
    return None


def progress_line(state: AgentState) -> str:
    """One line of progress: ``step 2/8  acting  (tool: get_quote)``."""
    line = f"step {state.step}/{state.max_steps}  {state.status}"
    tool = last_tool(state)
    if tool:
        line += f"  (tool: {tool})"
    return line


def format_state(state: AgentState) -> str:
    """A human summary of an agent's state, several lines."""
    session = f", session {state.session_id}" if state.session_id else ""
    lines = [
        f"{state.workflow_id}  (agent {state.agent}, tenant {state.tenant}{session})",
        f"status   {state.status}, step {state.step}/{state.max_steps}",
        f"usage    {format_usage(state.usage)}",
    ]
    if state.pending_tool_calls:
        lines.append("pending  " + "; ".join(_call(c) for c in state.pending_tool_calls))
    else:
        lines.append("pending  no tool calls")
    if state.output is not None:
        lines.append(f"output   {one_line(state.output, _CONTENT_WIDTH)}")
    if state.messages:
        lines.append(f"last messages ({len(state.messages)} of {state.message_count}):")
        lines.extend(f"  {_message(m)}" for m in state.messages)
    return "\n".join(lines)


def _message(message: Message) -> str:
    if message.role == "tool":
        text = f"{message.name or 'tool'}: {one_line(message.content or '', _CONTENT_WIDTH)}"
    elif message.tool_calls:
        calls = "; ".join(_call(c) for c in message.tool_calls)
        prefix = f"{one_line(message.content, _CONTENT_WIDTH)} " if message.content else ""
        text = f"{prefix}-> {calls}"
    else:
        text = one_line(message.content or "", _CONTENT_WIDTH)
    return f"{message.role:<10} {text}"


def _call(call: ToolCall) -> str:
    return f"{call.name}({one_line(call.arguments, _ARGUMENTS_WIDTH)})"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")
