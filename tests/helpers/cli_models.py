"""Model providers that CLI tests hand to worker subprocesses (``--model module:attr``)."""

from __future__ import annotations

import re

from smyth_temporal import Message
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


def _sell_orders(request: ModelRequest) -> ModelResponse:
    # The orders come from the prompt ("sell ACME:10 GLOBEX:2"), so one worker process
    # serves every test, each with the calls it needs.
    prompt = next(m.content or "" for m in request.messages if m.role == "user")
    orders = re.findall(r"\b([A-Z]+):(\d+)\b", prompt) or [("ACME", "10")]
    calls = [
        call
        for symbol, quantity in orders
        for call in tool_call("sell", symbol=symbol, quantity=int(quantity)).message.tool_calls
    ]
    return ModelResponse(message=Message(role="assistant", tool_calls=calls))


def _echo_tool_results(request: ModelRequest) -> ModelResponse:
    return reply(" | ".join(m.content or "" for m in request.messages if m.role == "tool"))


def trader() -> ScriptedModel:
    """For ``tests.helpers.approval_agents:Trader``: sell what the prompt says, then echo the tools.

    Every sale needs approval. ``SYMBOL:QUANTITY`` words of the prompt are the orders
    (default ``ACME:10``); the answer is what the tools returned, so a rejection's
    reason shows in the output.
    """
    return ScriptedModel([_sell_orders, _echo_tool_results])


def _prompt_fact(request: ModelRequest) -> str:
    # "Remember: ACME reports on May 3" -> "ACME reports on May 3"; else the whole prompt.
    prompt = next(m.content or "" for m in request.messages if m.role == "user")
    found = re.search(r"remember:\s*(.+)", prompt, re.IGNORECASE)
    return " ".join((found.group(1) if found else prompt).split())


def _remember_fact(request: ModelRequest) -> ModelResponse:
    return tool_call("remember", text=_prompt_fact(request), kind="fact")


def _noted(request: ModelRequest) -> ModelResponse:
    return reply(f"Noted: {_prompt_fact(request)}")


def researcher() -> ScriptedModel:
    """For ``tests.helpers.memory_agents:Researcher``: remember the prompt's fact, then say so.

    The fact is what follows ``Remember:`` in the prompt (else the whole prompt), stored
    with the built-in ``remember`` tool as a ``fact``; the run's episode is stored too.
    """
    return ScriptedModel([_remember_fact, _noted])


not_a_provider = object()
"""Something that is not a model provider, for the error path."""
