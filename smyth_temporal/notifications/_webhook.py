"""Posting a signed webhook, its failures classified retryable or not for Temporal.

The body is sent as the exact bytes that were signed: ``X-Smyth-Signature:
sha256=<hex HMAC-SHA256 of the body>`` with the worker's webhook secret, the scheme
GitHub and Stripe receivers already check. ``Idempotency-Key`` and
``X-Smyth-Delivery`` carry the delivery id, the same on every attempt. httpx retries
nothing and follows no redirect: Temporal's retry policy is the only thing that retries.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import httpx
from temporalio.exceptions import ApplicationError

from smyth_temporal.notifications._signature import SIGNATURE_HEADER, sign

__all__ = ["encode", "post_webhook"]

_TIMEOUT = httpx.Timeout(10.0, connect=5.0)

_RETRYABLE_CLIENT_STATUSES = frozenset({408, 425, 429})
"""Client errors that may pass when sent again; every other 4xx will not."""

_MAX_RETRY_AFTER = timedelta(minutes=5)

_MAX_REASON = 200


def encode(body: dict[str, Any]) -> bytes:
    """The body's bytes, as signed and sent."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


async def post_webhook(
    client: httpx.AsyncClient, url: str, body: bytes, *, secret: str, delivery_id: str
) -> None:
    """POST ``body`` to ``url``; return once the receiver answered 2xx.

    Raises:
        ApplicationError: Retryable for connection errors, timeouts, 408, 425, 429
            and 5xx (with ``Retry-After`` as the next delay, capped at five minutes);
            non-retryable for other statuses (a wrong URL, a refused signature).
    """
    headers = {
        "Content-Type": "application/json",
        SIGNATURE_HEADER: sign(body, secret),
        "Idempotency-Key": delivery_id,
        "X-Smyth-Delivery": delivery_id,
        "User-Agent": "smyth-temporal",
    }
    try:
        response = await client.post(url, content=body, headers=headers, timeout=_TIMEOUT)
    except httpx.TimeoutException as exc:
        raise ApplicationError(
            f"the webhook timed out ({type(exc).__name__})", type="NotificationTimeout"
        ) from None
    except httpx.HTTPError as exc:
        # The message may quote the URL, which is a credential for Slack: not repeated.
        raise ApplicationError(
            f"the webhook cannot be reached ({type(exc).__name__})",
            type="NotificationConnectionError",
        ) from None
    status = response.status_code
    if 200 <= status < 300:
        return
    reason = response.text[:_MAX_REASON].strip()
    message = f"the webhook answered {status}" + (f": {reason}" if reason else "")
    if status in _RETRYABLE_CLIENT_STATUSES or status >= 500:
        raise ApplicationError(
            message,
            {"status_code": status},
            type="NotificationHTTPError",
            next_retry_delay=_retry_after(response.headers.get("retry-after")),
        )
    raise ApplicationError(
        message, {"status_code": status}, type="NotificationHTTPError", non_retryable=True
    )


def _retry_after(value: str | None) -> timedelta | None:
    """A ``Retry-After`` in seconds, capped; ``None`` when absent or not a number."""
    try:
        seconds = float(value) if value is not None else 0.0
    except ValueError:
        return None
    if not 0 < seconds < float("inf"):
        return None
    return timedelta(seconds=min(seconds, _MAX_RETRY_AFTER.total_seconds()))
