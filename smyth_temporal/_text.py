"""Short plain-text renderings every interface shares (CLI, demo, client errors).

One place, so ``smyth`` prints an error, a usage summary or a cut-down line the same
way whichever command or scenario produced it.
"""

from __future__ import annotations

from smyth_temporal.types.messages import Usage

__all__ = ["error_line", "format_usage", "one_line", "plural"]


def one_line(text: object, width: int | None = None) -> str:
    """``text`` on one line (whitespace collapsed), cut to ``width`` with an ellipsis."""
    flat = " ".join(str(text).split())
    if width is not None and len(flat) > width:
        return flat[: width - 1] + "…"
    return flat


def error_line(message: object) -> str:
    """The one line ``smyth`` prints for an error, argparse style."""
    return f"smyth: error: {one_line(message)}"


def plural(count: int, noun: str) -> str:
    """``1 call``, ``2 calls``."""
    return f"{count} {noun}" + ("" if count == 1 else "s")


def format_usage(usage: Usage) -> str:
    """``2 requests, 40 tokens (20 in, 20 out), 1 tool call``."""
    requests = plural(usage.requests, "request")
    calls = plural(usage.tool_calls, "tool call")
    return (
        f"{requests}, {usage.total_tokens} tokens "
        f"({usage.input_tokens} in, {usage.output_tokens} out), {calls}"
    )
