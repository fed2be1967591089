"""Scripted models playing the team, so the example runs offline.

Each member asks for its own model name, so one mapping serves the team: the
researchers' model plays ``RESEARCH_SESSION`` and the reviewer's ``REVIEW_SESSION``.
Every turn is a function of the request, as a model's answer is: a researcher stores
what its search returned, and the reviewer compares and corrects the findings its
recall returned (it is told nothing else).

Serve them with ``smyth worker examples.research_team.workflows:Researcher
examples.research_team.workflows:Reviewer --model
examples.research_team.script:scripted_models``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from examples.research_team import FINDING
from examples.research_team.team import question_of, subtopic_of
from examples.research_team.tools import Source
from examples.research_team.workflows import RESEARCHER_MODEL, REVIEWER_MODEL
from smyth_temporal import Message
from smyth_temporal.models import ModelRequest, ModelResponse
from smyth_temporal.testing import ScriptedModel, ScriptStep, reply, tool_call

__all__ = [
    "RESEARCH_SESSION",
    "REVIEW_SESSION",
    "VERDICT",
    "Finding",
    "correct_conflicts",
    "finding_text",
    "parse_finding",
    "recall_findings",
    "recalled_findings",
    "report_stored",
    "scripted_models",
    "search_subtopic",
    "store_findings",
    "write_review",
]

VERDICT = (
    "Answer: switch to the G2. It costs less per drone, lasts more charge cycles and flies "
    "longer per charge; plan for its lower capacity in cold weather."
)
"""The reviewer's judgement in this session (the rest of the review comes from memory)."""

_HIT = re.compile(r"^- \[(?P<id>[^\]]+)\] \((?P<kind>[^,]+), [^)]*\) (?P<text>.*)$")
"""A line of the recall tool's answer: ``- [id] (kind, date) text``."""

_FINDING = re.compile(
    r"^(?P<measure>[^:]+): (?P<statement>.+) \[(?P<source>[^,\]]+), (?P<year>\d{4})[^\]]*\]$"
)
"""A finding as the researchers' instructions ask for it."""

_ID = re.compile(r"\[([^\]]+)\]")
"""A memory id in a tool result, as ``[id]``."""


@dataclass(frozen=True)
class Finding:
    """A finding read back from memory."""

    id: str
    """Its memory id."""
    measure: str
    statement: str
    source: str
    year: int
    text: str
    """The whole text, as stored."""


def finding_text(source: Source) -> str:
    """A source's finding, written as the researchers' instructions ask."""
    return f"{source.measure}: {source.statement} [{source.id}, {source.year}]"


def parse_finding(memory_id: str, text: str) -> Finding | None:
    """The finding a memory's text states, or ``None`` if it is not written as one."""
    match = _FINDING.match(text)
    if match is None:
        return None
    return Finding(
        id=memory_id,
        measure=match["measure"],
        statement=match["statement"],
        source=match["source"],
        year=int(match["year"]),
        text=text,
    )


# -- the researchers -------------------------------------------------------------------


def search_subtopic(request: ModelRequest) -> ModelResponse:
    """Researcher turn 1: search the library for the subtopic the task names."""
    return tool_call("search_sources", topic=subtopic_of(_task(request)) or "")


def store_findings(request: ModelRequest) -> ModelResponse:
    """Researcher turn 2: store one finding per source found, all in one turn."""
    [(_, content)] = _results(request, "search_sources")
    try:
        sources = [Source.model_validate(s) for s in json.loads(content)]
    except json.JSONDecodeError:
        return reply(f"I found nothing to store: {content}")
    return _turn([tool_call("remember", text=finding_text(s), kind=FINDING) for s in sources])


def report_stored(request: ModelRequest) -> ModelResponse:
    """Researcher turn 3: say what was stored, with the memory ids."""
    ids = [_ID.findall(content) for _, content in _results(request, "remember")]
    stored = ", ".join(f"[{i}]" for found in ids for i in found)
    return reply(f"Stored {len(ids)} findings on {subtopic_of(_task(request))}: {stored}.")


RESEARCH_SESSION: list[ScriptStep] = [search_subtopic, store_findings, report_stored]
"""A researcher's session, one step per model turn."""


# -- the reviewer ----------------------------------------------------------------------


def recall_findings(request: ModelRequest) -> ModelResponse:
    """Reviewer turn 1: recall the team's findings on the question (all it has to go on)."""
    return tool_call("recall", query=question_of(_task(request)) or _task(request), k=20)


def recalled_findings(request: ModelRequest) -> list[Finding]:
    """The findings in the recall tool's answers, in the order recalled."""
    findings: dict[str, Finding] = {}
    for _, content in _results(request, "recall"):
        for line in content.splitlines():
            hit = _HIT.match(line)
            if hit is None or hit["kind"] != FINDING:
                continue
            finding = parse_finding(hit["id"], hit["text"])
            if finding is not None:
                findings.setdefault(finding.id, finding)
    return list(findings.values())


def correct_conflicts(request: ModelRequest) -> ModelResponse:
    """Reviewer turn 2: where findings disagree on a measure, correct the older ones.

    With nothing to correct, the review comes at once.
    """
    calls: list[ModelResponse] = []
    for old, newest in _conflicts(recalled_findings(request)):
        correction = (
            f"{old.measure}: {newest.statement} "
            f"[{newest.source}, {newest.year}; replaces {old.source}, {old.year}]"
        )
        reason = (
            f"{old.source} ({old.year}) gives another value than the newer {newest.source} "
            f"({newest.year})"
        )
        calls.append(
            tool_call("correct_finding", finding_id=old.id, correction=correction, reason=reason)
        )
    if not calls:
        return write_review(request)
    return _turn(calls)


def write_review(request: ModelRequest) -> ModelResponse:
    """Reviewer turn 3: the review, from the recalled findings and the corrections."""
    corrected: dict[str, str] = {}
    for args, content in _results(request, "correct_finding"):
        if content.startswith("Corrected:"):  # not an error
            new_id = _ID.findall(content)[-1]
            corrected[args["finding_id"]] = f"superseded by {new_id}: {args['reason']}"
    findings = recalled_findings(request)
    standing = [f for f in findings if f.id not in corrected]
    lines = [
        f"Review: {question_of(_task(request))}",
        f"Findings: {len(findings)} recalled, {len(corrected)} corrected.",
        *(f"- {f.text} ({f.id})" for f in sorted(standing, key=lambda f: f.measure)),
    ]
    lines += [
        f"Corrected: {f.text} ({f.id}), {corrected[f.id]}." for f in findings if f.id in corrected
    ]
    lines.append(VERDICT)
    return reply("\n".join(lines))


REVIEW_SESSION: list[ScriptStep] = [recall_findings, correct_conflicts, write_review]
"""The reviewer's session, one step per model turn."""


def scripted_models() -> dict[str, ScriptedModel]:
    """Fresh scripted models for the team, by the model name each member asks for."""
    return {
        RESEARCHER_MODEL: ScriptedModel(RESEARCH_SESSION),
        REVIEWER_MODEL: ScriptedModel(REVIEW_SESSION),
    }


def _task(request: ModelRequest) -> str:
    """The agent's task: the first user message."""
    return next((m.content or "" for m in request.messages if m.role == "user"), "")


def _turn(calls: list[ModelResponse]) -> ModelResponse:
    """One turn making every tool call of ``calls``."""
    merged = [call for response in calls for call in response.message.tool_calls]
    return ModelResponse(message=Message(role="assistant", tool_calls=merged))


def _results(request: ModelRequest, tool: str) -> list[tuple[dict[str, Any], str]]:
    """The calls of ``tool`` in the conversation: their arguments and results, in order."""
    calls = {
        call.id: json.loads(call.arguments)
        for message in request.messages
        for call in message.tool_calls
        if call.name == tool
    }
    return [
        (calls[m.tool_call_id], m.content or "")
        for m in request.messages
        if m.role == "tool" and m.tool_call_id in calls
    ]


def _conflicts(findings: list[Finding]) -> list[tuple[Finding, Finding]]:
    """``(older, newest)`` for every finding that the newest on its measure contradicts."""
    by_measure: dict[str, list[Finding]] = {}
    for finding in findings:
        by_measure.setdefault(finding.measure, []).append(finding)
    conflicts = []
    for group in by_measure.values():
        newest = max(group, key=lambda f: f.year)
        conflicts += [(f, newest) for f in group if f.statement != newest.statement]
    return conflicts
