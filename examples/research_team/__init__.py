"""Research team: agents that hand work over through shared long-term memory.

Two ``Researcher`` runs work on one question at the same time, each on its own
subtopic, and store what they find in the team's memory namespace. Then a ``Reviewer``
run starts knowing only the question: it recalls the findings, corrects one that a
newer finding contradicts, and stores its review there too. See README.md in this
folder.
"""

__all__ = [
    "DEFAULT_TENANT",
    "FINDING",
    "NAMESPACE",
    "QUESTION",
    "REVIEW",
    "SUBTOPICS",
]

QUESTION = "Should ACME switch its D7 delivery drones to the GLOBEX G2 battery pack?"
"""The question the team works on."""

SUBTOPICS = ("cost", "endurance")
"""One researcher per subtopic; ``search_sources`` knows these topics."""

NAMESPACE = "research-team"
"""The memory namespace the team shares: every member reads and writes here."""

DEFAULT_TENANT = "acme-drones"
"""Whose memory the team works in; another tenant never sees any of it."""

FINDING = "finding"
"""The memory kind of a researcher's finding (one measure, one source)."""

REVIEW = "review"
"""The memory kind of the reviewer's review."""
