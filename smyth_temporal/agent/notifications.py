"""Telling people that a request waits: one notification activity per channel, not awaited.

Workflow code. ``start_notifications`` schedules ``smyth.notify.approval`` for each
channel a policy names and returns at once: the run goes on to wait for the decision
while Temporal retries a failing receiver (until the request's deadline), so a
notification never holds up, or fails, the approval. A delivery that fails for good
is logged and published as a ``notification_failed`` event.

Only channel names enter history; the worker resolves them (``smyth_temporal.notifications``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

from smyth_temporal._logging import WorkflowLogger
from smyth_temporal.types.approvals import ApprovalRequest
from smyth_temporal.types.events import AgentEvent, NotificationFailed
from smyth_temporal.types.notifications import (
    NOTIFY_ACTIVITY,
    ApprovalNotice,
    NoticeKind,
    NotificationReceipt,
)

__all__ = [
    "NOTIFY_ATTEMPT_TIMEOUT",
    "NOTIFY_PATCH",
    "NOTIFY_RETRY",
    "start_notifications",
]

NOTIFY_PATCH = "smyth-approval-notify"
"""Runs that notify (0.9.0). Asked only when there is a channel to notify, so runs
recorded before notifications existed replay as they were."""

NOTIFY_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(minutes=5),
)
"""A receiver that is down is tried again, less and less often, until the request's
deadline (the activity's schedule-to-close timeout): a notice after it is moot."""

NOTIFY_ATTEMPT_TIMEOUT = timedelta(seconds=30)
"""How long one delivery attempt may take (the webhook's own timeout is 10 s)."""

_MIN_WINDOW = timedelta(minutes=1)
"""A request whose deadline is closer still gets this long to be delivered."""


def start_notifications(
    request: ApprovalRequest,
    channels: Sequence[str],
    *,
    agent: str,
    roles: Sequence[str] = ("approver",),
    kind: NoticeKind = "requested",
    escalation: int = 0,
    log: WorkflowLogger | None = None,
    publish: Callable[[AgentEvent], None] | None = None,
) -> list[workflow.ActivityHandle[NotificationReceipt]]:
    """Start one notification per channel about ``request``, without waiting for them.

    Args:
        request: The request people should decide.
        channels: The channel names (a policy's ``notify``, an escalation step's);
            none starts nothing and leaves history as it was.
        agent: The agent's name (the notification says whose run it is).
        roles: Who may decide now.
        kind: ``requested``, or ``escalated`` for an escalation step.
        escalation: The escalation step (1 for the first) when ``kind`` is
            ``escalated``; it is part of the delivery key.
        log: Where a delivery that failed for good is logged.
        publish: Where it is published as a ``NotificationFailed`` event.

    Returns:
        The activities' handles (already running; awaiting them is optional).

    Added in 0.9.0.
    """
    unique = list(dict.fromkeys(channels))
    if not unique or not workflow.patched(NOTIFY_PATCH):
        return []
    window = max(request.deadline - workflow.now(), _MIN_WINDOW)
    handles: list[workflow.ActivityHandle[NotificationReceipt]] = []
    for channel in unique:
        notice = ApprovalNotice(
            workflow_id=workflow.info().workflow_id,
            agent=agent,
            request=request.model_copy(),
            channel=channel,
            kind=kind,
            escalation=escalation if kind == "escalated" else 0,
            roles=list(roles),
        )
        handle = workflow.start_activity(
            NOTIFY_ACTIVITY,
            notice,
            result_type=NotificationReceipt,
            start_to_close_timeout=NOTIFY_ATTEMPT_TIMEOUT,
            schedule_to_close_timeout=window,
            retry_policy=NOTIFY_RETRY,
            summary=f"notify {channel}: {request.tool} ({kind})",
        )
        handle.add_done_callback(_on_done(notice, log, publish))
        handles.append(handle)
    return handles


def _on_done(
    notice: ApprovalNotice,
    log: WorkflowLogger | None,
    publish: Callable[[AgentEvent], None] | None,
) -> Callable[[workflow.ActivityHandle[NotificationReceipt]], None]:
    def done(handle: workflow.ActivityHandle[NotificationReceipt]) -> None:
        if handle.cancelled():
            return
        error = handle.exception()  # retrieved, so it is never reported as unhandled
        if error is None:
            return
        reason = _reason(error)
        if log is not None:
            log.warning(
                "approval.notification_failed",
                request_id=notice.request.id,
                channel=notice.channel,
                kind=notice.kind,
                error=reason,
            )
        if publish is not None:
            publish(
                NotificationFailed(
                    request_id=notice.request.id,
                    channel=notice.channel,
                    notice=notice.kind,
                    escalation=notice.escalation,
                    error=reason,
                )
            )

    return done


def _reason(error: BaseException) -> str:
    cause = error.__cause__ if isinstance(error, ActivityError) else error
    if isinstance(cause, ApplicationError):
        return cause.message
    return str(cause or error)
