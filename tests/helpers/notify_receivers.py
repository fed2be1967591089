"""Receivers of approval notifications on loopback: a webhook endpoint and an SMTP server."""

from __future__ import annotations

import asyncio
import socket
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Delivery:
    """One POST the webhook receiver got, and what it answered."""

    headers: dict[str, str]
    body: bytes
    status: int


@dataclass
class WebhookReceiver:
    """Answers each POST with the next of ``statuses``, then 200; records every one."""

    statuses: list[int] = field(default_factory=list)
    deliveries: list[Delivery] = field(default_factory=list)
    url: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, headers: dict[str, str], body: bytes) -> int:
        with self._lock:
            status = self.statuses.pop(0) if self.statuses else 200
            self.deliveries.append(Delivery(headers, body, status))
            return status

    @property
    def accepted(self) -> list[Delivery]:
        with self._lock:
            return [d for d in self.deliveries if 200 <= d.status < 300]


@contextmanager
def webhook_receiver(
    statuses: list[int] | None = None, path: str = "/hooks/T0/B0/s3cr3t-path"
) -> Iterator[WebhookReceiver]:
    receiver = WebhookReceiver(statuses=list(statuses or []))

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            status = receiver.answer({k.lower(): v for k, v in self.headers.items()}, body)
            self.send_response(status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}{path}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class Mailbox:
    """The messages an SMTP server on loopback accepted."""

    messages: list[EmailMessage] = field(default_factory=list)
    envelopes: list[tuple[str, list[str]]] = field(default_factory=list)
    logins: list[tuple[str, str]] = field(default_factory=list)
    port: int = 0
    login: tuple[str, str] | None = None
    refuse_recipients: bool = False

    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Any, address: str, options: list[str]
    ) -> str:
        if self.refuse_recipients:
            return "550 5.1.1 no such user"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    def authenticate(
        self, server: Any, session: Any, envelope: Any, mechanism: str, auth_data: Any
    ) -> Any:
        from aiosmtpd.smtp import AuthResult

        given = (auth_data.login.decode(), auth_data.password.decode())
        self.logins.append(given)
        return AuthResult(success=given == self.login)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        message = message_from_bytes(envelope.content, policy=policy.default)
        assert isinstance(message, EmailMessage)
        self.messages.append(message)
        self.envelopes.append((envelope.mail_from, list(envelope.rcpt_tos)))
        return "250 OK"


@contextmanager
def smtp_server(
    login: tuple[str, str] | None = None, *, refuse_recipients: bool = False
) -> Iterator[Mailbox]:
    """An SMTP server on loopback; with ``login``, it requires that user and password;
    with ``refuse_recipients``, it refuses every recipient (550)."""
    from aiosmtpd.controller import Controller

    mailbox = Mailbox(port=_free_port(), login=login, refuse_recipients=refuse_recipients)
    options: dict[str, Any] = {}
    if login is not None:
        # Loopback only; aiosmtpd warns about AUTH without TLS, which is the point here.
        warnings.filterwarnings("ignore", "Requiring AUTH while not requiring TLS")
        options = {
            "authenticator": mailbox.authenticate,
            "auth_required": True,
            "auth_require_tls": False,
        }
    controller = Controller(mailbox, hostname="127.0.0.1", port=mailbox.port, **options)
    controller.start()
    try:
        yield mailbox
    finally:
        controller.stop()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def eventually(check: Callable[[], bool], what: str, *, tries: int = 400) -> None:
    """Wait until ``check()`` holds (polling; a bound on tries, not a time threshold)."""
    for _ in range(tries):
        if check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"never happened: {what}")
