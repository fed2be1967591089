"""Run the research team once and print its report.

    python -m examples.research_team.starter

A worker must be running (see worker.py). The researchers run at the same time; the
reviewer starts when they are done and knows only the question: everything else it
reads from the team's memory. At the end the script lists what that memory holds.
"""

from __future__ import annotations

import asyncio
import textwrap
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from temporalio.client import Client

from examples.research_team import DEFAULT_TENANT, NAMESPACE, QUESTION, SUBTOPICS
from examples.research_team.team import research_input, review_input
from examples.research_team.workflows import Researcher, Reviewer
from smyth_temporal import AgentClient, AgentResult, MemoryRecord

_MEMORY_LIMIT = 200
"""The most memories the report lists."""


@dataclass(frozen=True)
class TeamRun:
    """What one run of the team did."""

    team_id: str
    """Groups the runs (their ``session_id``) and prefixes their workflow ids."""
    tenant: str
    """Whose memory the team worked in."""
    researchers: dict[str, str]
    """The researchers' workflow ids, by subtopic."""
    reviewer: str
    """The reviewer's workflow id."""
    results: dict[str, AgentResult]
    """Every member's result, by workflow id."""
    memories: list[MemoryRecord]
    """The team's memory afterwards (the tenant's namespace), newest first."""

    @property
    def review(self) -> AgentResult:
        """The reviewer's result: the review."""
        return self.results[self.reviewer]


async def main(
    client: Client | None = None,
    *,
    task_queue: str | None = None,
    tenant: str = DEFAULT_TENANT,
    question: str = QUESTION,
    subtopics: Sequence[str] = SUBTOPICS,
    team_id: str | None = None,
) -> TeamRun:
    """Run the team once: the researchers concurrently, then the reviewer.

    Args:
        client: A client with ``SmythPlugin`` (default: connect as the environment says).
        task_queue: Where the worker listens (default: ``SMYTH_TASK_QUEUE`` or
            ``smyth-agents``).
        tenant: Whose memory the team works in.
        question: The question.
        subtopics: One researcher for each.
        team_id: Prefix of the workflow ids (default: ``research-team-<random>``).
    """
    if client is None:
        agents = await AgentClient.connect()
        agents.task_queue = task_queue or agents.task_queue
    else:
        agents = AgentClient(client, task_queue=task_queue)
    team_id = team_id or f"research-team-{uuid.uuid4().hex[:8]}"
    print(f"Team {team_id} on: {question}")
    print(f"Memory: tenant {tenant!r}, namespace {NAMESPACE!r}")

    researchers = {subtopic: f"{team_id}-researcher-{subtopic}" for subtopic in subtopics}
    found = await asyncio.gather(
        *(
            agents.run(
                Researcher,
                research_input(question, subtopic, tenant=tenant, team_id=team_id),
                id=workflow_id,
            )
            for subtopic, workflow_id in researchers.items()
        )
    )
    results = dict(zip(researchers.values(), found, strict=True))
    for workflow_id, result in results.items():
        _print_result(workflow_id, result)

    # The handover: the reviewer is told the question and who worked on it, no more.
    reviewer = f"{team_id}-reviewer"
    results[reviewer] = await agents.run(
        Reviewer, review_input(question, subtopics, tenant=tenant, team_id=team_id), id=reviewer
    )
    review = results[reviewer]
    print(f"  {reviewer}: {review.status} in {review.steps} steps; its review:\n")
    print(textwrap.indent(review.output, "    "))

    memories = await agents.memory.list_memories(
        tenant=tenant, namespace=NAMESPACE, limit=_MEMORY_LIMIT
    )
    print(f"\nThe team's memory holds {len(memories)} records:")
    for record in sorted(memories, key=lambda r: (r.kind, r.text)):
        print(_describe(record))
    return TeamRun(
        team_id=team_id,
        tenant=tenant,
        researchers=researchers,
        reviewer=reviewer,
        results=results,
        memories=memories,
    )


def _print_result(workflow_id: str, result: AgentResult) -> None:
    summary = result.output.splitlines()[0] if result.output else ""
    print(f"  {workflow_id}: {result.status} in {result.steps} steps. {summary}")


def _describe(record: MemoryRecord) -> str:
    """One line per memory: short id, kind, who wrote it, state, first line of the text."""
    written = record.provenance.workflow_id or record.provenance.agent or "?"
    subtopic = record.metadata.get("subtopic")
    by = f"{written} ({subtopic})" if subtopic else written
    state = f", superseded by {record.superseded_by[:8]}" if record.superseded_by else ""
    text = record.text.splitlines()[0]
    return f"  {record.id[:8]} {record.kind:<8} by {by}{state}: {text}"


async def _main() -> None:
    try:
        await main()
    finally:
        # temporalio's core threads release objects for a moment after the last call;
        # exiting meanwhile can abort the interpreter (temporalio/sdk-python#300).
        await asyncio.sleep(0.1)


if __name__ == "__main__":
    asyncio.run(_main())
