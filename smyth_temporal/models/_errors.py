"""Classify errors from the ``openai`` package as Temporal ``ApplicationError``s.

The model activity calls the provider with the openai client's own retries disabled
(``max_retries=0``): Temporal's retry policy is the only thing that retries, so every
attempt is visible in the workflow history and governed by one policy. For that to
work, each failure has to say whether retrying may help, which is what
:func:`to_application_error` decides.

The resulting ``ApplicationError.type`` values are ``"ModelHTTPError"`` (an HTTP
error status), ``"ModelTimeout"``, ``"ModelConnectionError"`` and ``"ModelError"``
(anything else), so a failure reads the same in the workflow and in history.

Messages and details never include request headers, which carry the API key.
"""

from __future__ import annotations

import email.utils
import math
import time
from collections.abc import Mapping
from datetime import timedelta
from http import HTTPStatus
from typing import Any

import openai
from temporalio.exceptions import ApplicationError

from smyth_temporal._redaction import redact
from smyth_temporal.exceptions import ModelError, ModelHTTPError, UserError

__all__ = ["capped_delay", "is_retryable_status", "status_failure", "to_application_error"]

# The longest server-requested wait we honour. ``next_retry_delay`` replaces the retry
# policy's backoff for that attempt, so the policy's ``maximum_interval`` does not
# bound it: without a cap, a buggy or hostile ``Retry-After`` (a day, say) would park
# the activity for that long. Five minutes covers real rate-limit windows; beyond it
# the policy's own backoff takes over on later attempts anyway.
_MAX_RETRY_AFTER = timedelta(minutes=5)

# Provider messages are shown to people and stored in history; a proxy's HTML error
# page should not flood either.
_MAX_MESSAGE_CHARS = 500

# 408 Request Timeout, 409 Conflict (OpenAI uses it for transient lock contention) and
# 429 Too Many Requests are the client errors that may succeed when sent again.
_RETRYABLE_CLIENT_STATUSES = frozenset({408, 409, 429})


def is_retryable_status(status: int) -> bool:
    """Tell whether a request that got this HTTP error status may succeed if retried.

    Args:
        status: The HTTP status code of the response.

    Returns:
        True for 408, 409, 429 and every 5xx status; False otherwise (other 4xx
        statuses mean the request itself is wrong, and non-error statuses are not
        failures to retry).
    """
    return status in _RETRYABLE_CLIENT_STATUSES or status >= 500


def to_application_error(exc: BaseException) -> ApplicationError:
    """Turn an exception from a model call into an ``ApplicationError`` for Temporal.

    Raise the result from the original so the cause stays in the failure chain:
    ``raise to_application_error(exc) from exc``.

    * ``openai.APIStatusError``: type ``"ModelHTTPError"``, retryable for 408, 409,
      429 and 5xx (honouring ``Retry-After``/``retry-after-ms`` as the next retry
      delay, capped at five minutes), non-retryable for other statuses. ``details``
      holds one dict with ``status_code``, ``error_type``, ``error_code``,
      ``request_id`` and ``retry_after_seconds``.
    * ``openai.APITimeoutError``: retryable, type ``"ModelTimeout"``.
    * ``openai.APIConnectionError``: retryable, type ``"ModelConnectionError"``.
    * An ``ApplicationError`` is returned unchanged: whoever raised it classified it.
    * The SDK's own ``ModelError``s keep their class name as type and their
      ``retryable`` flag; ``UserError``s (misconfiguration) are non-retryable.
    * Anything else: retryable, type ``"ModelError"``, with the exception's class
      name in the message.

    Args:
        exc: The exception raised while calling the model provider.

    Returns:
        The error to raise from the activity.
    """
    if isinstance(exc, ApplicationError):
        return exc
    if isinstance(exc, openai.APIStatusError):
        return _from_status_error(exc)
    # APITimeoutError subclasses APIConnectionError, so it must be checked first.
    if isinstance(exc, openai.APITimeoutError):
        return ApplicationError(
            "model request timed out before the endpoint answered",
            {"exception_type": type(exc).__name__},
            type="ModelTimeout",
            non_retryable=False,
        )
    if isinstance(exc, openai.APIConnectionError):
        return ApplicationError(
            f"could not connect to the model endpoint{_describe_cause(exc)}",
            {"exception_type": type(exc).__name__},
            type="ModelConnectionError",
            non_retryable=False,
        )
    if isinstance(exc, ModelHTTPError):
        return ApplicationError(
            str(exc),
            {"status_code": exc.status_code},
            type=type(exc).__name__,
            non_retryable=not exc.retryable,
        )
    if isinstance(exc, ModelError):
        return ApplicationError(str(exc), type=type(exc).__name__, non_retryable=not exc.retryable)
    if isinstance(exc, UserError):
        # A misconfiguration fails the same way on every attempt.
        return ApplicationError(str(exc), type=type(exc).__name__, non_retryable=True)
    return ApplicationError(
        f"model call failed with {type(exc).__name__}: {_truncate(str(exc))}",
        {"exception_type": type(exc).__name__},
        type="ModelError",
        non_retryable=False,
    )


def _from_status_error(exc: openai.APIStatusError) -> ApplicationError:
    status = exc.status_code
    label = f"{status} {_reason(status)}".rstrip()
    provider_message = _provider_message(exc)
    suffix = f": {provider_message}" if provider_message else ""
    retry_after = _retry_after(exc.response.headers) if is_retryable_status(status) else None
    details: dict[str, Any] = {
        "status_code": status,
        "error_type": exc.type,
        "error_code": exc.code,
        "request_id": exc.request_id,
        "retry_after_seconds": retry_after.total_seconds() if retry_after is not None else None,
    }
    if is_retryable_status(status):
        return ApplicationError(
            f"model endpoint failed ({label}){suffix}",
            details,
            type="ModelHTTPError",
            non_retryable=False,
            next_retry_delay=retry_after,
        )
    return ApplicationError(
        f"model endpoint rejected the request ({label}){suffix}",
        details,
        type="ModelHTTPError",
        non_retryable=True,
    )


def status_failure(
    status: int,
    message: str,
    *,
    error_type: str | None = None,
    request_id: str | None = None,
    retry_after: timedelta | None = None,
    overloaded: bool = False,
    too_long: bool = False,
) -> ApplicationError:
    """A native provider's HTTP error as the ``ApplicationError`` Temporal retries by.

    One classification for the vendors' SDKs (Anthropic's, Google's), each of which
    reads the status, the message and the hints out of its own error shape:

    * ``overloaded`` (Anthropic's 529, Gemini's 503 ``UNAVAILABLE``): retryable
      ``ModelOverloaded``, which moves the turn to a fallback model;
    * ``too_long`` on a 400 or 413 (the prompt exceeds the context window): final
      ``ModelContextTooLong``, which makes the agent compact and take the turn again;
    * otherwise ``ModelHTTPError``, retryable for 408, 409, 429 and 5xx (waiting
      ``retry_after`` first, when the server said how long), final for other 4xx.

    Args:
        status: The HTTP status.
        message: The provider's own message (truncated and masked here).
        error_type: The provider's name for the error (``rate_limit_error``,
            ``RESOURCE_EXHAUSTED``).
        request_id: The provider's id of the request, for its support.
        retry_after: How long the server asked to wait (already capped).
        overloaded: The provider says it could not take the call for load.
        too_long: The provider says the prompt is longer than the context window.

    Returns:
        The error to raise from the activity.
    """
    text = _truncate(message)
    retryable = is_retryable_status(status)
    delay = retry_after if retryable or overloaded else None
    details = {
        "status_code": status,
        "error_type": error_type,
        "request_id": request_id,
        "retry_after_seconds": delay.total_seconds() if delay is not None else None,
    }
    label = f"{status} {_reason(status) or error_type or ''}".rstrip()
    if overloaded:
        return ApplicationError(
            f"model endpoint overloaded ({label}): {text}",
            details,
            type="ModelOverloaded",
            next_retry_delay=delay,
        )
    if status in (400, 413) and too_long:
        return ApplicationError(
            f"the prompt is longer than the model's context window ({label}): {text}",
            details,
            type="ModelContextTooLong",
            non_retryable=True,
        )
    if retryable:
        return ApplicationError(
            f"model endpoint failed ({label}): {text}",
            details,
            type="ModelHTTPError",
            next_retry_delay=delay,
        )
    return ApplicationError(
        f"model endpoint rejected the request ({label}): {text}",
        details,
        type="ModelHTTPError",
        non_retryable=True,
    )


def capped_delay(seconds: float | None) -> timedelta | None:
    """A server-requested wait as a retry delay: capped at five minutes, None if not positive."""
    if seconds is None or math.isnan(seconds) or seconds <= 0:
        return None
    # Cap before building the timedelta: an absurd value (1e300) would overflow it.
    return timedelta(seconds=min(seconds, _MAX_RETRY_AFTER.total_seconds()))


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _provider_message(exc: openai.APIStatusError) -> str:
    """The provider's own error message, without openai's ``Error code: N -`` prefix."""
    # The client stores the ``error`` object of an OpenAI-shaped body, the whole body
    # otherwise, or the raw text if the body is not JSON.
    body: object = exc.body
    if isinstance(body, Mapping):
        message = body.get("message")
        if isinstance(message, str) and message:
            return _truncate(message)
        nested = body.get("error")
        if isinstance(nested, str) and nested:
            return _truncate(nested)
        return ""
    if isinstance(body, str):
        return _truncate(body)
    return ""


def _retry_after(headers: Mapping[str, str]) -> timedelta | None:
    """The server-requested delay before the next attempt, capped, or None if absent."""
    # retry-after-ms is a non-standard header OpenAI sends; it is more precise, so it
    # wins when both are present.
    seconds = _parse_seconds(headers.get("retry-after-ms"), divisor=1000.0)
    if seconds is None:
        value = headers.get("retry-after")
        seconds = _parse_seconds(value, divisor=1.0)
        if seconds is None and value is not None:
            seconds = _parse_http_date(value)
    return capped_delay(seconds)


def _parse_seconds(value: str | None, *, divisor: float) -> float | None:
    if value is None:
        return None
    try:
        number = float(value.strip())
    except ValueError:
        return None
    if math.isnan(number):
        return None
    if math.isinf(number):
        # Only +inf matters ("wait forever"): the cap applies. -inf falls out as <= 0.
        return number if number < 0 else _MAX_RETRY_AFTER.total_seconds()
    return number / divisor


def _parse_http_date(value: str) -> float | None:
    try:
        parsed = email.utils.parsedate_tz(value)
        if parsed is None:
            return None
        return float(email.utils.mktime_tz(parsed) - time.time())
    except (TypeError, ValueError, OverflowError, OSError):
        return None


def _describe_cause(exc: BaseException) -> str:
    # httpx's transport errors ("All connection attempts failed", "[Errno 111]
    # Connection refused") say what went wrong without echoing the request.
    cause = exc.__cause__
    if cause is None:
        return ""
    text = _truncate(str(cause))
    return f" ({type(cause).__name__}: {text})" if text else f" ({type(cause).__name__})"


def _truncate(text: str) -> str:
    # Masked first: an endpoint or proxy quoting the key it refused would put it in
    # history, and a cut could leave part of it.
    text = redact(text.strip())
    if len(text) <= _MAX_MESSAGE_CHARS:
        return text
    return text[: _MAX_MESSAGE_CHARS - 3] + "..."
