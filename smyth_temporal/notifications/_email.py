"""Sending a notification e-mail over SMTP with ``aiosmtplib``, failures classified.

``aiosmtplib`` comes with the ``email`` extra; a worker with an e-mail channel and
without it stops at start with the install command (``require_aiosmtplib``).
A 4xx SMTP reply is transient (retried by Temporal's policy), a 5xx one is permanent
(a refused recipient, failed authentication): non-retryable.
"""

from __future__ import annotations

from email.message import EmailMessage
from typing import TYPE_CHECKING

from temporalio.exceptions import ApplicationError

from smyth_temporal.exceptions import ConfigurationError

if TYPE_CHECKING:
    from smyth_temporal.notifications._config import SmtpServer

__all__ = ["INSTALL_HINT", "require_aiosmtplib", "send_email"]

INSTALL_HINT = "e-mail notifications need the email extra: pip install 'smyth-temporal[email]'"

_TIMEOUT = 20.0


def require_aiosmtplib() -> None:
    """Check that ``aiosmtplib`` is installed.

    Raises:
        ConfigurationError: It is not; the message has the install command.
    """
    try:
        import aiosmtplib  # noqa: F401
    except ImportError:
        raise ConfigurationError(INSTALL_HINT) from None


async def send_email(server: SmtpServer, message: EmailMessage) -> None:
    """Send ``message`` through ``server``; return once it accepted every recipient.

    Raises:
        ApplicationError: Retryable for connection errors, timeouts and 4xx replies;
            non-retryable for 5xx replies (authentication, a refused recipient).
    """
    import aiosmtplib

    try:
        refused, _ = await aiosmtplib.send(
            message,
            hostname=server.host,
            port=server.port,
            username=server.username,
            password=server.password,
            use_tls=server.tls,
            start_tls=server.starttls,
            timeout=_TIMEOUT,
        )
    except aiosmtplib.SMTPRecipientsRefused as exc:
        codes = sorted({r.code for r in exc.recipients})
        raise _smtp_error(
            f"the SMTP server refused every recipient ({codes})", max(codes)
        ) from None
    except aiosmtplib.SMTPResponseException as exc:
        raise _smtp_error(f"the SMTP server answered {exc.code}: {exc.message}", exc.code) from None
    except (aiosmtplib.SMTPException, OSError) as exc:
        raise ApplicationError(
            f"the SMTP server cannot be reached ({type(exc).__name__})",
            type="NotificationConnectionError",
        ) from None
    if refused:
        # Some recipients took it: sending again would mail them twice.
        raise ApplicationError(
            f"the SMTP server refused {sorted(refused)}",
            type="NotificationRefused",
            non_retryable=True,
        )


def _smtp_error(message: str, code: int) -> ApplicationError:
    return ApplicationError(
        message, {"smtp_code": code}, type="NotificationSMTPError", non_retryable=code >= 500
    )
