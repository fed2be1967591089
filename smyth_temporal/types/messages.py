"""Conversation data: messages, tool calls and token usage.

These pydantic models cross every boundary (workflow state, activity payloads,
queries), so they stay plain data in the OpenAI chat-completions shape that every
OpenAI-compatible endpoint understands.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

__all__ = ["Message", "Role", "ToolCall", "Usage"]

Role = Literal["system", "user", "assistant", "tool"]


class ToolCall(BaseModel):
    """A tool call requested by the model.

    Added in 0.1.0.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    """The call's id in the run: ``call_{step}_{index}``, given by the workflow whatever
    the model sent (see ``original_id``). Changed in 0.8.0: was the model's id, with a
    suffix when repeated (runs started before keep that)."""
    name: str
    """The name of the tool the model wants to call."""
    arguments: str
    """The arguments exactly as the model wrote them (a JSON object, unvalidated)."""
    original_id: str | None = None
    """The model's id for the call, when it differs from ``id``; messages sent back to
    the model carry this one. Added in 0.3.0. Changed in 0.8.0: set whenever the
    model's id differs (was: only for a repeated id)."""

    @property
    def wire_id(self) -> str:
        """The id the model gave the call, which replies to the model refer to."""
        return self.original_id or self.id


class Message(BaseModel):
    """One message of the conversation, in the chat-completions shape.

    Added in 0.1.0.
    """

    role: Role
    """Who speaks: ``system``, ``user``, ``assistant`` or ``tool``."""
    content: str | None = None
    """The text; ``None`` for an assistant message that only calls tools."""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """The tool calls of an assistant message."""
    tool_call_id: str | None = None
    """For a ``tool`` message: the id of the call it answers."""
    name: str | None = None
    """For a ``tool`` message: the name of the tool that answered."""
    step: int | None = None
    """The agent step that produced the message (``None`` for the initial prompt)."""
    compaction: str | None = None
    """For a summary: the id of the compaction whose lineage it carries (see
    ``AgentState.compactions``). Added in 0.2.0."""
    provider_items: list[dict[str, Any]] = Field(default_factory=list)
    """For an assistant message: parts of the model's answer its provider needs back
    unchanged in later requests, in the provider's own wire shape (Anthropic's signed
    ``thinking`` and ``redacted_thinking`` blocks). Other providers ignore them.
    Added in 0.10.0."""

    @classmethod
    def system(cls, text: str) -> Message:
        """Build a system message."""
        return cls(role="system", content=text)

    @classmethod
    def user(cls, text: str) -> Message:
        """Build a user message."""
        return cls(role="user", content=text)

    @classmethod
    def tool_result(cls, call: ToolCall, content: str, *, step: int | None = None) -> Message:
        """Build the tool message that answers ``call``."""
        return cls(
            role="tool", content=content, tool_call_id=call.wire_id, name=call.name, step=step
        )


class Usage(BaseModel):
    """Token and request counts, added up over a run.

    Added in 0.1.0.
    """

    requests: int = 0
    """Model requests made."""
    input_tokens: int = 0
    """Prompt tokens, as reported by the model endpoint."""
    output_tokens: int = 0
    """Completion tokens, as reported by the model endpoint."""
    tool_calls: int = 0
    """Tool calls executed (including ones that failed)."""
    cached_tokens: int = 0
    """Of the input tokens, those the endpoint served from its prompt cache. Added in 0.5.0."""
    cache_write_tokens: int = 0
    """Of the input tokens, those the endpoint wrote to its prompt cache (Anthropic's
    ``cache_creation_input_tokens``, priced by ``Price.cache_write``). Added in 0.10.0."""
    reasoning_tokens: int = 0
    """Of the output tokens, those the model spent reasoning before it answered (the
    Responses API's ``output_tokens_details.reasoning_tokens``); priced as output.
    Added in 0.10.0."""
    cost: float = 0.0
    """What the model calls cost, in the price table's currency (USD by convention), as
    the worker's ``PriceTable`` priced them when they were made. Added in 0.5.0."""

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    # A computed field, so the share is in every serialized usage (``AgentState.usage``
    # in ``GET /v1/runs/{id}`` and ``smyth state --json``), not only in Python. Derived,
    # never stored: a payload with the key validates (extra keys are ignored) and one
    # without it too, so recorded histories and old clients' payloads still load.
    @computed_field  # type: ignore[prop-decorator]
    @property
    def cache_read_share(self) -> float:
        """The share of input tokens served from the prompt cache (0 without input).

        Added in 0.10.0; serialized with the usage (``"cache_read_share"``), derived
        from ``cached_tokens`` and ``input_tokens``.
        """
        return self.cached_tokens / self.input_tokens if self.input_tokens else 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            requests=self.requests + other.requests,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            tool_calls=self.tool_calls + other.tool_calls,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            cost=self.cost + other.cost,
        )
