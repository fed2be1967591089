"""What a worker's notification channels stand for: parsed from ``NAME=TARGET`` specs.

``smyth worker --notify webhook=https://hooks.example.com/T0/B0 --notify oncall=ops@example.com``
names two channels. A target that starts with ``http://`` or ``https://`` is a webhook
(signed with ``SMYTH_WEBHOOK_SECRET``); anything else is one or more e-mail recipients
(``mailto:`` optional, comma-separated), sent through the SMTP server of
``SMYTH_SMTP_URL``. Policies name the channels; only the worker knows the targets.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, unquote, urlsplit

import structlog

from smyth_temporal._redaction import register_secret
from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.settings import (
    CONSOLE_URL_ENV,
    SMTP_URL_ENV,
    WEBHOOK_SECRET_ENV,
    NotifySettings,
)

if TYPE_CHECKING:
    from smyth_temporal import ApprovalPolicy

__all__ = [
    "CONSOLE_URL_ENV",
    "SMTP_URL_ENV",
    "WEBHOOK_SECRET_ENV",
    "EmailChannel",
    "Notifications",
    "SmtpServer",
    "WebhookChannel",
    "parse_channel",
]

_log = structlog.get_logger("smyth_temporal.notifications")

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_ADDRESS = re.compile(r"^[^@\s,<>]+@[^@\s,<>]+$")
_MIN_SECRET_BYTES = 16


@dataclass(frozen=True)
class WebhookChannel:
    """POST the notification as signed JSON to ``url``.

    Added in 0.9.0.
    """

    url: str = field(repr=False)
    """Where to post (a Slack incoming webhook works: the body has a ``text`` field)."""


@dataclass(frozen=True)
class EmailChannel:
    """Mail the notification to ``recipients`` through the worker's SMTP server.

    Added in 0.9.0.
    """

    recipients: tuple[str, ...]
    """The addresses to mail."""


Channel = WebhookChannel | EmailChannel


@dataclass(frozen=True)
class SmtpServer:
    """An SMTP server: ``smtp://user:password@host:port?from=agents@example.com``.

    ``smtps://`` connects with TLS from the start (port 465 by default); ``smtp://``
    (port 587 by default) upgrades with STARTTLS when the server offers it, or always
    with ``?starttls=true``. User and password are optional (percent-encode what needs
    it); ``from`` is the sender (default ``smyth@<host>``).

    Added in 0.9.0.
    """

    host: str
    port: int
    sender: str
    username: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)
    tls: bool = False
    """TLS from the start (``smtps://``)."""
    starttls: bool | None = None
    """STARTTLS: ``None`` when offered, ``True`` always (refuse a server without it)."""

    @classmethod
    def parse(cls, url: str) -> SmtpServer:
        """The server a URL names.

        Raises:
            ConfigurationError: Not an ``smtp://`` or ``smtps://`` URL with a host.
        """
        parts = urlsplit(url.strip())
        if parts.scheme not in ("smtp", "smtps") or not parts.hostname:
            raise ConfigurationError(
                f"{SMTP_URL_ENV}: expected smtp://[user:password@]host[:port][?from=ADDRESS] "
                f"or smtps://..., got a URL with scheme {parts.scheme or 'none'!r}"
            )
        try:
            port = parts.port or (465 if parts.scheme == "smtps" else 587)
        except ValueError:
            raise ConfigurationError(f"{SMTP_URL_ENV}: the port is not a number") from None
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        unknown = sorted(set(query) - {"from", "starttls"})
        if unknown:
            raise ConfigurationError(f"{SMTP_URL_ENV}: unknown parameters {unknown}")
        sender = query.get("from") or f"smyth@{parts.hostname}"
        if not _ADDRESS.match(sender):
            raise ConfigurationError(f"{SMTP_URL_ENV}: from={sender!r} is not an address")
        starttls = {"true": True, "false": False, None: None}.get(query.get("starttls"))
        password = unquote(parts.password) if parts.password is not None else None
        if password:
            register_secret(SMTP_URL_ENV, password)  # masked wherever it is logged
        return cls(
            host=parts.hostname,
            port=port,
            sender=sender,
            username=unquote(parts.username) if parts.username else None,
            password=password,
            tls=parts.scheme == "smtps",
            starttls=False if parts.scheme == "smtps" else starttls,
        )


def parse_channel(spec: str) -> tuple[str, Channel]:
    """A channel from ``NAME=TARGET``: a webhook URL, or e-mail addresses.

    Raises:
        ConfigurationError: The spec has no name, a bad name, or a target that is
            neither an http(s) URL nor e-mail addresses.

    Added in 0.9.0.
    """
    name, sep, target = spec.partition("=")
    name, target = name.strip(), target.strip()
    if not sep or not _NAME.match(name) or not target:
        raise ConfigurationError(
            f"--notify {spec.split('=', 1)[0]!r}...: expected NAME=URL (a webhook) or "
            "NAME=ADDRESS[,ADDRESS...] (e-mail), with NAME letters, digits, '_', '.' or '-'"
        )
    scheme = urlsplit(target).scheme.lower()
    if scheme in ("http", "https"):
        if not urlsplit(target).hostname:
            raise ConfigurationError(f"--notify {name}=...: the webhook URL has no host")
        return name, WebhookChannel(url=target)
    addresses = tuple(a.strip() for a in target.removeprefix("mailto:").split(",") if a.strip())
    bad = [a for a in addresses if not _ADDRESS.match(a)]
    if scheme not in ("", "mailto") or bad or not addresses:
        raise ConfigurationError(
            f"--notify {name}=...: expected an http(s) URL or e-mail addresses (not {bad[0]!r})"
            if bad
            else f"--notify {name}=...: expected an http(s) URL or e-mail addresses"
        )
    return name, EmailChannel(recipients=addresses)


@dataclass(frozen=True)
class Notifications:
    """A worker's notification channels, by name, and what sending needs.

    ```python
    notifications = Notifications.parse(
        ["webhook=https://hooks.example.com/T0/B0", "oncall=ops@example.com"],
        webhook_secret=secret, smtp_url="smtp://mailer:pw@mail.example.com",
        console_url="https://agents.example.com/console",
    )
    plugin = SmythPlugin(notifications=notifications)
    ```

    Added in 0.9.0.
    """

    channels: Mapping[str, Channel] = field(default_factory=dict)
    """Each channel a policy may name."""
    webhook_secret: str | None = field(default=None, repr=False)
    """Signs every webhook body (``X-Smyth-Signature``); required with a webhook."""
    smtp: SmtpServer | None = None
    """Where mail goes; required with an e-mail channel."""
    console_url: str | None = None
    """The console's public address; notifications link to the request there."""

    def __post_init__(self) -> None:
        webhooks = [n for n, c in self.channels.items() if isinstance(c, WebhookChannel)]
        mails = [n for n, c in self.channels.items() if isinstance(c, EmailChannel)]
        if webhooks and not self.webhook_secret:
            raise ConfigurationError(
                f"webhook channel {webhooks[0]!r} needs {WEBHOOK_SECRET_ENV} (a random "
                "string receivers check the X-Smyth-Signature header with)"
            )
        if webhooks and len(self.webhook_secret or "") < _MIN_SECRET_BYTES:
            raise ConfigurationError(
                f"{WEBHOOK_SECRET_ENV} is shorter than {_MIN_SECRET_BYTES} characters: "
                "use a long random string (python -c 'import secrets; "
                "print(secrets.token_hex(32))')"
            )
        if mails and self.smtp is None:
            raise ConfigurationError(
                f"e-mail channel {mails[0]!r} needs {SMTP_URL_ENV} "
                "(smtp://user:password@host:port?from=ADDRESS)"
            )
        if self.console_url is not None and urlsplit(self.console_url).scheme not in (
            "http",
            "https",
        ):
            raise ConfigurationError(
                f"{CONSOLE_URL_ENV}: expected the console's http(s) address, "
                f"got {self.console_url!r}"
            )
        if self.webhook_secret:
            register_secret(WEBHOOK_SECRET_ENV, self.webhook_secret)
        for name, channel in self.channels.items():
            if isinstance(channel, WebhookChannel):
                # A Slack webhook URL is a credential: its path is the token.
                register_secret(f"notify:{name}", channel.url)

    @classmethod
    def parse(
        cls,
        specs: Sequence[str],
        *,
        webhook_secret: str | None = None,
        smtp_url: str | None = None,
        console_url: str | None = None,
    ) -> Notifications:
        """Channels from ``NAME=TARGET`` specs (see ``parse_channel``).

        Raises:
            ConfigurationError: A spec is malformed, a name is given twice, or a
                channel lacks the secret or server it needs.
        """
        channels: dict[str, Channel] = {}
        for spec in specs:
            name, channel = parse_channel(spec)
            if name in channels:
                raise ConfigurationError(f"--notify {name}=... is given twice")
            channels[name] = channel
        return cls(
            channels=channels,
            webhook_secret=webhook_secret or None,
            smtp=SmtpServer.parse(smtp_url) if smtp_url else None,
            console_url=console_url.strip() if console_url else None,
        )

    def missing(self, policies: Iterable[ApprovalPolicy]) -> list[str]:
        """The channels ``policies`` name that this worker does not have, logged.

        A worker checks its agents' policies when it starts: each notification over
        such a channel would fail (and be retried, in case another worker has it).
        """
        named = {
            channel
            for policy in policies
            for channel in (*policy.notify, *(c for step in policy.escalation for c in step.notify))
        }
        missing = sorted(named - set(self.channels))
        if missing:
            _log.warning(
                "notify.channels_missing",
                channels=missing,
                have=sorted(self.channels),
                hint="smyth worker --notify NAME=URL|ADDRESS (or SMYTH_NOTIFY)",
            )
        return missing

    @classmethod
    def from_settings(cls, settings: NotifySettings) -> Notifications:
        """The channels a worker's settings name (``SMYTH_NOTIFY``, ``--notify``...).

        Raises:
            ConfigurationError: As ``parse``.
        """
        secret, smtp = settings.webhook_secret, settings.smtp_url
        return cls.parse(
            settings.notify,
            webhook_secret=secret.get_secret_value() if secret else None,
            smtp_url=smtp.get_secret_value() if smtp else None,
            console_url=settings.console_url,
        )
