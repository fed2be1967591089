"""The ``smyth.notify.approval`` activity: one notice, over one channel, delivered once.

Temporal's retry policy retries a failed delivery (the workflow sets it; clients'
own retries are off), and every attempt carries the same delivery id. An attempt
that delivered heartbeats that fact before it completes, so an attempt run again
after a crash at that moment sends nothing (unless the heartbeat was lost with the
worker: then the receiver sees the same delivery id twice and keeps one).
"""

from __future__ import annotations

import httpx
import structlog
from temporalio import activity
from temporalio.exceptions import ApplicationError

from smyth_temporal.notifications._config import EmailChannel, Notifications
from smyth_temporal.notifications._email import require_aiosmtplib, send_email
from smyth_temporal.notifications._message import email_message, webhook_body
from smyth_temporal.notifications._webhook import encode, post_webhook
from smyth_temporal.types.notifications import (
    NOTIFY_ACTIVITY,
    ApprovalNotice,
    NotificationReceipt,
)

__all__ = ["NotificationActivities"]

_log = structlog.get_logger("smyth_temporal.notifications")

_DELIVERED = "delivered"


class NotificationActivities:
    """Holds a worker's channels and serves the ``smyth.notify.approval`` activity.

    ```python
    worker = Worker(client, task_queue=q, activities=[NotificationActivities(n).notify_approval])
    ```

    ``SmythPlugin`` registers it on every agent worker, with or without channels. A
    notice for a channel this worker lacks fails naming the channel, and is retried:
    another worker of the queue may have it (a rolling deploy that adds a channel);
    if none does, the request's deadline ends the retries and the run publishes the
    failure. Give every worker of a task queue the same channels.

    Added in 0.9.0.
    """

    def __init__(
        self, notifications: Notifications | None = None, *, http: httpx.AsyncClient | None = None
    ) -> None:
        """Serve ``notifications``' channels (default: none).

        Args:
            notifications: The channels, and what sending needs.
            http: The client webhooks are posted with (default: one of its own, made at
                the first post, that follows no redirect).

        Raises:
            ConfigurationError: An e-mail channel is configured without ``aiosmtplib``.
        """
        self._notifications = notifications or Notifications()
        if any(isinstance(c, EmailChannel) for c in self._notifications.channels.values()):
            require_aiosmtplib()
        self._client = http

    @property
    def notifications(self) -> Notifications:
        """The channels served."""
        return self._notifications

    @activity.defn(name=NOTIFY_ACTIVITY)
    async def notify_approval(self, notice: ApprovalNotice) -> NotificationReceipt:
        """Deliver ``notice`` over its channel; raise to have Temporal try again.

        Raises:
            ApplicationError: The delivery failed: retryable when it may pass later,
                non-retryable for an unknown channel or a receiver that refuses it.
        """
        info = activity.info()
        log = _log.bind(
            workflow_id=info.workflow_id,
            request_id=notice.request.id,
            channel=notice.channel,
            delivery=notice.delivery_id,
            attempt=info.attempt,
        )
        receipt = NotificationReceipt(
            channel=notice.channel, delivery_key=notice.delivery_key, attempt=info.attempt
        )
        if _DELIVERED in info.heartbeat_details:
            log.info("notify.already_delivered")
            return receipt.model_copy(update={"sent": False})
        channel = self._notifications.channels.get(notice.channel)
        if channel is None:
            have = ", ".join(sorted(self._notifications.channels)) or "none"
            log.warning("notify.unknown_channel", have=have)
            raise ApplicationError(
                f"this worker has no notification channel {notice.channel!r} (it has: {have}); "
                f"add it with smyth worker --notify {notice.channel}=URL|ADDRESS",
                type="UnknownNotificationChannel",
            )
        try:
            if isinstance(channel, EmailChannel):
                await self._mail(notice, channel)
            else:
                await self._post(notice, channel.url)
        except ApplicationError as exc:
            log.warning("notify.failed", error=str(exc), retryable=not exc.non_retryable)
            raise
        activity.heartbeat(_DELIVERED)
        log.info("notify.delivered", kind=notice.kind)
        return receipt

    async def _post(self, notice: ApprovalNotice, url: str) -> None:
        if self._client is None:
            self._client = httpx.AsyncClient(follow_redirects=False)
        body = encode(webhook_body(notice, self._notifications.console_url))
        secret = self._notifications.webhook_secret
        assert secret is not None  # Notifications refuses a webhook without one
        await post_webhook(self._client, url, body, secret=secret, delivery_id=notice.delivery_id)

    async def _mail(self, notice: ApprovalNotice, channel: EmailChannel) -> None:
        server = self._notifications.smtp
        assert server is not None  # Notifications refuses an e-mail channel without one
        message = email_message(
            notice,
            self._notifications.console_url,
            sender=server.sender,
            recipients=channel.recipients,
        )
        await send_email(server, message)
