"""Model providers that CLI tests hand to worker subprocesses (``--model module:attr``)."""

from __future__ import annotations

from smyth_temporal.models import ModelRequest, ModelResponse
from smyth_temporal.testing import ScriptedModel, reply, tool_call


def _answer(request: ModelRequest) -> ModelResponse:
    quote = next(m.content for m in request.messages if m.role == "tool" and m.name == "get_quote")
    return reply(f"ACME trades at {quote}.")


def scripted() -> ScriptedModel:
    """Every run: quote ACME, a short slow lookup (so progress shows a tool), answer."""
    return ScriptedModel(
        [
            tool_call("get_quote", symbol="ACME"),
            tool_call("slow_lookup", symbol="ACME", seconds=0.8),
            _answer,
        ]
    )


not_a_provider = object()
"""Something that is not a model provider, for the error path."""
