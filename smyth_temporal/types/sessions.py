"""Persistent sessions (workflow side, pure): the messages a session takes and gives."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from smyth_temporal.types.messages import Usage

__all__ = [
    "CLOSE_SESSION_SIGNAL",
    "SESSION_EVENT_SIGNAL",
    "SESSION_MESSAGE_UPDATE",
    "SessionMessage",
    "SessionReply",
    "WhileBusy",
    "session_workflow_id",
]

SESSION_MESSAGE_UPDATE = "send_message"
"""Update carrying a ``SessionMessage``; answers the agent's ``SessionReply``."""

SESSION_EVENT_SIGNAL = "post_event"
"""Signal carrying a ``SessionMessage`` the agent handles without anyone waiting."""

CLOSE_SESSION_SIGNAL = "close_session"
"""Signal that ends a session once the messages already queued are answered."""


WhileBusy = Literal["enqueue", "reject", "interrupt", "steer"]
"""What a session does with a message that arrives while it answers another one.

- ``enqueue``: answer it after the current one (the default).
- ``reject``: refuse it with a clear error; nothing is recorded.
- ``interrupt``: stop the current turn (completed tool calls stay done), then answer it.
- ``steer``: add it to the current turn at the next safe point (after the running tool
  calls, before the next model call); its sender gets the same reply as the current
  message's. A message that arrives after the model's last turn is answered on its own.
"""


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
    while_busy: WhileBusy | None = None
    """What to do if the session is still answering an earlier message (default:
    ``AgentConfig.while_busy``). Added in 0.3.0."""


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
    turn_usage: Usage | None = None
    """What answering this message used (``None`` from a worker older than 0.9.0).
    Added in 0.9.0."""


def session_workflow_id(agent: str, tenant: str, session_id: str) -> str:
    """The workflow id of a session: one per agent, tenant and session id.

    Added in 0.2.0.
    """
    return f"{agent}-session-{tenant}-{session_id}"
