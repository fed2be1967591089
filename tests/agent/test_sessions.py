"""Persistent sessions: update-with-start, ordering, context, restarts, long idle."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.testing import WorkflowEnvironment

from smyth_temporal import AgentClient, AgentInput, AgentNotFoundError, InvalidMessageError
from smyth_temporal.models import ModelRequest, ModelResponse
from smyth_temporal.testing import (
    ScriptedModel,
    agent_worker,
    new_task_queue,
    reply,
    tool_call,
)
from smyth_temporal.types.sessions import (
    SESSION_MESSAGE_UPDATE,
    SessionMessage,
    session_workflow_id,
)
from tests.helpers.context_agents import Concierge

TURNS = 200


def concierge(request: ModelRequest) -> ModelResponse:
    """Answers each message with what it has heard so far (its context, verbatim)."""
    heard = [m.content or "" for m in request.messages if m.role == "user"]
    last = request.messages[-1]
    if last.role == "user" and last.content and last.content.startswith("report"):
        return tool_call("daily_report", day=int(last.content.split()[-1]))
    if last.role == "tool":
        return reply(f"report read: {(last.content or '')[:22]}")
    return reply(f"#{len(heard)} {heard[-1]} | heard: {', '.join(heard)}")


def model() -> ScriptedModel:
    return ScriptedModel([concierge] * TURNS)


async def test_send_starts_a_session_and_keeps_its_context(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    async with agent_worker(client, Concierge, model=model(), task_queue=task_queue):
        first = await agents.send(Concierge, "s1", "hello", sender="ann")
        second = await agents.send(Concierge, "s1", "report for day 3")
        third = await agents.send(Concierge, "s1", "thanks")
        state = await agents.state(session_workflow_id("Concierge", "default", "s1"))
    assert first is not None and second is not None and third is not None
    assert first.text == "#1 hello | heard: hello"
    assert second.text.startswith("report read: Report for day 3")
    assert third.text == "#3 thanks | heard: hello, report for day 3, thanks"
    assert [first.number, second.number, third.number] == [1, 2, 3]
    assert state.status == "idle" and state.session_id == "s1"


async def test_racing_callers_create_one_session_and_every_message_is_answered_once(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    # Two independent clients (as two processes would be), racing to start it.
    other = AgentClient(
        await Client.connect(
            client.service_client.config.target_host, plugins=client.config()["plugins"]
        ),
        task_queue=task_queue,
    )
    texts = [f"m{i}" for i in range(8)]
    async with agent_worker(client, Concierge, model=model(), task_queue=task_queue):
        replies = await asyncio.gather(
            *(
                (agents if i % 2 else other).send(Concierge, "race", text)
                for i, text in enumerate(texts)
            )
        )
        workflow_id = session_workflow_id("Concierge", "default", "race")
        runs = [w async for w in client.list_workflows(f"WorkflowId = '{workflow_id}'")]
    assert len(runs) == 1
    numbers = sorted(r.number for r in replies if r)
    assert numbers == list(range(1, len(texts) + 1))
    # Each reply answers its own message, and saw exactly the messages queued before it.
    for text, answer in zip(texts, replies, strict=True):
        assert answer is not None
        assert answer.text.startswith(f"#{answer.number} {text} |")


async def test_bad_messages_are_refused_and_leave_no_trace(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    async with agent_worker(client, Concierge, model=model(), task_queue=task_queue):
        await agents.send(Concierge, "s2", "hello", tenant="acme")
        workflow_id = session_workflow_id("Concierge", "acme", "s2")
        before = len((await client.get_workflow_handle(workflow_id).fetch_history()).events)
        with pytest.raises(InvalidMessageError, match="empty"):
            await agents.send(Concierge, "s2", "   ", tenant="acme")
        with pytest.raises(InvalidMessageError, match="limit is"):
            await agents.send(Concierge, "s2", "x" * 100_001, tenant="acme")
        with pytest.raises(WorkflowUpdateFailedError):
            await agents.update(
                workflow_id,
                SESSION_MESSAGE_UPDATE,
                SessionMessage(text="leak?", tenant="globex"),
                result_type=dict,
            )
        after = len((await client.get_workflow_handle(workflow_id).fetch_history()).events)
        task = await agents.start(Concierge, AgentInput(prompt="a task"))
        await agents.result(task.id)
        with pytest.raises(AgentNotFoundError, match="has finished"):
            await agents.update(
                task.id, SESSION_MESSAGE_UPDATE, SessionMessage(text="hi"), result_type=dict
            )
        await agents.close_session(Concierge, "s2", tenant="acme")
        closed = await agents.result(workflow_id)
    assert after == before
    assert closed.status == "completed"


async def test_a_session_spans_days_and_worker_restarts(skipping: WorkflowEnvironment) -> None:
    queue = new_task_queue()
    agents = AgentClient(skipping.client, task_queue=queue)
    scripted = model()
    answers = []
    for day in range(1, 4):
        # A new worker each day that caches nothing: the idle session is only history.
        async with agent_worker(
            skipping.client, Concierge, model=scripted, task_queue=queue, max_cached_workflows=0
        ):
            answers.append(await agents.send(Concierge, "days", f"day {day}"))
            state = await agents.state(session_workflow_id("Concierge", "default", "days"))
        # A day passes with no worker at all.
        await skipping.sleep(timedelta(days=1))
    assert [a.text if a else None for a in answers] == [
        "#1 day 1 | heard: day 1",
        "#2 day 2 | heard: day 1, day 2",
        "#3 day 3 | heard: day 1, day 2, day 3",
    ]
    assert state.status == "idle"
