"""The worker's approval notification settings: its channels, and what sending needs.

Read here (the one place that reads the environment); ``smyth_temporal.notifications``
turns them into channels (``Notifications.from_settings``).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator, Field, SecretStr
from pydantic_settings import NoDecode

from smyth_temporal.settings._base import SmythSettings

__all__ = [
    "CONSOLE_URL_ENV",
    "NOTIFY_ENV",
    "SMTP_URL_ENV",
    "WEBHOOK_SECRET_ENV",
    "NotifySettings",
]

WEBHOOK_SECRET_ENV = "SMYTH_WEBHOOK_SECRET"
"""The key webhooks are signed with (HMAC-SHA256 of the body)."""

SMTP_URL_ENV = "SMYTH_SMTP_URL"
"""The SMTP server e-mail channels send through."""

CONSOLE_URL_ENV = "SMYTH_CONSOLE_URL"
"""The console's public address, for the links in notifications."""

NOTIFY_ENV = "SMYTH_NOTIFY"
"""The channels, as ``--notify`` takes them, separated by spaces."""


def _words(value: object) -> object:
    # Spaces, not commas: an e-mail channel lists its addresses with commas.
    return tuple(value.split()) if isinstance(value, str) else value


class NotifySettings(SmythSettings):
    """Approval notifications: the channels policies may name, and how to reach them.

    Added in 0.9.0.
    """

    notify: Annotated[tuple[str, ...], NoDecode, BeforeValidator(_words)] = Field(
        default=(), validation_alias=NOTIFY_ENV
    )
    """Notification channels as `NAME=URL` (a webhook) or `NAME=ADDRESS[,ADDRESS]` (e-mail),
    separated by spaces (`--notify`, repeatable)."""
    webhook_secret: SecretStr | None = Field(default=None, validation_alias=WEBHOOK_SECRET_ENV)
    """The key webhooks are signed with (`X-Smyth-Signature`: HMAC-SHA256 of the body);
    required with a webhook channel, 16+ characters."""
    smtp_url: SecretStr | None = Field(default=None, validation_alias=SMTP_URL_ENV)
    """The SMTP server of e-mail channels:
    `smtp://[user:password@]host[:port][?from=ADDRESS&starttls=true]` or `smtps://...`."""
    console_url: str | None = Field(default=None, validation_alias=CONSOLE_URL_ENV)
    """The console's public address (e.g. `https://agents.example.com/console`):
    notifications link to the request there (`--console-url`)."""
