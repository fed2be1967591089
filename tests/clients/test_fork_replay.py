"""``AgentClient.fork(replay_model_turns=True)``: the fork's worker answers the turns the
original recorded while the conversation matches them, and pays only from the divergence."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.converter import DataConverter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from smyth_temporal import AgentClient, AgentInput
from smyth_temporal.activities.recorded import RecordedTurns, turns_of
from smyth_temporal.memory import EdgeStore, HashEmbedder, MemoryManager
from smyth_temporal.models import OpenAIProvider
from smyth_temporal.plugin import SmythPlugin
from smyth_temporal.testing import (
    FakeAnthropicServer,
    FakeOpenAIServer,
    ScriptedModel,
    agent_worker,
    anthropic_error,
    anthropic_turn,
    chat_completion,
    payloads_in,
    reply,
    tool_call,
)
from smyth_temporal.types.budget import Price, PriceTable
from smyth_temporal.types.model import ModelRequest, RecordedRun
from smyth_temporal.types.sessions import session_workflow_id
from tests.helpers.agents import PRICES, Analyst
from tests.helpers.context_agents import Digest, Relay
from tests.helpers.fallback_agents import ClaudeWithFallback
from tests.helpers.fork_agents import QuoteEvaluator
from tests.models.test_anthropic_agent import provider_for

STEPS = 20
CHANGED_STEP = 15
"""The evaluation changes the output of the tool call made at this step."""
SYMBOLS = ["ACME" if step == CHANGED_STEP else "GLOBEX" for step in range(1, STEPS)]
PRICE_TABLE = PriceTable(prices={"test-model": Price(input=2.0, output=8.0)})


def quote(step: int) -> dict[str, object]:
    """The fake endpoint's answer for ``step``: the step's quote, or the final answer."""
    if step == STEPS:
        return chat_completion("All quoted.", prompt_tokens=1000, completion_tokens=100)
    call = (f"call_{step}", "get_quote", {"symbol": SYMBOLS[step - 1]})
    return chat_completion(tool_calls=[call], prompt_tokens=1000, completion_tokens=100)


def priced_worker(client: Client, provider: OpenAIProvider, task_queue: str) -> Worker:
    """A worker of ``QuoteEvaluator`` whose model calls are priced by ``PRICE_TABLE``."""
    plugin = SmythPlugin(model=provider, prices=PRICE_TABLE)
    worker_client = Client(client.service_client, namespace=client.namespace, plugins=[plugin])
    return Worker(worker_client, task_queue=task_queue, workflows=[QuoteEvaluator])


async def test_a_replayed_fork_pays_only_for_the_turns_after_a_changed_tool_output(
    client: Client,
    agents: AgentClient,
    task_queue: str,
    ledger: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with FakeOpenAIServer() as fake:
        for step in range(1, STEPS + 1):
            fake.enqueue(quote(step))
        provider = OpenAIProvider(base_url=fake.base_url, api_key="sk-test")
        async with priced_worker(client, provider, task_queue):
            started = await agents.start(QuoteEvaluator, "Quote the list.")
            original = await agents.result(started.id)
            assert len(fake.requests) == STEPS
            # The evaluation: the tool answers differently at step 15 from now on.
            monkeypatch.setitem(PRICES, "ACME", 99.0)
            for step in range(CHANGED_STEP + 1, STEPS + 1):
                fake.enqueue(quote(step))
            handle = await agents.fork(started.id, at_step=0)  # replays by default
            fork = await agents.result(handle.id)
        paid = fake.requests[STEPS:]

    # Only the turns after the changed output reached the model: steps 16-20.
    assert len(paid) == STEPS - CHANGED_STEP
    changed = [m for m in paid[0].json["messages"] if m["role"] == "tool"][-1]
    assert "99" in changed["content"]
    assert (fork.steps, fork.output) == (STEPS, "All quoted.")
    assert fork.usage.requests == STEPS - CHANGED_STEP
    per_turn = original.usage.cost / STEPS
    assert original.usage.cost == pytest.approx(0.056)  # 1,000 in at 2, 100 out at 8 per M
    assert fork.usage.cost == pytest.approx(per_turn * (STEPS - CHANGED_STEP))
    saved = original.usage.cost - fork.usage.cost
    assert saved == pytest.approx(per_turn * CHANGED_STEP)


async def test_a_replayed_fork_reads_the_turns_of_the_runs_its_original_continued_into(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    # Relay continues as new after every two steps: the turns after step 1 are spread
    # over two runs of the original's chain.
    days = [tool_call("daily_report", day=day) for day in range(1, 4)]
    model = ScriptedModel([*days, reply("done")])
    async with agent_worker(client, Relay, model=model, task_queue=task_queue):
        handle = await agents.start(Relay, "Read three days.")
        original = await agents.result(handle.id)
        fork = await agents.fork(handle.id, at_step=1)
        forked = await agents.result(fork.id)
        asked = len(model.requests)
        paid = await agents.fork(handle.id, at_step=3, replay_model_turns=False)
        await agents.result(paid.id)

    assert asked == original.steps == 4  # the fork asked the model nothing
    assert (forked.output, forked.steps) == ("done", 4)
    assert [r.step for r in model.requests[asked:]] == [4]  # without replay: paid for


async def test_a_run_of_another_tenant_never_answers_a_turn(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = ScriptedModel([tool_call("get_quote", symbol="ACME"), reply("ACME is up.")])
    async with agent_worker(client, Analyst, model=model, task_queue=task_queue):
        handle = await agents.start(Analyst, AgentInput(prompt="ACME?", tenant="acme"))
        await agents.result(handle.id)
    history = await client.get_workflow_handle(handle.id).fetch_history()
    [*_, (asked, answered)] = await turns_of(client, history)
    source = RecordedRun(workflow_id=handle.id, run_id=history.run_id)
    turns = RecordedTurns()

    def request(tenant: str) -> ModelRequest:
        return asked.model_copy(update={"replay_from": source, "tenant": tenant})

    # A start input naming another tenant's run as its parent reads none of its answers.
    assert await turns.answer(client, request("globex")) is None
    assert await turns.answer(client, request("acme")) == answered
    changed = request("acme").model_copy(update={"settings": {"temperature": 0.5}})
    assert await turns.answer(client, changed) is None  # not the question asked


async def test_a_fork_near_the_end_of_a_long_run_decodes_only_the_turns_after_its_step(
    client: Client,
    agents: AgentClient,
    task_queue: str,
    ledger: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every request holds the whole conversation: decoding all of a 200-step run's took
    # long enough, without a pause, to starve the model activity's heartbeat.
    symbols = ["ACME", "GLOBEX", "INITECH", "ACME"]
    script = [*[tool_call("get_quote", symbol=s) for s in symbols], reply("done")]
    async with agent_worker(client, Analyst, model=ScriptedModel(script), task_queue=task_queue):
        handle = await agents.start(Analyst, "Quote four symbols.")
        await agents.result(handle.id)
    history = await client.get_workflow_handle(handle.id).fetch_history()
    decoded: list[object] = []
    decode = DataConverter.decode

    async def counted(self: DataConverter, *args: Any, **kwargs: Any) -> Any:
        values = await decode(self, *args, **kwargs)
        decoded.extend(values)
        return values

    monkeypatch.setattr(DataConverter, "decode", counted)
    turns = await turns_of(client, history, after_step=4)

    assert [request.step for request, _ in turns] == [5]
    # Turn 5's request and response, and turn 4's request (where the reading stops).
    assert len(decoded) == 3
    assert [r.step for r, _ in await turns_of(client, history)] == [1, 2, 3, 4, 5]


async def test_a_replayed_fork_of_an_encrypted_run_reads_its_turns_with_the_workers_key(
    env: WorkflowEnvironment, task_queue: str, ledger: Path, sealed_env: dict[str, str]
) -> None:
    # Every SmythPlugin built here encrypts (sealed_env): the record is read through the
    # worker's converter, and the replayed answers are sealed in the fork's history too.
    client = Client(
        env.client.service_client, namespace=env.client.namespace, plugins=[SmythPlugin()]
    )
    agents = AgentClient(client, task_queue=task_queue)
    answer = "ACME is up, says the sealed record."
    model = ScriptedModel([tool_call("get_quote", symbol="ACME"), reply(answer)])
    async with agent_worker(client, Analyst, model=model, task_queue=task_queue):
        handle = await agents.start(Analyst, "How is ACME doing?")
        await agents.result(handle.id)
        fork = await agents.fork(handle.id, at_step=0)
        forked = await agents.result(fork.id)
    history = await env.client.get_workflow_handle(fork.id).fetch_history()

    assert len(model.requests) == 2  # the fork's two turns came from the encrypted record
    assert (forked.output, forked.usage.requests) == (answer, 0)
    sealed = [p.data for event in history.events for p in payloads_in(event)]
    assert sealed and not any(answer.encode() in data for data in sealed)


async def test_a_running_parent_is_read_again_only_for_a_step_it_had_not_taken(
    client: Client, agents: AgentClient, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = ScriptedModel([reply("Hello."), reply("Hello again.")])
    parent_id = session_workflow_id("Analyst", "default", "recorded")
    async with agent_worker(client, Analyst, model=model, task_queue=task_queue):
        await agents.send(Analyst, "recorded", "Hi")  # the session stays open after step 1
        history = await client.get_workflow_handle(parent_id).fetch_history()
        [(asked, _)] = await turns_of(client, history)
        turns = RecordedTurns()
        reads: list[int] = []
        read = RecordedTurns._read

        async def counted(self: RecordedTurns, *args: Any) -> Any:
            reads.append(1)
            return await read(self, *args)

        monkeypatch.setattr(RecordedTurns, "_read", counted)
        source = RecordedRun(workflow_id=parent_id, run_id=history.run_id)
        diverged = asked.model_copy(update={"replay_from": source, "settings": {"seed": 1}})
        for _ in range(3):  # a fork that left the record at a step the parent had taken
            assert await turns.answer(client, diverged) is None
        assert len(reads) == 1
        await agents.send(Analyst, "recorded", "Hi again")  # the parent takes step 2
        ahead = diverged.model_copy(update={"step": 2})
        assert await turns.answer(client, ahead) is None  # beyond what was read: read again
        assert len(reads) == 2
        assert await turns.answer(client, ahead) is None  # the parent has taken step 2 now
        assert len(reads) == 2


async def test_a_replayed_fork_answers_its_compactions_from_the_record_too(
    client: Client, agents: AgentClient, task_queue: str, tmp_path: Path
) -> None:
    # A summary written anew would differ with a real model, and every later turn with it.
    steps = [*(tool_call("daily_report", day=day) for day in range(1, 5)), reply("digested")]
    model = ScriptedModel(steps)
    memory = MemoryManager(EdgeStore(tmp_path / "memory"), HashEmbedder(64))
    async with agent_worker(client, Digest, model=model, task_queue=task_queue, memory=memory):
        handle = await agents.start(Digest, "Digest the reports.")
        await agents.result(handle.id)
        asked, summaries = len(model.requests), len(model.summary_requests)
        fork = await agents.fork(handle.id, at_step=1)
        forked = await agents.result(fork.id)
    await memory.close()

    assert summaries >= 1  # Digest's budget compacted the original
    assert (len(model.requests), len(model.summary_requests)) == (asked, summaries)
    assert (forked.output, forked.usage.requests) == ("digested", 1)  # step 1: the original's


async def test_a_turn_a_fallback_model_answered_is_replayed_when_the_fork_asks_the_first_model(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    async with FakeAnthropicServer() as fake:
        overloaded = anthropic_error(529, "overloaded_error", "Overloaded")
        fake.enqueue(overloaded, overloaded, anthropic_turn("Markets are calm."))
        async with agent_worker(
            client, ClaudeWithFallback, model=provider_for(fake), task_queue=task_queue
        ):
            handle = await agents.start(ClaudeWithFallback, "How are markets?")
            await agents.result(handle.id)
            asked = len(fake.requests)
            # What a paid fork would be told: it must not get there.
            fake.enqueue(anthropic_turn("Markets are busy."))
            fork = await agents.fork(handle.id, at_step=0)  # replays by default
            forked = await agents.result(fork.id)
        sent = [r.json["model"] for r in fake.requests]

    assert sent[:asked] == ["claude-primary", "claude-primary", "claude-backup"]
    assert len(sent) == asked  # the fork's turn 1, asked of the primary, came from the record
    assert (forked.output, forked.usage.requests) == ("Markets are calm.", 0)
