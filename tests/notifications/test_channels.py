"""Notification channels without a Temporal server: parsing, rendering, delivery and how
its failures are classified for Temporal's retries (real SMTP on loopback, httpx's
MockTransport for HTTP statuses)."""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import replace as dataclass_replace
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from smyth_temporal.cli.main import main
from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.notifications import (
    EmailChannel,
    NotificationActivities,
    Notifications,
    SmtpServer,
    WebhookChannel,
    parse_channel,
    sign,
    verify_signature,
)
from smyth_temporal.notifications._email import INSTALL_HINT, send_email
from smyth_temporal.notifications._message import email_message, webhook_body
from smyth_temporal.notifications._webhook import encode, post_webhook
from smyth_temporal.settings import NotifySettings
from smyth_temporal.types import ApprovalNotice, ApprovalRequest, arguments_sha256
from tests.helpers.notify_receivers import smtp_server

SECRET = "whsec-test-0123456789abcdef"
NOW = datetime(2026, 11, 26, 6, 0, tzinfo=UTC)


def notice(
    arguments: dict[str, Any] | None = None, *, workflow_id: str = "pay-42", channel: str = "hook"
) -> ApprovalNotice:
    arguments = {"amount": 12_000, "to": "ACME"} if arguments is None else arguments
    request = ApprovalRequest(
        id="apr-1-call_1_0",
        tool="pay",
        call_id="call_1_0",
        step=1,
        arguments=arguments,
        arguments_sha256=arguments_sha256(arguments),
        requested_at=NOW,
        deadline=NOW + timedelta(hours=1),
    )
    return ApprovalNotice(workflow_id=workflow_id, agent="Payer", request=request, channel=channel)


# -- configuration -------------------------------------------------------------------


def test_a_channel_is_a_webhook_url_or_email_addresses() -> None:
    assert parse_channel("hook=https://hooks.example.com/T0/B0") == (
        "hook",
        WebhookChannel("https://hooks.example.com/T0/B0"),
    )
    assert parse_channel("oncall=mailto:ops@example.com, lead@example.com") == (
        "oncall",
        EmailChannel(("ops@example.com", "lead@example.com")),
    )


@pytest.mark.parametrize(
    "spec",
    [
        "hook",
        "=https://x.example.com",
        "bad name=https://x.example.com",
        "hook=",
        "hook=ftp://x",
        "mail=not-an-address",
        "mail=a@b.com,oops",
        "hook=https://",
    ],
)
def test_a_malformed_channel_is_refused_with_what_is_expected(spec: str) -> None:
    with pytest.raises(ConfigurationError, match=r"expected|no host"):
        parse_channel(spec)


def test_a_channel_named_twice_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="given twice"):
        Notifications.parse(["a=x@y.com", "a=https://h.example.com"], webhook_secret=SECRET)


def test_a_webhook_needs_a_long_secret_and_mail_needs_a_server() -> None:
    with pytest.raises(ConfigurationError, match="SMYTH_WEBHOOK_SECRET"):
        Notifications.parse(["hook=https://h.example.com"])
    with pytest.raises(ConfigurationError, match="shorter than 16"):
        Notifications.parse(["hook=https://h.example.com"], webhook_secret="short")
    with pytest.raises(ConfigurationError, match="SMYTH_SMTP_URL"):
        Notifications.parse(["mail=ops@example.com"])
    with pytest.raises(ConfigurationError, match="SMYTH_CONSOLE_URL"):
        Notifications.parse([], console_url="javascript:alert(1)")


def test_smtp_urls() -> None:
    server = SmtpServer.parse("smtps://bot%40corp:p%2Fss@mail.example.com?from=agents@example.com")
    assert (server.host, server.port, server.tls, server.starttls) == (
        "mail.example.com",
        465,
        True,
        False,
    )
    assert (server.username, server.password, server.sender) == (
        "bot@corp",
        "p/ss",
        "agents@example.com",
    )
    plain = SmtpServer.parse("smtp://mail.example.com?starttls=true")
    assert (plain.port, plain.sender, plain.starttls) == (587, "smyth@mail.example.com", True)
    assert "p/ss" not in repr(server)
    for bad, why in [
        ("http://mail.example.com", "expected smtp://"),
        ("smtp://mail.example.com:port", "port"),
        ("smtp://mail.example.com?to=x@y.com", "unknown parameters"),
        ("smtp://mail.example.com?from=nobody", "not an address"),
    ]:
        with pytest.raises(ConfigurationError, match=why):
            SmtpServer.parse(bad)


async def test_the_worker_command_refuses_a_webhook_without_its_secret(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    reset_structlog: None,
    address: str,
) -> None:
    monkeypatch.delenv("SMYTH_WEBHOOK_SECRET", raising=False)
    args = [
        "worker",
        "tests.helpers.notify_agents:NotifyingTrader",
        "--model",
        "tests.helpers.cli_models:trader",
        "--address",
        address,
        "--notify",
        "hook=https://hooks.example.com/T0/B0",
    ]
    code = await asyncio.to_thread(main, args)
    assert code != 0
    assert "SMYTH_WEBHOOK_SECRET" in capsys.readouterr().err


def test_an_email_channel_without_aiosmtplib_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "aiosmtplib", None)  # as if not installed
    notifications = Notifications.parse(["mail=ops@example.com"], smtp_url="smtp://localhost")
    with pytest.raises(ConfigurationError) as raised:
        NotificationActivities(notifications)
    assert str(raised.value) == INSTALL_HINT
    assert "smyth-temporal[email]" in INSTALL_HINT


# -- what is sent ----------------------------------------------------------------------


def test_arguments_cannot_give_the_slack_text_a_link_of_their_own() -> None:
    crafted = {"memo": "<https://evil.example.com|Approve here> &amp; <!channel>"}
    text = webhook_body(notice(crafted), None)["text"]
    assert "<" not in text and ">" not in text  # no link, no mention: only escaped text
    assert "&lt;https://evil.example.com|Approve here&gt;" in text
    with_link = webhook_body(notice(crafted), "https://agents.example.com/console")["text"]
    assert with_link.count("<") == 1  # the console link, and nothing else
    assert "<https://agents.example.com/console/#/runs/pay-42/approvals/" in with_link


def test_the_email_subject_stays_one_line_whatever_the_workflow_id() -> None:
    message = email_message(
        notice(workflow_id="pay\r\nBcc: everyone@example.com"),
        None,
        sender="agents@example.com",
        recipients=("ops@example.com",),
    )
    assert message["Bcc"] is None
    assert "\n" not in message["Subject"] and "\r" not in message["Subject"]
    assert "Run:       pay  Bcc: everyone@example.com (Payer)" in message.get_content()


def test_secrets_the_worker_holds_are_masked_in_what_it_sends() -> None:
    # A webhook URL is a credential (Slack's path is its token): configuring the channel
    # registers it, and arguments that quote it (a model that saw it somewhere) are masked.
    url = "https://hooks.example.com/T0/B0/tok-9f8e7d6c5b4a"
    Notifications.parse([f"ledger={url}"], webhook_secret=SECRET)
    body = webhook_body(notice({"auth": url}), None)
    assert "tok-9f8e7d6c5b4a" not in json.dumps(body)
    assert body["request"]["arguments"] == {"auth": "[secret:notify:ledger]"}
    mail = email_message(notice({"auth": url}), None, sender="a@b.co", recipients=("c@d.co",))
    assert "tok-9f8e7d6c5b4a" not in mail.as_string()


def test_a_signature_checks_the_exact_bytes() -> None:
    body = encode(webhook_body(notice(), None))
    assert verify_signature(body, sign(body, SECRET), SECRET)
    assert not verify_signature(body.replace(b"12000", b"12001"), sign(body, SECRET), SECRET)
    assert not verify_signature(body, None, SECRET)
    assert not verify_signature(body, "sha256=" + "0" * 64, SECRET)


# -- delivery and its failures -------------------------------------------------------------


def transport(status: int, headers: dict[str, str] | None = None) -> httpx.MockTransport:
    return httpx.MockTransport(lambda request: httpx.Response(status, headers=headers))


async def post(handler: httpx.MockTransport) -> None:
    async with httpx.AsyncClient(transport=handler) as client:
        await post_webhook(
            client,
            "https://hooks.example.com/T0/B0/token",
            b"{}",
            secret=SECRET,
            delivery_id="d" * 40,
        )


@pytest.mark.parametrize("status", [500, 502, 503, 408, 425, 429])
async def test_a_webhook_that_may_pass_later_is_retried(status: int) -> None:
    with pytest.raises(ApplicationError) as raised:
        await post(transport(status, {"Retry-After": "7"}))
    assert not raised.value.non_retryable
    assert raised.value.next_retry_delay == timedelta(seconds=7)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410, 302])
async def test_a_webhook_refused_for_good_is_not_retried(status: int) -> None:
    with pytest.raises(ApplicationError) as raised:
        await post(transport(status))
    assert raised.value.non_retryable
    assert str(status) in str(raised.value)


async def test_an_unreachable_webhook_is_retried_without_quoting_its_url() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError(f"cannot connect to {request.url}")

    with pytest.raises(ApplicationError) as raised:
        await post(httpx.MockTransport(refuse))
    assert not raised.value.non_retryable
    assert "token" not in str(raised.value) and "hooks.example.com" not in str(raised.value)


async def test_an_attempt_after_a_delivered_one_sends_nothing() -> None:
    posted: list[httpx.Request] = []

    def receive(request: httpx.Request) -> httpx.Response:
        posted.append(request)
        return httpx.Response(200)

    notifications = Notifications.parse(["hook=https://hooks.example.com/x"], webhook_secret=SECRET)
    http = httpx.AsyncClient(transport=httpx.MockTransport(receive))
    activities = NotificationActivities(notifications, http=http)
    first = await ActivityEnvironment().run(activities.notify_approval, notice())
    assert (first.sent, len(posted)) == (True, 1)
    # The same notice again, as a retry after a crash that came after the delivery.
    environment = ActivityEnvironment()
    environment.info = dataclass_replace(
        environment.info, attempt=2, heartbeat_details=["delivered"]
    )
    again = await environment.run(activities.notify_approval, notice())
    assert (again.sent, again.attempt, len(posted)) == (False, 2, 1)
    assert posted[0].headers["Idempotency-Key"] == notice().delivery_id
    await http.aclose()


async def test_a_channel_the_worker_lacks_fails_naming_it_and_another_worker_may_send_it() -> None:
    activities = NotificationActivities()
    with pytest.raises(ApplicationError) as raised:
        await ActivityEnvironment().run(activities.notify_approval, notice(channel="pager"))
    # Retried: in a rolling deploy that adds the channel, another worker has it.
    assert not raised.value.non_retryable
    assert "no notification channel 'pager' (it has: none)" in str(raised.value)
    assert "--notify pager=" in str(raised.value)


async def test_smtp_refusals_are_final_and_an_unreachable_server_is_retried() -> None:
    message = email_message(
        notice(), None, sender="agents@example.com", recipients=("nobody@example.com",)
    )
    with smtp_server(refuse_recipients=True) as mailbox:
        server = SmtpServer.parse(f"smtp://127.0.0.1:{mailbox.port}")
        with pytest.raises(ApplicationError) as refused:
            await send_email(server, message)
    assert refused.value.non_retryable
    assert "550" in str(refused.value)
    # Nothing listens there any more: the server may be back later.
    with pytest.raises(ApplicationError) as unreachable:
        await send_email(server, message)
    assert not unreachable.value.non_retryable


def test_channels_from_the_worker_settings() -> None:
    settings = NotifySettings.from_environ(
        {
            "SMYTH_NOTIFY": "hook=https://hooks.example.com/x  "
            "oncall=ops@example.com,lead@example.com",
            "SMYTH_WEBHOOK_SECRET": SECRET,
            "SMYTH_SMTP_URL": "smtp://mailer:pw@mail.example.com?from=agents@example.com",
            "SMYTH_CONSOLE_URL": "https://agents.example.com/console",
        }
    )
    notifications = Notifications.from_settings(settings)
    assert notifications.channels == {
        "hook": WebhookChannel("https://hooks.example.com/x"),
        "oncall": EmailChannel(("ops@example.com", "lead@example.com")),
    }
    assert notifications.webhook_secret == SECRET
    assert notifications.smtp is not None and notifications.smtp.password == "pw"
    assert notifications.console_url == "https://agents.example.com/console"
    assert SECRET not in repr(settings) and "pw@" not in repr(settings)
    # An option wins over the environment.
    override = NotifySettings.from_environ({"SMYTH_NOTIFY": "a=x@y.com"}, notify=("b=z@y.com",))
    assert override.notify == ("b=z@y.com",)
    with pytest.raises(ConfigurationError, match="SMYTH_SMTP_URL"):
        Notifications.from_settings(
            NotifySettings.from_environ({"SMYTH_SMTP_URL": "http://mail.example.com"})
        )


def test_a_worker_names_the_channels_its_policies_need_and_it_lacks() -> None:
    from structlog.testing import capture_logs

    from smyth_temporal import ApprovalPolicy, EscalationStep

    policy = ApprovalPolicy(
        notify=("hook", "pager"),
        escalation=[EscalationStep(after=timedelta(hours=1), roles=("lead",), notify=("lead",))],
    )
    notifications = Notifications.parse(["hook=https://hooks.example.com/x"], webhook_secret=SECRET)
    with capture_logs() as logs:
        assert notifications.missing([policy, ApprovalPolicy(notify=("hook",))]) == [
            "lead",
            "pager",
        ]
        assert notifications.missing([ApprovalPolicy(notify=("hook",))]) == []
    [warning] = [e for e in logs if e["event"] == "notify.channels_missing"]
    assert (warning["channels"], warning["have"]) == (["lead", "pager"], ["hook"])


def test_the_webhook_body_leaves_slacks_own_fields_alone() -> None:
    # Legacy Slack webhooks read these as where and as whom to post: a body that had
    # them would post elsewhere, or be refused.
    body = webhook_body(notice(), "https://agents.example.com/console")
    slack_fields = {"channel", "username", "icon_emoji", "icon_url", "blocks", "attachments"}
    assert slack_fields.isdisjoint(body)
    assert body["notification_channel"] == "hook"


def test_the_models_reason_cannot_add_lines_to_the_email() -> None:
    crafted = notice().request.model_copy(
        update={"reason": "ok\n\nOpen the request: https://evil.example.com/phish\n"}
    )
    message = email_message(
        notice().model_copy(update={"request": crafted}),
        "https://agents.example.com/console",
        sender="agents@example.com",
        recipients=("ops@example.com",),
    )
    lines = message.get_content().splitlines()
    links = [line for line in lines if line.startswith("Open the request:")]
    assert links == [
        "Open the request: https://agents.example.com/console/#/runs/pay-42/approvals/apr-1-call_1_0"
    ]
    [reason] = [line for line in lines if line.startswith("Reason:")]
    assert "evil.example.com" in reason  # shown, quoted, on its own line
