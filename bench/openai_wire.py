"""One call through the OpenAI providers beside the bare ``openai`` client.

From the repository root::

    .venv/bin/python -m bench.openai_wire [--rounds 40]

Against ``testing.FakeOpenAIServer``, no Temporal. For chat completions
(``OpenAIProvider``) and the Responses API (``OpenAIResponsesProvider``), and
conversations of 1, 22 and 301 messages (a user question, the model's tool call and its
result each step): the median of one unstreamed call through the provider and through
the bare client given the same messages as ``create()`` arguments (each goes first every
other round), plus the bare client's ``create()`` with the messages in ``extra_body``
(what the providers send). The bare client's time grows with the conversation because
the SDK walks every message through its parameter types before sending; the providers
skip that walk.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import openai

from smyth_temporal import configure_logging
from smyth_temporal.models import OpenAIProvider, OpenAIResponsesProvider
from smyth_temporal.testing import FakeOpenAIServer, chat_completion, responses_answer
from smyth_temporal.types.messages import Message, ToolCall
from smyth_temporal.types.model import ModelRequest

TOOL = {
    "type": "function",
    "function": {
        "name": "get_quote",
        "parameters": {"type": "object", "properties": {"symbol": {"type": "string"}}},
    },
}


def conversation(steps: int) -> list[Message]:
    """Instructions, then ``steps`` rounds of question, tool call and tool result."""
    messages = [Message.system("You analyse markets. " * 40)]
    for step in range(steps):
        call = ToolCall(id=f"call_{step}_0", name="get_quote", arguments='{"symbol": "ACME"}')
        messages += [
            Message.user(f"Question {step}: how is ACME?"),
            Message(role="assistant", tool_calls=[call]),
            Message.tool_result(call, '{"price": 42.0}'),
        ]
    return messages[: 1 + max(1, 3 * steps)]


async def timed(call: Callable[[], Awaitable[Any]]) -> float:
    started = time.perf_counter()
    await call()
    return time.perf_counter() - started


async def compare(
    fake: FakeOpenAIServer, messages: list[Message], rounds: int, *, api: str
) -> list[float]:
    """Median seconds: provider, bare client (arguments), bare client (extra_body)."""
    client = openai.AsyncOpenAI(base_url=fake.base_url, api_key="bench", max_retries=0)
    request = ModelRequest(model="bench", messages=messages, tools=[TOOL])
    provider: OpenAIProvider | OpenAIResponsesProvider
    if api == "chat":
        provider = OpenAIProvider(base_url=fake.base_url, api_key="bench")
        sent = provider._params(request)
        as_arguments = {k: v for k, v in sent.items() if k != "extra_body"}
        as_arguments.update(sent["extra_body"])
        create: Callable[..., Awaitable[Any]] = client.chat.completions.create
        answer = chat_completion("ACME is at 42.")
    else:
        provider = OpenAIResponsesProvider(base_url=fake.base_url, api_key="bench")
        as_arguments = provider.params(request)
        sent = {k: v for k, v in as_arguments.items() if k not in ("input", "tools")}
        sent["extra_body"] = {k: as_arguments[k] for k in ("input", "tools")}
        create = client.responses.create
        answer = responses_answer("ACME is at 42.")

    async def ours() -> None:
        await provider.complete(request)

    async def bare() -> None:
        await create(**as_arguments)

    async def bare_extra_body() -> None:
        await create(**sent)

    calls = [ours, bare, bare_extra_body]
    times: list[list[float]] = [[] for _ in calls]
    for index in range(rounds + 2):
        order = list(range(len(calls)))
        if index % 2:
            order.reverse()
        for which in order:
            fake.enqueue(answer)
            took = await timed(calls[which])
            if index >= 2:  # two rounds of warm-up (connections, imports)
                times[which].append(took)
    return [statistics.median(t) for t in times]


async def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    configure_logging(level="WARNING")
    async with FakeOpenAIServer() as fake:
        for api, name in (("chat", "OpenAIProvider"), ("responses", "OpenAIResponsesProvider")):
            for steps in (0, 7, 100):
                messages = conversation(steps)
                ours, bare, extra = await compare(fake, messages, args.rounds, api=api)
                print(
                    f"{api}, {len(messages):>3} messages, median of {args.rounds}: "
                    f"{name} {ours * 1000:.2f} ms, bare SDK {bare * 1000:.2f} ms "
                    f"({ours / bare:.2f}x), bare SDK with extra_body {extra * 1000:.2f} ms"
                )


if __name__ == "__main__":
    asyncio.run(main())
