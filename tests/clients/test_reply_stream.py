"""``ReplyStream.answered``: set once the session has answered (or refused) the message."""

from __future__ import annotations

import uuid

import pytest
from temporalio.client import Client

from smyth_temporal import AgentClient
from smyth_temporal.exceptions import InvalidMessageError
from smyth_temporal.testing import ScriptedModel, agent_worker, reply
from tests.helpers.live_agents import Operator


async def test_a_reply_stream_says_when_the_session_has_answered_or_refused(
    client: Client, task_queue: str
) -> None:
    model = ScriptedModel([reply("Hi there.")])
    session = f"answered-{uuid.uuid4().hex[:8]}"
    async with agent_worker(client, Operator, model=model, task_queue=task_queue):
        agents = AgentClient(client, task_queue=task_queue)
        stream = agents.send(Operator, session, "Hello.", stream=True)
        before = stream.answered.is_set()
        kinds = [event.kind async for event in stream.events()]
        refused = agents.send(Operator, session, "   ", stream=True)
        with pytest.raises(InvalidMessageError):
            async for _ in refused.events():
                pass

    assert not before  # nothing is sent before iteration begins
    assert stream.answered.is_set() and stream.reply is not None
    assert stream.reply.text == "Hi there." and "message" in kinds
    assert refused.answered.is_set()  # a refusal is an answer too
