"""The team's agents: researchers that store findings, a reviewer that reads them.

The agents never talk to each other. They share the memory namespace ``NAMESPACE``,
in the tenant of their input, and that is the whole handover: a researcher stores its
findings there, and the reviewer recalls them from there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError

from smyth_temporal import (
    AgentConfig,
    AgentInput,
    AgentResult,
    AgentWorkflow,
    MemoryHit,
    MemoryRecord,
    Tool,
    ToolCall,
    ToolCallError,
    ToolExecutor,
    UserError,
    tool,
)

# The tool runs only on workers (as an activity); the workflow reads its spec.
# Passing the modules through keeps the sandbox from re-importing them for every run.
with workflow.unsafe.imports_passed_through():
    from examples.research_team import FINDING, NAMESPACE, REVIEW
    from examples.research_team.tools import search_sources

__all__ = [
    "RESEARCHER_INSTRUCTIONS",
    "RESEARCHER_MODEL",
    "REVIEWER_INSTRUCTIONS",
    "REVIEWER_MODEL",
    "Researcher",
    "Reviewer",
    "correct_finding",
]

RESEARCHER_MODEL = "gpt-4o-mini"
"""The model researchers ask for; a worker's provider resolves the name."""

REVIEWER_MODEL = "gpt-4o"
"""The model the reviewer asks for (a stronger one: it judges the others' work)."""

RESEARCHER_INSTRUCTIONS = f"""\
You research one subtopic of a question for a team. Look the subtopic up with \
search_sources; never make up a number. Store every source's finding for the team with \
the remember tool, kind "{FINDING}", one finding per source, written as \
"<measure>: <what the source says> [<source id>, <year>]", so a reviewer can check it \
and compare findings. Then say in one line what you stored."""
"""The researchers' system prompt."""

REVIEWER_INSTRUCTIONS = f"""\
You review a research team's work. You know nothing about it but what the team's \
memory holds, so first recall the findings (kind "{FINDING}"). Check that they agree. \
When two findings give different values for the same measure, the one from the newer \
source stands: correct the older one with correct_finding. Then write the review: one \
line per finding it rests on (with its id), the corrections you made, and the answer \
the findings support."""
"""The reviewer's system prompt."""


@workflow.defn
class Researcher(AgentWorkflow):
    """Researches one subtopic and stores its findings in the team's memory.

    Every memory it stores carries the question and subtopic of its task as metadata,
    besides the provenance every memory has (agent, workflow id, run, step).
    """

    config = AgentConfig(
        model=RESEARCHER_MODEL,
        instructions=RESEARCHER_INSTRUCTIONS,
        tools=[search_sources],
        memory_namespace=NAMESPACE,
        # A researcher starts from its own subtopic; what a teammate working at the
        # same time has stored so far is a matter of timing.
        memory_recall_k=0,
        # The namespace holds the team's work (findings, reviews); each run's history
        # is its own record.
        memory_episodes=False,
        max_steps=8,
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        """Run the default agent loop on the task."""
        return await self.run_agent(input)

    async def remember(self, text: str | Sequence[str], **options: Any) -> list[MemoryRecord]:
        """Store memories as every agent does, tagged with this researcher's part.

        The built-in ``remember`` tool stores through this method too, so the findings
        the model stores carry ``question`` and ``subtopic`` in their metadata.
        """
        given = self.input.metadata
        part = {key: given[key] for key in ("question", "subtopic") if key in given}
        options["metadata"] = {**part, **(options.get("metadata") or {})}
        records: list[MemoryRecord] = await super().remember(text, **options)
        return records


REVIEW_EXECUTOR = "review"
"""The executor that runs ``correct_finding``: the Reviewer workflow itself."""


@tool(effect="idempotent", executor=REVIEW_EXECUTOR)
async def correct_finding(finding_id: str, correction: str, reason: str) -> str:
    """Replace a finding that is wrong or out of date with a corrected one.

    The old finding stays on record for audit, marked as superseded by the new one,
    and is no longer recalled.

    Args:
        finding_id: The id of the finding to correct, as recall showed it.
        correction: The corrected finding, written like the others.
        reason: Why the old finding is wrong.
    """
    # The reviewer's own tool: the Reviewer workflow runs it (see
    # ``Reviewer.tool_executors``) with the ``supersede`` building block, never as an
    # activity, so this body is only its signature.
    raise UserError("correct_finding is run by the Reviewer workflow itself")


@workflow.defn
class Reviewer(AgentWorkflow):
    """Reviews the team's findings, knowing only what the team's memory holds.

    It has no research tools: it recalls the findings with the built-in ``recall``
    tool, corrects those a newer source contradicts (``correct_finding``), answers,
    and stores its answer in the team's memory as a ``review``.
    """

    config = AgentConfig(
        model=REVIEWER_MODEL,
        instructions=REVIEWER_INSTRUCTIONS,
        tools=[correct_finding],
        memory_namespace=NAMESPACE,
        # Nothing is put into the prompt up front: the model recalls what it needs.
        memory_recall_k=0,
        memory_episodes=False,
        max_steps=8,
    )

    def __init__(self) -> None:
        super().__init__()
        self.reviewed: set[str] = set()
        """The ids of the findings the reviewer has recalled."""
        self.corrections: list[dict[str, str]] = []
        """The corrections made: ``finding``, ``by`` (the correction's id) and ``reason``."""

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        """Run the default agent loop, then store the answer as the team's review."""
        result = await self.run_agent(input)
        if result.status == "completed":
            await self.remember(
                result.output,
                kind=REVIEW,
                metadata={
                    "question": input.metadata.get("question", input.prompt),
                    "findings": sorted(self.reviewed),
                    "corrections": self.corrections,
                },
            )
        return result

    async def recall(self, query: str, **options: Any) -> list[MemoryHit]:
        """Recall as every agent does, and note the findings seen (for the review)."""
        hits: list[MemoryHit] = await super().recall(query, **options)
        self.reviewed.update(h.record.id for h in hits if h.record.kind == FINDING)
        return hits

    def tool_executors(self) -> dict[str, ToolExecutor]:
        """``correct_finding`` runs here, in workflow code."""
        return {REVIEW_EXECUTOR: self.correct_finding}

    async def correct_finding(self, spec: Tool, call: ToolCall, arguments: dict[str, Any]) -> str:
        """Supersede a finding the reviewer has recalled; the model hears what happened."""
        old_id = arguments["finding_id"]
        if old_id not in self.reviewed:
            raise ToolCallError(
                f"no finding {old_id} among those you recalled; recall the findings "
                "and use an id from there."
            )
        try:
            record = await self.supersede(old_id, arguments["correction"])
        except ActivityError as exc:  # the finding was deleted since it was recalled
            raise ToolCallError(str(exc.cause or exc)) from exc
        self.corrections.append({"finding": old_id, "by": record.id, "reason": arguments["reason"]})
        return f"Corrected: [{old_id}] is superseded by [{record.id}]."
