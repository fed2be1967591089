"""What a notification says: the webhook's JSON body and the e-mail, from one notice.

Pure functions. The arguments come from the model, so whatever they hold is shown as
data: escaped in the Slack text (``&``, ``<``, ``>``: a crafted argument cannot make a
link that reads "Approve here"), never in an e-mail header, and masked of the
worker's secrets like every other text that leaves it.
"""

from __future__ import annotations

import json
from email.message import EmailMessage
from typing import Any
from urllib.parse import quote

from smyth_temporal._redaction import redact, redact_value
from smyth_temporal.types.notifications import ApprovalNotice

__all__ = ["console_link", "email_message", "webhook_body"]

_MAX_ARGUMENTS_TEXT = 1500
"""How much of the arguments' JSON the text shows (the structured body has them all)."""

_MAX_HEADER_TEXT = 120

_MAX_REASON = 500
"""How much of the model's reason an e-mail quotes (the webhook's data has it all)."""


def console_link(console_url: str | None, notice: ApprovalNotice) -> str | None:
    """The console page that shows the request: the run's view, at the request.

    ``<console>/#/runs/<workflow id>/approvals/<request id>``, each part percent-encoded
    whole (a ``/`` in a workflow id included), or ``None`` without a console address.
    """
    if not console_url:
        return None
    base = console_url.rstrip("/")
    workflow = quote(notice.workflow_id, safe="")
    request = quote(notice.request.id, safe="")
    return f"{base}/#/runs/{workflow}/approvals/{request}"


def _headline(notice: ApprovalNotice) -> str:
    roles = ", ".join(notice.roles) or "approver"
    if notice.kind == "escalated":
        return (
            f"Escalated (step {notice.escalation}): {notice.request.tool} still waits for "
            f"a decision; {roles} may now decide"
        )
    return f"Approval needed: {notice.request.tool}; {roles} may decide"


def _arguments_text(arguments: dict[str, Any]) -> str:
    text = json.dumps(arguments, ensure_ascii=False, sort_keys=True, indent=2)
    if len(text) > _MAX_ARGUMENTS_TEXT:
        text = text[:_MAX_ARGUMENTS_TEXT] + f"\n... ({len(text)} characters in all)"
    return text


def _slack_escape(text: str) -> str:
    # Slack's mrkdwn reads <...> as links and mentions; its own escaping rule.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def webhook_body(notice: ApprovalNotice, console_url: str | None) -> dict[str, Any]:
    """The webhook's JSON body: a Slack-compatible ``text`` and the request as data."""
    request = notice.request
    link = console_link(console_url, notice)
    text = "\n".join(
        [
            f"*{_slack_escape(_headline(notice))}*",
            f"Run {_slack_escape(_one_line(notice.workflow_id))} "
            f"({_slack_escape(_one_line(notice.agent))}), "
            f"request {_slack_escape(request.id)}, deadline {request.deadline.isoformat()} "
            f"(then {request.on_timeout})",
            "```" + _slack_escape(_arguments_text(request.arguments)).replace("```", "'''") + "```",
            *([f"<{link}|Open the request in the console>"] if link else []),
        ]
    )
    body: dict[str, Any] = {
        "text": text,
        "event": f"approval.{notice.kind}",
        "delivery": notice.delivery_key,
        "workflow_id": notice.workflow_id,
        "agent": notice.agent,
        # Not "channel": legacy Slack webhooks read that as the channel to post in.
        "notification_channel": notice.channel,
        "escalation": notice.escalation or None,
        "roles": notice.roles,
        "deadline": request.deadline.isoformat(),
        "console_url": link,
        "request": {
            "id": request.id,
            "tool": request.tool,
            "arguments": request.arguments,
            "arguments_sha256": request.arguments_sha256,
            "reason": request.reason,
            "step": request.step,
            "requested_at": request.requested_at.isoformat(),
            "deadline": request.deadline.isoformat(),
            "on_timeout": request.on_timeout,
        },
    }
    masked: dict[str, Any] = redact_value(body)
    return masked


def _one_line(text: str) -> str:
    # No line breaks or control characters where a line (or a header) is expected,
    # whatever a workflow id holds.
    return "".join(c if c.isprintable() else " " for c in text)


def _quoted(text: str) -> str:
    # The model wrote it: one quoted line, so it cannot add lines of its own (an
    # "Open the request: <somewhere else>" above the real one).
    short = text if len(text) <= _MAX_REASON else text[:_MAX_REASON] + "..."
    return json.dumps(short, ensure_ascii=False)


def _header_text(text: str) -> str:
    return _one_line(text)[:_MAX_HEADER_TEXT]


def email_message(
    notice: ApprovalNotice, console_url: str | None, *, sender: str, recipients: tuple[str, ...]
) -> EmailMessage:
    """The e-mail: a plain-text body with the request, its arguments and the link.

    Its ``Message-ID`` derives from the delivery key, so a copy sent twice (a worker
    that crashed after sending) is the same message to the receiving side.
    """
    request = notice.request
    link = console_link(console_url, notice)
    lines = [
        _headline(notice) + ".",
        "",
        f"Run:       {_one_line(notice.workflow_id)} ({_one_line(notice.agent)})",
        f"Request:   {request.id} (step {request.step})",
        f"Tool:      {request.tool}",
        f"Deadline:  {request.deadline.isoformat()} (then {request.on_timeout})",
        f"Who:       {', '.join(notice.roles)}",
        f"Hash:      {request.arguments_sha256}",
        *([f"Reason:    {_quoted(request.reason)}"] if request.reason else []),
        "",
        "Arguments:",
        _arguments_text(request.arguments),
        "",
        f"Open the request: {link}" if link else "Decide with: smyth approve (or the console)",
    ]
    message = EmailMessage()
    message["Subject"] = _header_text(redact(_headline(notice) + f" ({notice.workflow_id})"))
    message["From"] = sender
    message["To"] = ", ".join(recipients)
    message["Message-ID"] = f"<{notice.delivery_id}@smyth-temporal>"
    message["X-Smyth-Delivery"] = notice.delivery_id
    message.set_content(redact("\n".join(lines)))
    return message
