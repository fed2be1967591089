"""The prompt cache's share of input tokens, per run, in the audit trail."""

from __future__ import annotations

from temporalio.client import Client

from smyth_temporal import AgentClient
from smyth_temporal.models import OpenAIResponsesProvider
from smyth_temporal.testing import FakeOpenAIServer, agent_worker, responses_answer
from tests.helpers.agents import Analyst


def usage(input_tokens: int, cached: int) -> dict[str, object]:
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input_tokens + 5,
    }


async def test_the_audit_reports_the_share_of_input_read_from_the_cache(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    async with FakeOpenAIServer() as fake:
        fake.enqueue(
            responses_answer(
                function_calls=[("call_a", "get_quote", {"symbol": "ACME"})],
                usage=usage(1000, 0),
            ),
            responses_answer("ACME trades at 101.5", usage=usage(3000, 2400)),
        )
        provider = OpenAIResponsesProvider(base_url=fake.base_url, api_key="sk-test")
        async with agent_worker(client, Analyst, model=provider, task_queue=task_queue):
            handle = await agents.start(Analyst, "Price of ACME?")
            await agents.result(handle.id)

    trail = await agents.audit(handle.id)

    assert [e.fields["cached_tokens"] for e in trail.of("model_call")] == [0, 2400]
    assert trail.cache_read_share() == 2400 / 4000
    assert trail.cache_read_share(trail.runs[0]) == 2400 / 4000
