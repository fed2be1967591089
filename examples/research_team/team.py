"""Who does what in the team: the input each member starts from.

The starter builds these inputs today. A lead agent that delegated to its members as
child workflows would build the same ones, so the members would not change. Pure
(pydantic and smyth_temporal's types only): safe to import from workflow code.
"""

from __future__ import annotations

from collections.abc import Sequence

from smyth_temporal import AgentInput

__all__ = [
    "QUESTION_PREFIX",
    "SUBTOPIC_PREFIX",
    "question_of",
    "research_input",
    "review_input",
    "subtopic_of",
]

QUESTION_PREFIX = "Team question: "
"""Starts the line of every member's task that states the question."""

SUBTOPIC_PREFIX = "Your subtopic: "
"""Starts the line of a researcher's task that names its subtopic."""


def research_input(question: str, subtopic: str, *, tenant: str, team_id: str) -> AgentInput:
    """The task of the researcher of one subtopic.

    Args:
        question: The team's question.
        subtopic: The part of it this researcher covers.
        tenant: Whose memory the team works in.
        team_id: Groups the runs of one team job (``AgentInput.session_id``).

    Returns:
        The input. Its metadata names the question and the subtopic, which the
        researcher attaches to every finding it stores.
    """
    prompt = (
        f"{QUESTION_PREFIX}{question}\n"
        f"{SUBTOPIC_PREFIX}{subtopic}\n"
        "Find the sources on your subtopic and store what they say as findings for the "
        "team. A reviewer reads them after you."
    )
    return AgentInput(
        prompt=prompt,
        tenant=tenant,
        session_id=team_id,
        metadata={"question": question, "subtopic": subtopic},
    )


def review_input(
    question: str, subtopics: Sequence[str], *, tenant: str, team_id: str
) -> AgentInput:
    """The task of the reviewer: the question and who worked on it, nothing more.

    Everything the researchers found reaches the reviewer through memory.

    Args:
        question: The team's question.
        subtopics: The subtopics the researchers covered.
        tenant: Whose memory the team works in.
        team_id: Groups the runs of one team job (``AgentInput.session_id``).
    """
    prompt = (
        f"{QUESTION_PREFIX}{question}\n"
        f"Researchers have covered: {', '.join(subtopics)}. Their findings are in the "
        "team's memory. Review them and answer the question."
    )
    return AgentInput(
        prompt=prompt, tenant=tenant, session_id=team_id, metadata={"question": question}
    )


def question_of(prompt: str) -> str | None:
    """The question a member's task states, if any."""
    return _line(prompt, QUESTION_PREFIX)


def subtopic_of(prompt: str) -> str | None:
    """The subtopic a researcher's task names, if any."""
    return _line(prompt, SUBTOPIC_PREFIX)


def _line(prompt: str, prefix: str) -> str | None:
    for line in prompt.splitlines():
        if line.startswith(prefix):
            return line.removeprefix(prefix).strip()
    return None
