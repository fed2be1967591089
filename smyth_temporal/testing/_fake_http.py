"""The HTTP plumbing the fake vendor APIs share: a loopback server in a daemon thread.

A fake subclasses :class:`FakeHTTPServer` and answers each request in :meth:`answer`
with :meth:`Exchange.send_json` or a server-sent event stream
(:meth:`Exchange.start_stream`, :meth:`Exchange.event`, :meth:`Exchange.end_stream`);
the server records every request (:attr:`FakeHTTPServer.requests`) before it is
answered. Built on the standard library (``http.server``), so a fake adds no dependency
and runs beside any event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

__all__ = ["Exchange", "FakeHTTPServer", "RecordedRequest"]


@dataclass(frozen=True)
class RecordedRequest:
    """A request a fake server received.

    Attributes:
        method: The HTTP method, such as ``"POST"``.
        path: The request target as sent, such as ``"/v1/chat/completions"`` (with the
            query string, if any).
        headers: The request headers, names lowercased (HTTP header names are
            case-insensitive, so lowercasing makes lookups predictable); repeated
            headers are joined with ``", "``.
        json: The decoded JSON body, or ``None`` if the body was empty or not JSON.
        body: The raw body bytes.
        received_at: When the request arrived, in ``time.monotonic()`` seconds, so
            tests can measure gaps between attempts (retry backoff).
    """

    method: str
    path: str
    headers: dict[str, str]
    json: Any
    body: bytes
    received_at: float

    @property
    def streamed(self) -> bool:
        """Whether the request asked for a streamed answer (``"stream": true``).

        Added in 0.3.0.
        """
        return isinstance(self.json, dict) and self.json.get("stream") is True


class Exchange:
    """One request being answered: what was sent, and the ways to answer it."""

    def __init__(self, handler: _Handler, request: RecordedRequest) -> None:
        self._handler = handler
        self.request = request

    def send_json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        """Answer with a JSON body (``None``: an empty one); ``headers`` override the defaults."""
        data = b"" if body is None else json.dumps(body).encode()
        defaults = {"Content-Type": "application/json"} if body is not None else {}
        self.send(status, data, {**defaults, **(headers or {})})

    def send(self, status: int, data: bytes, headers: dict[str, str]) -> None:
        """Answer with ``data`` and exactly these headers (and its ``Content-Length``)."""
        handler = self._handler
        try:
            handler.send_response(status)
            for name, value in {"Content-Length": str(len(data)), **headers}.items():
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(data)
            handler.wfile.flush()
        except ConnectionError:
            handler.close_connection = True  # the client gave up (a shorter timeout)

    def start_stream(self, status: int = 200, headers: dict[str, str] | None = None) -> None:
        """Open a server-sent event stream (chunked: its length is not known)."""
        handler = self._handler
        handler.send_response(status)
        sent = {"Content-Type": "text/event-stream; charset=utf-8", **(headers or {})}
        sent["Transfer-Encoding"] = "chunked"
        for name, value in sent.items():
            handler.send_header(name, value)
        handler.end_headers()

    def event(self, data: str, name: str | None = None) -> None:
        """Send one server-sent event (``data:``, with an ``event:`` line if named)."""
        head = f"event: {name}\n" if name is not None else ""
        self.chunk(f"{head}data: {data}\n\n".encode())

    def chunk(self, data: bytes) -> None:
        """Write one chunk of the chunked transfer encoding (empty: the last one)."""
        self._handler.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")

    def end_stream(self) -> None:
        """End the stream with the chunked body's last, empty chunk."""
        self.chunk(b"")

    def hang_up(self) -> None:
        """Close the connection after this exchange, without answering further."""
        self._handler.close_connection = True


class FakeHTTPServer:
    """A fake API on 127.0.0.1 and an ephemeral port (``with`` or ``async with``).

    Subclasses implement :meth:`answer`; :attr:`base_url` is ``http://127.0.0.1:PORT``
    plus :attr:`url_suffix`.
    """

    url_suffix = ""
    """What the vendor's client expects after the host (``"/v1"`` for OpenAI's)."""

    # Seconds between the serving loop's checks whether to stop; stop() wakes it at once.
    _poll_interval = 0.5

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        # Set on stop, so handlers sleeping through a scripted delay wake up at once.
        self._stopping = threading.Event()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    def answer(self, exchange: Exchange) -> None:
        """Answer one request (called in a handler thread, after it was recorded)."""
        raise NotImplementedError

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        """Bind the port and start serving in a daemon thread.

        Raises:
            RuntimeError: If the server was already started.
        """
        if self._httpd is not None or self._stopping.is_set():
            raise RuntimeError(f"{type(self).__name__} can only be started once")
        self._httpd = _Server(("127.0.0.1", 0), _Handler, self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": self._poll_interval},
            name=f"{type(self).__name__}-{self.port}",
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and close the listening socket. Safe to call more than once."""
        self._stopping.set()
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        # shutdown() waits for the serving loop to see its flag, which it checks only
        # between polls (50 ms apart): a stop cost ~40 ms, once per test using a fake.
        # Connecting wakes the poll at once; keep at it until the loop has stopped.
        stopping = threading.Thread(target=httpd.shutdown, daemon=True)
        stopping.start()
        while stopping.is_alive():
            _knock(httpd.server_address)
            stopping.join(0.001)
        httpd.server_close()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # shutdown() waits for the serving thread to notice; keep the loop free meanwhile.
        await asyncio.to_thread(self.stop)

    # -- addresses and inspection ----------------------------------------------------

    @property
    def port(self) -> int:
        """The port the server listens on.

        Raises:
            RuntimeError: If the server is not running.
        """
        if self._httpd is None:
            raise RuntimeError(f"{type(self).__name__} is not running; call start() first")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """The base URL to give the vendor's client."""
        return f"http://127.0.0.1:{self.port}{self.url_suffix}"

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds``; return False if the server stopped meanwhile."""
        return not self._stopping.wait(seconds)


def _knock(address: Any) -> None:
    """Open and close a connection to ``address``, waking a server's poll."""
    with contextlib.suppress(OSError):  # refused: the server has gone, nothing to wake
        socket.create_connection(address[:2], timeout=0.1).close()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default listen backlog is 5: a test firing a few dozen concurrent
    # requests would overflow it and see connections reset.
    request_queue_size = 128

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        fake: FakeHTTPServer,
    ) -> None:
        super().__init__(address, handler)
        self.fake = fake

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients hanging up (timeouts, closed pools) are routine in tests; anything
        # else is a bug in the fake and should be visible.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 keeps connections alive like a real endpoint would, so the client's
    # connection pool is exercised too. Every response therefore sets Content-Length,
    # or is sent chunked (streams): either way the client knows where it ends.
    protocol_version = "HTTP/1.1"
    # Idle keep-alive connections are closed after this many seconds, so handler
    # threads do not linger forever after a test.
    timeout = 30
    # Headers and body go out in separate writes; with Nagle's algorithm on, the body
    # waits for the client's delayed ACK and every request costs ~40 ms.
    disable_nagle_algorithm = True

    server: _Server

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def do_PATCH(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def log_message(self, format: str, *args: Any) -> None:
        # The default writes every request to stderr; the requests are recorded instead.
        pass

    def _handle(self) -> None:
        fake = self.server.fake
        received_at = time.monotonic()
        # The vendors' clients send Content-Length for JSON bodies; chunked uploads
        # are not supported.
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        try:
            decoded: Any = json.loads(raw) if raw else None
        except ValueError:
            decoded = None
        headers: dict[str, str] = {}
        for name, value in self.headers.items():
            key = name.lower()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        request = RecordedRequest(self.command, self.path, headers, decoded, raw, received_at)
        fake._record(request)
        try:
            fake.answer(Exchange(self, request))
        except ConnectionError:
            self.close_connection = True  # the client gave up midway
