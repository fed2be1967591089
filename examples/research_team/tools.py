"""The researchers' tool: a search over a small offline library about the question.

The sources are made up for the example. Two of them disagree: a 2023 pilot measured
a G2 prototype's flight time, the 2025 datasheet the production pack's. A cost
researcher and an endurance researcher each find one, and only the reviewer, who reads
both researchers' findings, sees the disagreement. One source is on both subtopics, so
both researchers store the same finding.
"""

from __future__ import annotations

from pydantic import BaseModel
from temporalio.exceptions import ApplicationError

from smyth_temporal import tool

__all__ = ["LIBRARY", "Source", "search_sources"]


class Source(BaseModel):
    """One document in the library, reduced to the measure it reports."""

    id: str
    """How findings cite it."""
    title: str
    year: int
    """When it was published."""
    topics: list[str]
    """The subtopics it is about."""
    measure: str
    """What it measures, e.g. ``Pack price``."""
    statement: str
    """What it says about the measure."""


LIBRARY: list[Source] = [
    Source(
        id="globex-quote-2025",
        title="GLOBEX quote for 400 G2 packs",
        year=2025,
        topics=["cost"],
        measure="Pack price",
        statement="$410 per drone for the G2, against $520 for the current pack",
    ),
    Source(
        id="acme-pilot-2023",
        title="D7 pilot: charging and operating costs",
        year=2023,
        topics=["cost"],
        measure="Flight time per charge",
        statement="31 minutes with a G2 prototype",
    ),
    Source(
        id="acme-fleet-review-2025",
        title="ACME fleet operations review 2025",
        year=2025,
        topics=["cost", "endurance"],
        measure="Charge cycles",
        statement="900 for the G2 down to 80% capacity, against 600 for the current pack",
    ),
    Source(
        id="globex-datasheet-2025",
        title="GLOBEX G2 datasheet, revision C",
        year=2025,
        topics=["endurance"],
        measure="Flight time per charge",
        statement="38 minutes with the production G2 on a D7",
    ),
    Source(
        id="globex-cold-test-2024",
        title="G2 cold-weather test report",
        year=2024,
        topics=["endurance"],
        measure="Capacity at -10 °C",
        statement="84% of the rated capacity",
    ),
]
"""The whole library, in the order searches list it."""


@tool
async def search_sources(topic: str) -> list[Source]:
    """Find the sources in the team's library on a subtopic of the question.

    Args:
        topic: The subtopic, e.g. "cost" or "endurance".
    """
    wanted = topic.strip().lower()
    found = [source for source in LIBRARY if wanted in source.topics]
    if not found:
        known = sorted({t for source in LIBRARY for t in source.topics})
        raise ApplicationError(
            f"no sources on {topic!r}; the library covers: {', '.join(known)}",
            non_retryable=True,
        )
    return found
