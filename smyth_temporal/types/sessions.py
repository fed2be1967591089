"""Persistent sessions (workflow side, pure): the messages a session takes and gives."""

from __future__ import annotations

from pydantic import BaseModel, Field

from smyth_temporal.types.messages import Usage

__all__ = [
    "CLOSE_SESSION_SIGNAL",
    "SESSION_EVENT_SIGNAL",
    "SESSION_MESSAGE_UPDATE",
    "SessionMessage",
    "SessionReply",
    "session_workflow_id",
]

SESSION_MESSAGE_UPDATE = "send_message"
"""Update carrying a ``SessionMessage``; answers the agent's ``SessionReply``."""

SESSION_EVENT_SIGNAL = "post_event"
"""Signal carrying a ``SessionMessage`` the agent handles without anyone waiting."""

CLOSE_SESSION_SIGNAL = "close_session"
"""Signal that ends a session once the messages already queued are answered."""


class SessionMessage(BaseModel):
    """A message for a persistent session.

    Added in 0.2.0.
    """

    text: str
    """What the user says (or what happened, for an event)."""
    tenant: str = "default"
    """Whose session the sender believes it is; a mismatch is refused."""
    sender: str | None = None
    """Who sends it (for the audit trail)."""


class SessionReply(BaseModel):
    """The agent's answer to one ``SessionMessage``.

    Added in 0.2.0.
    """

    text: str
    """The answer."""
    number: int
    """Which message of the session this answers (the first is 1)."""
    step: int
    """The agent's step count after answering."""
    usage: Usage = Field(default_factory=Usage)
    """The session's usage so far."""


def session_workflow_id(agent: str, tenant: str, session_id: str) -> str:
    """The workflow id of a session: one per agent, tenant and session id.

    Added in 0.2.0.
    """
    return f"{agent}-session-{tenant}-{session_id}"
