"""The context engine: what the model sees next, as pure functions over the conversation.

Workflow code: deterministic, no I/O. It estimates how many tokens a prompt takes,
decides when and what to compact (older turns become a summary; the most recent stay
verbatim; a tool call never leaves its result behind), renders compacted turns as
transcript texts for long-term memory, and records each compaction's lineage.
"""

from smyth_temporal.context._compaction import (
    DEFAULT_SUMMARY_INSTRUCTIONS,
    CompactionPlan,
    fallback_summary,
    pinned_prefix,
    plan_compaction,
    summary_message,
    transcript_chunks,
)
from smyth_temporal.context._tokens import TokenCounter, estimate_tokens

__all__ = [
    "DEFAULT_SUMMARY_INSTRUCTIONS",
    "CompactionPlan",
    "TokenCounter",
    "estimate_tokens",
    "fallback_summary",
    "pinned_prefix",
    "plan_compaction",
    "summary_message",
    "transcript_chunks",
]
