"""The research team example: researchers and a reviewer hand work over through memory.

Scripted models, an in-process worker with Qdrant Edge memory in a temporary
directory, and the session's real Temporal dev server.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.client import Client

from examples.research_team import FINDING, NAMESPACE, QUESTION, REVIEW, SUBTOPICS, starter
from examples.research_team.script import VERDICT, finding_text, scripted_models
from examples.research_team.team import research_input
from examples.research_team.tools import LIBRARY
from examples.research_team.workflows import REVIEWER_MODEL, Researcher, Reviewer
from smyth_temporal import AgentClient
from smyth_temporal.memory import EdgeStore, HashEmbedder, MemoryManager
from smyth_temporal.models import ModelRequest
from smyth_temporal.testing import agent_worker

PILOT, DATASHEET, SHARED = "acme-pilot-2023", "globex-datasheet-2025", "acme-fleet-review-2025"
"""The two sources that disagree on flight time, and the one on both subtopics."""


@pytest.fixture
async def memory(tmp_path: Path) -> AsyncIterator[MemoryManager]:
    manager = MemoryManager(EdgeStore(tmp_path / "memory"), HashEmbedder())
    yield manager
    await manager.close()


def turn(requests: list[ModelRequest], step: int) -> ModelRequest:
    """The last request of a model turn (a retried turn is asked again)."""
    return [r for r in requests if r.step == step][-1]


async def test_the_reviewer_works_from_what_the_researchers_stored(
    client: Client, agents: AgentClient, task_queue: str, memory: MemoryManager
) -> None:
    models = scripted_models()
    team_id = f"research-team-test-{uuid.uuid4().hex[:8]}"
    async with agent_worker(
        client, Researcher, Reviewer, model=models, task_queue=task_queue, memory=memory
    ):
        run = await starter.main(client, task_queue=task_queue, team_id=team_id)
        # Another tenant, the same namespace: none of the team's work is there.
        elsewhere = await agents.memory.list_memories(tenant="globex", namespace=NAMESPACE)
        searched = await agents.memory.search(QUESTION, tenant="globex", namespace=NAMESPACE, k=50)

    assert set(run.researchers) == set(SUBTOPICS)
    assert all(r.status == "completed" and r.steps == 3 for r in run.results.values())

    # The researchers ran at the same time.
    described = [
        await client.get_workflow_handle(workflow_id).describe()
        for workflow_id in run.researchers.values()
    ]
    closed = [d.close_time for d in described if d.close_time is not None]
    assert len(closed) == len(described)
    assert max(d.start_time for d in described) < min(closed)

    # Every source's finding is stored once, even the one both researchers stored.
    findings = [r for r in run.memories if r.kind == FINDING]
    texts = Counter(r.text for r in findings)
    assert all(count == 1 for count in texts.values())
    by_source = {s.id: next(r for r in findings if r.text == finding_text(s)) for s in LIBRARY}
    assert len(findings) == len(LIBRARY) + 1  # and the reviewer's correction

    # Provenance: the researcher that stored it, its run, its subtopic.
    for source in LIBRARY:
        record = by_source[source.id]
        assert record.scope.tenant == run.tenant == "acme-drones"
        assert record.provenance.agent == "Researcher"
        assert record.provenance.run_id
        assert record.provenance.step == 2
        subtopic = record.metadata["subtopic"]
        assert record.provenance.workflow_id == run.researchers[subtopic]
        assert record.metadata["question"] == QUESTION
        if source.id != SHARED:
            assert source.topics == [subtopic]
    # Both researchers stored the shared finding and were told the same id; the record
    # keeps the provenance of one of them, whole.
    shared = by_source[SHARED]
    assert all(f"[{shared.id}]" in run.results[w].output for w in run.researchers.values())
    assert shared.metadata["subtopic"] in SUBTOPICS

    # The handover: the reviewer's first turn saw only its instructions and the task...
    reviewer_requests = models[REVIEWER_MODEL].requests
    first = turn(reviewer_requests, 1)
    assert [m.role for m in first.messages] == ["system", "user"]
    assert not any(source.id in (m.content or "") for m in first.messages for source in LIBRARY)
    # ...and what it recalled held every finding of both researchers, with their ids.
    [recalled] = [m.content or "" for m in turn(reviewer_requests, 2).messages if m.role == "tool"]
    for record in by_source.values():
        assert f"[{record.id}] (finding, " in recalled
    assert {by_source[s.id].provenance.workflow_id for s in LIBRARY} == set(
        run.researchers.values()
    )

    # It corrected the older flight time, which stays on record, superseded.
    pilot = by_source[PILOT]
    [correction] = [r for r in findings if r.provenance.agent == "Reviewer"]
    assert pilot.superseded_by == correction.id
    assert by_source[DATASHEET].superseded_by is None
    assert correction.provenance.workflow_id == run.reviewer
    assert correction.text == (
        "Flight time per charge: 38 minutes with the production G2 on a D7 "
        "[globex-datasheet-2025, 2025; replaces acme-pilot-2023, 2023]"
    )

    # The review is the reviewer's answer, stored for whoever comes next.
    [review] = [r for r in run.memories if r.kind == REVIEW]
    assert review.text == run.review.output
    assert review.provenance.workflow_id == run.reviewer
    assert review.metadata["findings"] == sorted(r.id for r in by_source.values())
    assert [c["finding"] for c in review.metadata["corrections"]] == [pilot.id]
    lines = run.review.output.splitlines()
    assert lines[0] == f"Review: {QUESTION}"
    assert lines[1] == f"Findings: {len(LIBRARY)} recalled, 1 corrected."
    standing = [r for source, r in by_source.items() if source != PILOT]
    assert sorted(lines[2 : 2 + len(standing)]) == sorted(f"- {r.text} ({r.id})" for r in standing)
    assert lines[-2] == (
        f"Corrected: {pilot.text} ({pilot.id}), superseded by {correction.id}: {PILOT} (2023) "
        f"gives another value than the newer {DATASHEET} (2025)."
    )
    assert lines[-1] == VERDICT
    assert {r.id for r in run.memories} == {r.id for r in findings} | {review.id}

    assert elsewhere == []
    assert searched == []


async def test_concurrent_researchers_store_a_shared_finding_once(
    client: Client, agents: AgentClient, task_queue: str, memory: MemoryManager
) -> None:
    # Four researchers on the same subtopic at once: all store the same findings.
    team_id = f"research-team-test-{uuid.uuid4().hex[:8]}"
    workflow_ids = [f"{team_id}-researcher-{i}" for i in range(4)]
    task = research_input(QUESTION, "endurance", tenant="acme-drones", team_id=team_id)
    async with agent_worker(
        client, Researcher, model=scripted_models(), task_queue=task_queue, memory=memory
    ):
        results = await asyncio.gather(
            *(agents.run(Researcher, task, id=workflow_id) for workflow_id in workflow_ids)
        )
        stored = await agents.memory.list_memories(
            tenant="acme-drones", namespace=NAMESPACE, kinds=[FINDING]
        )

    expected = [finding_text(s) for s in LIBRARY if "endurance" in s.topics]
    assert sorted(r.text for r in stored) == sorted(expected)
    assert all(r.provenance.workflow_id in workflow_ids for r in stored)
    # Every researcher was told the ids of the records that are stored.
    ids = ", ".join(f"[{r.id}]" for r in sorted(stored, key=lambda r: expected.index(r.text)))
    assert {r.output for r in results} == {f"Stored 3 findings on endurance: {ids}."}
