"""The live text channel of a model turn: where streamed text goes, outside the run.

A streamed model turn writes its text deltas to a small workflow of its own
(``smyth.live``, one per model message), not to the agent's workflow: every delta batch
is a signal in the history of the workflow it reaches, and the agent's history is the
agent's durable record, kept for as long as the agent lives. The live workflow hosts a
``temporalio.contrib.workflow_streams`` stream like the agent does. Readers start it
when they follow the turn (a turn nobody watches has none); it ends when the turn does
and is gone with the namespace's retention. ``AgentClient.events`` merges the two: the
agent's ``turn_started`` names the turn's channel.

Added in 0.6.0.
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel, ConfigDict

__all__ = [
    "LIVE_CLOSE_SIGNAL",
    "LIVE_TIMEOUT",
    "LIVE_WORKFLOW",
    "LiveChannelInput",
    "LiveTarget",
    "live_workflow_id",
]

LIVE_WORKFLOW = "smyth.live"
"""The workflow type of a model turn's live text channel."""

LIVE_CLOSE_SIGNAL = "smyth.live.close"
"""Sent by the model activity when the call is over: the channel drains and ends."""

LIVE_TIMEOUT = timedelta(minutes=30)
"""The longest a channel stays open unclosed (a call whose worker died and was never
retried, or whose run was terminated): then it ends by itself."""


def live_workflow_id(workflow_id: str, message_id: str) -> str:
    """The live channel's workflow id for ``message_id`` of the agent ``workflow_id``.

    Message ids carry the agent's run id, so the id is unique across runs and
    continue-as-new, and it still reads as the agent's in a listing.
    """
    return f"{workflow_id}/live/{message_id}"


class LiveTarget(BaseModel):
    """Where a model activity streams its text: the channel and the queue it runs on."""

    model_config = ConfigDict(frozen=True)

    workflow_id: str
    """The live workflow's id (``live_workflow_id``)."""
    task_queue: str
    """The agent's task queue: its workers run the live workflow too."""


class LiveChannelInput(BaseModel):
    """The live workflow's input: whose text it carries (for people reading a listing)."""

    model_config = ConfigDict(frozen=True)

    agent_workflow_id: str
    message_id: str
