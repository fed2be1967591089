"""The prompt cache's share of input tokens, per run, in the audit trail and ``smyth audit``."""

from __future__ import annotations

from datetime import datetime

from temporalio.client import Client

from smyth_temporal import AgentClient
from smyth_temporal.cli.audit import _cache_lines
from smyth_temporal.models import OpenAIResponsesProvider
from smyth_temporal.testing import FakeOpenAIServer, agent_worker, responses_answer
from smyth_temporal.types.audit import AuditEntry, AuditTrail
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
    assert _cache_lines(trail) == [
        f"run {trail.runs[0][:8]}: 4000 input tokens, 0.60 read from cache"
    ]


def call(run_id: str, input_tokens: int, cached: int | None) -> AuditEntry:
    fields: dict[str, object] = {"input_tokens": input_tokens}
    if cached is not None:
        fields["cached_tokens"] = cached
    return AuditEntry(
        time=datetime(2026, 1, 1), run_id=run_id, event_id=1, kind="model_call", fields=fields
    )


def test_each_run_has_its_line_and_a_run_without_model_input_has_none() -> None:
    trail = AuditTrail(
        workflow_id="w",
        runs=["run-one-xx", "run-two-xx", "run-three"],
        entries=[
            call("run-one-xx", 1000, 0),
            call("run-two-xx", 1000, 900),
            call("run-two-xx", 1000, None),  # a call whose usage said nothing of the cache
        ],
    )
    assert _cache_lines(trail) == [
        "run run-one-: 1000 input tokens, 0.00 read from cache",
        "run run-two-: 2000 input tokens, 0.45 read from cache",
        "all runs: 0.30 read from cache",
    ]
    assert AuditTrail(workflow_id="w", runs=[], entries=[]).cache_read_share() == 0.0
