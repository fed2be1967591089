"""A fork's own memory view: its ancestors' memories up to the fork step, its own writes.

Real dev server, real Qdrant Edge on disk; only the model is scripted.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.client import Client

from smyth_temporal import AgentClient, AgentInput
from smyth_temporal.memory import EdgeStore, HashEmbedder, MemoryManager
from smyth_temporal.models import ModelRequest, ModelResponse
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from tests.helpers.memory_agents import Researcher, Reviewer

FACT_1 = "ACME reports earnings on May 3"
FACT_3 = "ACME's CFO resigned"
FORK_FACT = "GLOBEX is the better buy"
NEW_PROMPT = "Forget ACME's news, compare it with GLOBEX."
SECOND_PROMPT = "Now ask what the fork of the fork knows."
REVIEW_PROMPT = "What do we know about ACME and GLOBEX?"
RECALL_ALL = tool_call("recall", query="ACME GLOBEX earnings CFO buy", k=20)


def said(request: ModelRequest, text: str) -> bool:
    return any(m.content == text for m in request.messages)


def last_tool_result(request: ModelRequest) -> str:
    return [m.content or "" for m in request.messages if m.role == "tool"][-1]


def turn(request: ModelRequest) -> ModelResponse:
    """The original remembers at steps 1 and 3; a fork recalls, remembers and answers what
    it recalled; the fork's fork and an ordinary run recall and answer what they recalled.
    """
    if said(request, SECOND_PROMPT):
        return RECALL_ALL if request.step == 5 else reply(last_tool_result(request))
    if said(request, REVIEW_PROMPT):
        return RECALL_ALL if request.step == 1 else reply(last_tool_result(request))
    if said(request, NEW_PROMPT):
        if request.step == 3:
            return RECALL_ALL
        if request.step == 4:
            return tool_call("remember", text=FORK_FACT, kind="fact")
        recalled = [m.content or "" for m in request.messages if m.role == "tool"][-2]
        return reply(recalled)
    return {
        1: tool_call("remember", text=FACT_1, kind="fact"),
        2: tool_call("get_quote", symbol="ACME"),
        3: tool_call("remember", text=FACT_3, kind="fact"),
    }.get(request.step) or reply("ACME noted.")


@pytest.fixture
async def memory(tmp_path: Path) -> AsyncIterator[MemoryManager]:
    manager = MemoryManager(EdgeStore(tmp_path / "memory"), HashEmbedder(64))
    yield manager
    await manager.close()


async def test_a_fork_sees_its_parents_memories_up_to_the_fork_step_and_keeps_its_own(
    client: Client, agents: AgentClient, task_queue: str, memory: MemoryManager
) -> None:
    model = ScriptedModel([turn] * 30)
    async with agent_worker(
        client, Researcher, Reviewer, model=model, task_queue=task_queue, memory=memory
    ):
        original = await agents.start(
            Researcher, AgentInput(prompt="Learn about ACME", tenant="t1")
        )
        assert (await agents.result(original.id)).steps == 4
        fork = await agents.fork(original.id, at_step=2, prompt=NEW_PROMPT)
        forked = await agents.result(fork.id)
        # A fork of the fork, right after the fork's own remember (step 4).
        grandchild = await agents.fork(fork.id, at_step=4, prompt=SECOND_PROMPT)
        nested = await agents.result(grandchild.id)
        # Last: its episode (which quotes fact 3) is shared memory the forks would see.
        review = await agents.run(Reviewer, AgentInput(prompt=REVIEW_PROMPT, tenant="t1"))
        stored = await agents.memory.list_memories(tenant="t1", namespace="research")

    # The fork recalled what the original knew at step 2: fact 1, not fact 3.
    assert FACT_1 in forked.output
    assert FACT_3 not in forked.output
    # The fork's own write is its own: an ordinary run never sees it, shared memory is
    # shared (the original's facts, both of them).
    assert FACT_1 in review.output and FACT_3 in review.output
    assert FORK_FACT not in review.output
    # The fork of the fork inherits the fork's write and still not the original's fact 3.
    assert FACT_1 in nested.output and FORK_FACT in nested.output
    assert FACT_3 not in nested.output
    [fork_record] = [r for r in stored if r.text == FORK_FACT]
    assert fork_record.provenance.branch == fork.id
    assert all(not r.provenance.branch for r in stored if r.provenance.workflow_id == original.id)
