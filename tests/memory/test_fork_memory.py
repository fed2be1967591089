"""A fork's own memory view: its ancestors' memories up to the fork step, its own writes.

Real dev server, real Qdrant Edge on disk; only the model is scripted.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from temporalio.client import Client

from smyth_temporal import AgentClient, AgentInput, AgentNotFoundError
from smyth_temporal.memory import EdgeStore, HashEmbedder, MemoryManager
from smyth_temporal.memory._sealed import SealedStore
from smyth_temporal.models import ModelRequest, ModelResponse
from smyth_temporal.security import EncryptionCodec, KeyRing, new_key
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from smyth_temporal.types.memory import (
    ForgetRequest,
    LineagePoint,
    MemoryRecord,
    MemoryScope,
    MemoryView,
    Provenance,
    RecallRequest,
    RememberRequest,
    SupersedeRequest,
)
from tests.helpers.memory_agents import ChainedResearcher, Researcher, Reviewer

FACT_1 = "ACME reports earnings on May 3"
FACT_3 = "ACME's CFO resigned"
FORK_FACT = "GLOBEX is the better buy"
NEW_PROMPT = "Forget ACME's news, compare it with GLOBEX."
SECOND_PROMPT = "Now ask what the fork of the fork knows."
REVIEW_PROMPT = "What do we know about ACME and GLOBEX?"
SCOPE = MemoryScope(tenant="t1", namespace="research")
NOW = datetime(2026, 1, 1, tzinfo=UTC)
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


FORK = MemoryView(branch="F", lineage=[LineagePoint(workflow_id="O", step=2)])
"""The view of fork F of the ordinary run O at step 2."""


def written_by(workflow_id: str, step: int, branch: str = "") -> Provenance:
    return Provenance(workflow_id=workflow_id, run_id="r", step=step, branch=branch)


async def write(memory: MemoryManager, text: str, provenance: Provenance) -> MemoryRecord:
    [record] = await memory.remember(
        RememberRequest(scope=SCOPE, texts=[text], provenance=provenance, created_at=NOW)
    )
    return record


async def recall(memory: MemoryManager, view: MemoryView | None) -> list[MemoryRecord]:
    request = RecallRequest(scope=SCOPE, query="ACME", k=100, now=NOW, view=view)
    return [hit.record for hit in await memory.recall(request)]


async def test_a_forks_write_of_a_fact_never_takes_the_originals_later_write(
    memory: MemoryManager,
) -> None:
    # The fork learns a fact first; the original learns the same fact later (step 5).
    await write(memory, FACT_3, written_by("F", 3, branch="F"))
    original = await write(memory, FACT_3, written_by("O", 5))

    # The original's write is stored as its own (not answered by the fork's record).
    assert original.provenance.workflow_id == "O" and not original.provenance.branch
    assert [r.provenance.workflow_id for r in await recall(memory, None)] == ["O"]
    # And the fork still sees its own, not the original's later one.
    assert [r.provenance.workflow_id for r in await recall(memory, FORK)] == ["F"]


async def test_a_fork_forgets_and_supersedes_only_the_memories_it_wrote(
    memory: MemoryManager,
) -> None:
    inherited = await write(memory, FACT_1, written_by("O", 1))
    own = await write(memory, FORK_FACT, written_by("F", 3, branch="F"))

    forgotten = await memory.forget(ForgetRequest(scope=SCOPE, ids=[inherited.id], view=FORK))
    assert forgotten == 0
    with pytest.raises(KeyError, match="of this fork's own"):
        await memory.supersede(
            SupersedeRequest(
                scope=SCOPE,
                old_id=inherited.id,
                text="ACME reports on May 4",
                provenance=written_by("F", 4, branch="F"),
                created_at=NOW,
                view=FORK,
            )
        )
    # The original's memory is untouched: present and not superseded.
    assert [r.id for r in await recall(memory, None)] == [inherited.id]
    assert await memory.forget(ForgetRequest(scope=SCOPE, ids=[own.id], view=FORK)) == 1
    assert [r.id for r in await recall(memory, FORK)] == [inherited.id]


async def test_an_encrypted_store_keeps_a_forks_memories_apart_too(tmp_path: Path) -> None:
    # Branch and step are filter keys: sealed with the content, the filter could not
    # see them and a fork's memories would reach the original.
    codec = EncryptionCodec(KeyRing.parse(new_key("k1")))
    sealed = MemoryManager(SealedStore(EdgeStore(tmp_path / "sealed"), codec), HashEmbedder(64))
    try:
        await write(sealed, FACT_1, written_by("O", 1))
        await write(sealed, FACT_3, written_by("O", 3))
        await write(sealed, FORK_FACT, written_by("F", 3, branch="F"))
        assert {r.text for r in await recall(sealed, None)} == {FACT_1, FACT_3}
        assert {r.text for r in await recall(sealed, FORK)} == {FACT_1, FORK_FACT}
    finally:
        await sealed.close()


def chained_turn(request: ModelRequest) -> ModelResponse:
    """The original remembers at steps 1 and 3; the fork remembers at step 3, then (in the
    next run of its chain) recalls at step 5 and answers what it recalled."""
    if said(request, NEW_PROMPT):
        if request.step == 3:
            return tool_call("remember", text=FORK_FACT, kind="fact")
        if request.step == 5:
            return RECALL_ALL
        return (
            reply(last_tool_result(request))
            if request.step > 5
            else tool_call("get_quote", symbol="GLOBEX")
        )
    return turn(request)


async def test_a_fork_keeps_its_memory_view_after_it_continues_as_new(
    client: Client, agents: AgentClient, task_queue: str, memory: MemoryManager
) -> None:
    model = ScriptedModel([chained_turn] * 30)
    async with agent_worker(
        client, ChainedResearcher, model=model, task_queue=task_queue, memory=memory
    ):
        original = await agents.start(
            ChainedResearcher, AgentInput(prompt="Learn about ACME", tenant="t1")
        )
        assert (await agents.result(original.id)).steps == 4
        fork = await agents.fork(original.id, at_step=2, prompt=NEW_PROMPT)
        forked = await agents.result(fork.id)
        history = await client.get_workflow_handle(fork.id).fetch_history()

    # The recall at step 5 ran in a later run of the fork's chain than its remember.
    started = history.events[0].workflow_execution_started_event_attributes
    assert forked.steps == 6 and started.continued_execution_run_id
    assert FACT_1 in forked.output and FORK_FACT in forked.output
    assert FACT_3 not in forked.output


async def test_a_memory_search_in_a_forks_branch_sees_what_the_fork_sees(
    client: Client, agents: AgentClient, task_queue: str, memory: MemoryManager
) -> None:
    model = ScriptedModel([chained_turn] * 30)
    query = "ACME GLOBEX earnings CFO buy"
    async with agent_worker(
        client, ChainedResearcher, model=model, task_queue=task_queue, memory=memory
    ):
        original = await agents.start(
            ChainedResearcher, AgentInput(prompt="Learn about ACME", tenant="t1")
        )
        await agents.result(original.id)
        fork = await agents.fork(original.id, at_step=2, prompt=NEW_PROMPT)
        await agents.result(fork.id)  # it continued as new after its own remember

        async def facts(branch: str | None) -> set[str]:
            hits = await agents.memory.search(
                query, tenant="t1", k=20, kinds=["fact"], branch=branch
            )
            return {hit.record.text for hit in hits}

        in_fork, in_original, shared = (
            await facts(fork.id),
            await facts(original.id),
            await facts(None),
        )
        with pytest.raises(AgentNotFoundError, match="no-such-run"):
            await facts("no-such-run")

    # The fork's branch: the original's memories up to step 2, and its own.
    assert in_fork == {FACT_1, FORK_FACT}
    # An ordinary run's view (the original's, or none named): no fork's memories.
    assert in_original == shared == {FACT_1, FACT_3}
