"""The event stream under retries, crashes, continue-as-new and many readers.

A retried model call supersedes the text it streamed; a reader resumes from its offset
across a worker SIGKILL and across continue-as-new and sees every event once, in
order; twenty readers on one run never crowd out its approvals and messages.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from temporalio.client import Client

from smyth_temporal import AgentClient, AgentInput, ApprovalDecision
from smyth_temporal.models import OpenAIProvider
from smyth_temporal.testing import (
    FakeOpenAIServer,
    FakeResponse,
    ScriptedModel,
    agent_worker,
    chat_completion,
    reply,
    tool_call,
)
from smyth_temporal.types import (
    AgentEvent,
    ApprovalDecided,
    MessageCompleted,
    TextAssembler,
    TextDelta,
    TextReset,
    session_workflow_id,
)
from tests.agent.test_crash_recovery import Spawn, spawn, wait_for_entry  # noqa: F401 (fixture)
from tests.helpers.agents import Analyst, read_ledger
from tests.helpers.context_agents import Relay
from tests.helpers.live_agents import Operator

ANSWER = "ACME trades at 101.5, up two percent on the week, with volume well above average."


async def collect(
    agents: AgentClient, workflow_id: str, after: int | None = None, *, until: str | None = None
) -> list[AgentEvent]:
    """The run's events (after ``after``); stop early at the first event of kind ``until``."""
    seen: list[AgentEvent] = []
    async for event in agents.events(workflow_id, after=after):
        seen.append(event)
        if event.kind == until:
            break
    return seen


def assert_once_in_order(events: Sequence[AgentEvent]) -> None:
    """The run's own events come once each, in order (its turns' text is a view)."""
    offsets = [e.offset for e in events if not isinstance(e, TextDelta | TextReset)]
    assert offsets == list(range(offsets[0], offsets[0] + len(offsets))), offsets


async def test_a_retried_model_call_supersedes_what_it_streamed(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    async with FakeOpenAIServer() as fake:
        # The connection drops after four words; the retry streams the whole answer. The
        # first token comes late enough that the reader has started the turn's channel
        # (text written before a reader is there goes nowhere if its attempt fails).
        first = FakeResponse(body=chat_completion(ANSWER), drop_after=4, first_token_delay=1.0)
        fake.enqueue(first)
        fake.enqueue(chat_completion(ANSWER))
        provider = OpenAIProvider(base_url=fake.base_url, api_key="sk-test")
        async with agent_worker(client, Analyst, model=provider, task_queue=task_queue):
            handle = await agents.start(Analyst, AgentInput(prompt="How is ACME?"))
            events = await collect(agents, handle.id)
            result = await agents.result(handle.id)
        assert [r.streamed for r in fake.requests] == [True, True]

    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert {e.attempt for e in deltas} == {1, 2}
    [reset] = [e for e in events if isinstance(e, TextReset)]
    second = [events.index(e) for e in deltas if e.attempt == 2]
    assert reset.attempt == 2 and events.index(reset) < min(second)
    # Naively joined, the deltas repeat the first attempt's words; assembled, they do not.
    assert "".join(e.text for e in deltas) != ANSWER
    assembler = TextAssembler()
    for event in events:
        assembler.add(event)
    [answer] = [
        e for e in events if isinstance(e, MessageCompleted) and e.message.role == "assistant"
    ]
    assert assembler.text(answer.message_id or "") == answer.message.content == ANSWER
    assert result.output == ANSWER
    assert_once_in_order(events)


async def test_a_reader_resumes_across_continue_as_new(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    # Relay continues as new after every two steps: five steps make three runs.
    script = [tool_call("daily_report", day=day) for day in range(1, 5)] + [reply("all read")]
    async with agent_worker(
        client, Relay, model=ScriptedModel(script, piece_delay=0.01), task_queue=task_queue
    ):
        handle = await agents.start(Relay, AgentInput(prompt="Read the reports"))
        first = await collect(agents, handle.id, until="continued_as_new")
        rest = await collect(agents, handle.id, after=first[-1].offset)
        everything = await collect(agents, handle.id)
        result = await agents.result(handle.id)

    assert result.output == "all read"
    assert first + rest == everything
    assert_once_in_order(everything)
    assert len({e.run_id for e in everything}) == 3
    assert [e.kind for e in everything].count("continued_as_new") == 2
    assert [e.kind for e in everything].count("run_started") == 3


async def test_a_reader_sees_every_event_once_across_a_worker_sigkill(
    agents: AgentClient,
    ledger: Path,
    spawn: Spawn,  # noqa: F811 (the fixture)
) -> None:
    first = await spawn("crash-tool")
    handle = await agents.start(Analyst, AgentInput(prompt="Buy ACME, then look around"))
    before: list[AgentEvent] = []
    async for event in agents.events(handle.id):  # read up to the slow lookup, then leave
        before.append(event)
        if event.kind == "tool_call" and event.call.name == "slow_lookup":
            break
    await wait_for_entry(ledger, lambda e: e["tool"] == "slow_lookup.start")
    first.kill()
    await spawn("crash-tool")
    after = await asyncio.wait_for(collect(agents, handle.id, after=before[-1].offset), 120)
    events = before + after

    assert events == await collect(agents, handle.id)  # resumed: nothing lost, nothing twice
    assert_once_in_order(events)
    keys = [e.idempotency_key for e in events if e.kind == "tool_call"]
    assert len(keys) == len(set(keys)) == 5  # the re-run after the crash published nothing twice
    assert events[-1].kind == "run_finished" and events[-1].status == "completed"


async def test_twenty_readers_never_crowd_out_approvals_and_messages(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    script = [tool_call("sell", symbol="ACME", quantity=5), reply("sold")]
    script += [reply(f"answer {n}") for n in range(1, 11)]
    workflow_id = session_workflow_id("Operator", "default", "s-crowd")
    async with agent_worker(
        client, Operator, model=ScriptedModel(script, piece_delay=0.01), task_queue=task_queue
    ):
        first = asyncio.create_task(agents.send(Operator, "s-crowd", "Sell ACME"))
        while not (await _pending(agents, workflow_id)):
            await asyncio.sleep(0.05)
        readers = [
            asyncio.create_task(collect(agents, workflow_id, until="approval_decided"))
            for _ in range(20)
        ]
        await agents.decide(workflow_id, ApprovalDecision(approved=True, by="bob"))
        sold = await first
        replies = await asyncio.gather(
            *(agents.send(Operator, "s-crowd", f"question {n}") for n in range(1, 11))
        )
        seen = await asyncio.gather(*readers)
        await agents.close_session(Operator, "s-crowd")
        everything = await collect(agents, workflow_id)  # to the end of the closed session

    assert sold is not None and sold.text == "sold"
    assert sorted(r.number for r in replies if r) == list(range(2, 12))
    assert sorted(r.text for r in replies if r) == sorted(f"answer {n}" for n in range(1, 11))
    assert [e["tool"] for e in read_ledger(ledger)] == ["sell"]
    assert all(each == seen[0] for each in seen)
    assert sum(isinstance(e, ApprovalDecided) for e in everything) == 1


async def _pending(agents: AgentClient, workflow_id: str) -> bool:
    try:
        return bool((await agents.state(workflow_id)).pending_approvals)
    except Exception:  # the session's first message is still on its way
        return False
