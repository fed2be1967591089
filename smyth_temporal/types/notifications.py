"""Approval notifications as data: what the workflow asks a worker to send, and the receipt.

The workflow names channels (``"webhook"``, ``"oncall"``); the worker resolves each name
to a URL or an SMTP server and its credentials, so neither ever enters history. One
notification is one ``smyth.notify.approval`` activity per channel, identified by its
``delivery_key``: the workflow, the request, the channel and the event (the request,
or escalation step k). Every attempt carries the same key, so a receiver that sees it
twice (a worker that crashed after sending) can keep one.

Added in 0.9.0.
"""

from __future__ import annotations

import hashlib
from typing import Literal
from urllib.parse import quote

from pydantic import BaseModel, Field

from smyth_temporal.types.approvals import ApprovalRequest

__all__ = [
    "NOTIFY_ACTIVITY",
    "ApprovalNotice",
    "NoticeKind",
    "NotificationReceipt",
]

NOTIFY_ACTIVITY = "smyth.notify.approval"
"""The activity that sends one approval notification over one channel."""

NoticeKind = Literal["requested", "escalated"]
"""What happened: a request was made, or an escalation step added deciders to it."""


class ApprovalNotice(BaseModel):
    """One notification to send: a request, who may decide it, and over which channel.

    Added in 0.9.0.
    """

    workflow_id: str
    """The run's workflow id (the console link and the key name it)."""
    agent: str
    """The agent's workflow type."""
    request: ApprovalRequest
    """The request as it stood when the notification was started (its arguments are
    already in history, where approvers see them)."""
    channel: str = Field(min_length=1)
    """The channel's name; the worker knows what it stands for."""
    kind: NoticeKind = "requested"
    """The request, or an escalation step."""
    escalation: int = Field(default=0, ge=0)
    """The escalation step (1 for the first), 0 for the request itself."""
    roles: list[str] = Field(default_factory=lambda: ["approver"])
    """The roles that may decide (after this escalation step)."""

    @property
    def delivery_key(self) -> str:
        """The notification's idempotency key: the same for every attempt, never reused.

        ``<workflow id>/<request id>/<channel>/requested`` or ``.../escalated-<k>``, each
        part percent-encoded, so that no two notifications share a key (a ``/`` in a
        workflow id included).
        """
        event = "requested" if self.kind == "requested" else f"escalated-{self.escalation}"
        parts = (self.workflow_id, self.request.id, self.channel, event)
        return "/".join(quote(part, safe="") for part in parts)

    @property
    def delivery_id(self) -> str:
        """The key as 40 hex digits, for the ``Idempotency-Key`` and ``Message-ID`` headers.

        A header holds ASCII; a workflow id may hold anything.
        """
        return hashlib.sha256(self.delivery_key.encode()).hexdigest()[:40]


class NotificationReceipt(BaseModel):
    """What the ``smyth.notify.approval`` activity answers once the receiver took it.

    Added in 0.9.0.
    """

    channel: str
    """The channel it went over."""
    delivery_key: str
    """The notification's idempotency key."""
    attempt: int
    """The activity attempt that delivered it (1 when the first one did)."""
    sent: bool = True
    """False when an earlier attempt had already delivered it, so this one sent nothing."""
