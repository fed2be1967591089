"""Agents with memory on a real dev server, with real Qdrant (Edge on disk)."""

from __future__ import annotations

import ast
import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.exceptions import ApplicationError

from smyth_temporal import AgentClient, AgentInput
from smyth_temporal.memory import EdgeStore, HashEmbedder, MemoryManager
from smyth_temporal.memory._store import StoredPoint
from smyth_temporal.models import ModelRequest, ModelResponse
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from tests.helpers.agents import Analyst
from tests.helpers.memory_agents import Archivist, Researcher, Reviewer


def memory_at(path: Path) -> MemoryManager:
    return MemoryManager(EdgeStore(path), HashEmbedder(64))


@pytest.fixture
async def memory_path(tmp_path: Path) -> AsyncIterator[Path]:
    yield tmp_path / "memory"


def system_text(request: ModelRequest) -> str:
    return "\n".join(m.content or "" for m in request.messages if m.role == "system")


async def test_remember_in_one_run_recall_in_a_later_run_after_a_restart(
    client: Client, agents: AgentClient, task_queue: str, memory_path: Path
) -> None:
    learn = ScriptedModel(
        [
            tool_call("remember", text="ACME reports earnings on May 3", kind="fact"),
            tool_call("get_quote", symbol="ACME"),
            reply("Noted ACME's earnings date."),
        ]
    )
    first = memory_at(memory_path)
    async with agent_worker(
        client, Researcher, Reviewer, model=learn, task_queue=task_queue, memory=first
    ):
        learned = await agents.start(Researcher, AgentInput(prompt="Learn about ACME", tenant="t1"))
        await agents.result(learned.id)
    await first.close()

    seen: list[str] = []

    def answer(request: ModelRequest) -> ModelResponse:
        seen.append(system_text(request))
        return tool_call("recall", query="when does ACME report earnings")

    recall_model = ScriptedModel(
        [answer, lambda r: reply([m.content for m in r.messages if m.role == "tool"][-1] or "")]
    )
    # A new worker with a new store object on the same files: a restart.
    second = memory_at(memory_path)
    async with agent_worker(
        client, Researcher, Reviewer, model=recall_model, task_queue=task_queue, memory=second
    ):
        result = await agents.run(
            Reviewer, AgentInput(prompt="When does ACME report earnings?", tenant="t1")
        )
        episodes = await agents.memory.list_memories(
            tenant="t1", namespace="research", kinds=["episode"]
        )
    await second.close()

    # Before its first turn the reviewer got the fact in a delimited block, with its id.
    assert "<memories>" in seen[0]
    assert "ACME reports earnings on May 3" in seen[0]
    # The built-in recall tool found it too.
    assert "ACME reports earnings on May 3" in result.output
    # Each finished run left an episode: task, outcome and key tool results.
    texts = sorted(e.text for e in episodes)
    assert len(texts) == 2
    learned_episode = next(t for t in texts if t.startswith("Task: Learn about ACME"))
    assert "Outcome (completed, 3 steps): Noted ACME's earnings date." in learned_episode
    assert "- get_quote: 101.5" in learned_episode


async def test_tenants_never_see_each_other(
    client: Client, agents: AgentClient, task_queue: str, memory_path: Path
) -> None:
    secret = "t1 secret: the merger closes Friday"

    def leak_probe(request: ModelRequest) -> ModelResponse:
        return tool_call("recall", query="merger closes Friday", k=20)

    model = ScriptedModel(
        [
            tool_call("remember", text=secret),
            reply("stored"),
        ]
    )
    memory = memory_at(memory_path)
    async with agent_worker(client, Researcher, model=model, task_queue=task_queue, memory=memory):
        await agents.run(Researcher, AgentInput(prompt="store", tenant="t1"))
    probe = ScriptedModel(
        [leak_probe, lambda r: reply([m.content for m in r.messages if m.role == "tool"][-1] or "")]
    )
    async with agent_worker(client, Reviewer, model=probe, task_queue=task_queue, memory=memory):
        other = await agents.run(Reviewer, AgentInput(prompt="merger closes Friday", tenant="t2"))
        # Every client path, scoped to the other tenant, finds nothing of t1's.
        hits = await agents.memory.search("merger closes Friday", tenant="t2", namespace="research")
        listed = await agents.memory.list_memories(tenant="t2", namespace="research")
        [t1_fact] = [
            r
            for r in await agents.memory.list_memories(tenant="t1", namespace="research")
            if r.kind == "fact"
        ]
        forgotten = await agents.memory.forget([t1_fact.id], tenant="t2", namespace="research")
        undone = await agents.memory.undo_run(t1_fact.provenance.workflow_id, tenant="t2")
        still = await agents.memory.search("merger", tenant="t1", namespace="research")
    await memory.close()

    assert secret not in other.output
    assert other.output == "No memories match."
    # t2's own episode mentions the merger prompt; none of t1's memories appear.
    assert all(h.record.scope.tenant == "t2" for h in hits)
    assert secret not in [h.record.text for h in hits]
    assert all(r.scope.tenant == "t2" for r in listed)
    assert (forgotten, undone) == (0, 0)
    assert secret in [h.record.text for h in still]


async def test_building_blocks_are_idempotent_and_supersede(
    client: Client, agents: AgentClient, task_queue: str, memory_path: Path
) -> None:
    memory = memory_at(memory_path)
    async with agent_worker(
        client, Archivist, model=ScriptedModel([]), task_queue=task_queue, memory=memory
    ):
        result = await agents.run(Archivist, "ACME is a widget maker\nGLOBEX makes gadgets")
        listed = await agents.memory.list_memories(namespace="archive")
    await memory.close()

    summary = ast.literal_eval(result.output.strip())
    assert summary["again"] == summary["stored"]  # nothing stored twice
    assert len(listed) == 3  # two facts, one revision
    old_id = summary["stored"][0]
    old = next(r for r in listed if r.id == old_id)
    assert old.superseded_by == summary["newer"]
    # The superseded memory is kept for audit but no longer recalled.
    assert old_id not in summary["recalled"]
    assert summary["newer"] in summary["recalled"]


class FailAfterWrite:
    """Wraps a store: the first upsert succeeds, then the activity fails (once)."""

    def __init__(self, inner: EdgeStore) -> None:
        self.inner = inner
        self.failed = False
        self.upserts = 0

    def __getattr__(self, name: str) -> Callable[..., object]:
        return getattr(self.inner, name)  # type: ignore[no-any-return]

    async def upsert(self, collection: str, points: list[StoredPoint]) -> None:
        self.upserts += 1
        await self.inner.upsert(collection, points)
        if not self.failed:
            self.failed = True
            raise ApplicationError("lost the connection after writing", non_retryable=False)


async def test_remember_is_idempotent_under_activity_retries(
    client: Client, agents: AgentClient, task_queue: str, memory_path: Path
) -> None:
    store = FailAfterWrite(EdgeStore(memory_path))
    memory = MemoryManager(store, HashEmbedder(64))  # type: ignore[arg-type]
    model = ScriptedModel([tool_call("remember", text="INITECH is hiring"), reply("ok")])
    async with agent_worker(client, Researcher, model=model, task_queue=task_queue, memory=memory):
        handle = await agents.start(Researcher, AgentInput(prompt="note it", tenant="t9"))
        await agents.result(handle.id)
        facts = await agents.memory.list_memories(tenant="t9", namespace="research", kinds=["fact"])
    await memory.close()

    assert store.failed
    assert [f.text for f in facts] == ["INITECH is hiring"]
    history = await client.get_workflow_handle(handle.id).fetch_history()
    attempts = [
        e.activity_task_started_event_attributes.attempt
        for e in history.events
        if e.HasField("activity_task_started_event_attributes")
    ]
    assert 2 in attempts  # the write really was retried


async def test_concurrent_writers_in_a_shared_namespace_lose_nothing(
    client: Client, agents: AgentClient, task_queue: str, memory_path: Path
) -> None:
    memory = memory_at(memory_path)
    facts = [f"fact number {i}" for i in range(12)]
    models = ScriptedModel(
        [lambda r: tool_call("remember", text=r.messages[-1].content or ""), reply("ok")]
    )
    async with agent_worker(
        client, Researcher, Reviewer, model=models, task_queue=task_queue, memory=memory
    ):
        await asyncio.gather(
            *(
                agents.run(Researcher if i % 2 else Reviewer, AgentInput(prompt=fact))
                for i, fact in enumerate(facts)
            )
        )
        stored = await agents.memory.list_memories(namespace="research", kinds=["fact"], limit=100)
        undone = await agents.memory.undo_run(stored[0].provenance.workflow_id)
        after = await agents.memory.list_memories(namespace="research", limit=100)
    await memory.close()

    assert sorted(r.text for r in stored) == sorted(facts)
    # Undo removes what that one run wrote: its fact and its episode.
    assert undone == 2
    assert stored[0].id not in {r.id for r in after}
    assert len(after) == 2 * len(facts) - 2


async def test_any_worker_of_the_queue_serves_memory_search(
    client: Client,
    agents: AgentClient,
    task_queue: str,
    memory_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One run of a memory agent writes a fact; then the queue's only worker hosts an
    # agent without memory, and searching and listing still work through it (before,
    # they waited for a worker that also hosted a memory agent, so an application
    # needed two workers and two gateways for its two kinds of agents). Both workers
    # take the default memory from the settings, as `smyth worker` does.
    monkeypatch.setenv("SMYTH_MEMORY_PATH", str(memory_path))
    learn = ScriptedModel([tool_call("remember", text="GLOBEX moved to Austin"), reply("Noted.")])
    async with agent_worker(client, Researcher, model=learn, task_queue=task_queue):
        await agents.run(Researcher, AgentInput(prompt="Note GLOBEX's move.", tenant="t9"))

    async with agent_worker(client, Analyst, model=ScriptedModel([]), task_queue=task_queue):
        hits = await agents.memory.search("Where is GLOBEX?", tenant="t9", namespace="research")
        facts = await agents.memory.list_memories(tenant="t9", namespace="research", kinds=["fact"])

    assert [hit.record.text for hit in hits][:1] == ["GLOBEX moved to Austin"]
    assert [record.text for record in facts] == ["GLOBEX moved to Austin"]
