"""A streamed turn of 1,000 tool calls ends the run, in one model call.

The model activity used to put the stream together with openai's accumulator, which
rebuilds the whole message for every chunk: a 1,000-call turn took about 50 s of CPU on
the worker's event loop, heartbeats stopped (the model call's heartbeat timeout is
2 s), and every attempt was timed out and retried, the run "thinking" forever (issue
23 item 20). Calls past ``AgentConfig.max_tool_calls_per_turn`` are answered to the
model as errors, so the run goes on to the model's answer.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from temporalio.client import Client

from smyth_temporal import AgentClient, AgentInput
from smyth_temporal.agent.config import DEFAULT_MAX_TOOL_CALLS_PER_TURN
from smyth_temporal.models import OpenAIProvider
from smyth_temporal.testing import FakeOpenAIServer, agent_worker, chat_completion
from tests.helpers.agents import Analyst, read_ledger

CALLS = 1_000
ENDS_WITHIN = 180.0
"""Seconds the run gets to end (it takes about 20 on a loaded 2-core machine; it never
ended before the fix)."""
ANSWER = "ACME trades at 101.5."


async def test_a_streamed_turn_of_a_thousand_tool_calls_ends_the_run_in_one_model_call(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    calls = [(f"call_{i}", "get_quote", {"symbol": "ACME"}) for i in range(CALLS)]
    async with FakeOpenAIServer() as fake:
        fake.enqueue(chat_completion(tool_calls=list(calls)), chat_completion(ANSWER))
        provider = OpenAIProvider(base_url=fake.base_url, api_key="sk-test")
        async with agent_worker(client, Analyst, model=provider, task_queue=task_queue):
            handle = await agents.start(Analyst, AgentInput(prompt="Quote ACME, many times."))
            # Bounded, so a wedged run fails the test instead of hanging it.
            result = await asyncio.wait_for(agents.result(handle.id), ENDS_WITHIN)
        requests = fake.requests

    assert result.status == "completed" and result.output == ANSWER
    # One streamed call per turn: the first was never timed out and asked again.
    assert [r.streamed for r in requests] == [True, True]
    # The model heard back about every call: the first ones ran, the rest were refused.
    answered = [m for m in requests[1].json["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in answered] == [f"call_{i}" for i in range(CALLS)]
    assert len(read_ledger(ledger)) == DEFAULT_MAX_TOOL_CALLS_PER_TURN
