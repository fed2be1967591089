"""MCP servers for the tests: the real ones from PyPI, and a streamable-HTTP probe.

``ProbeServer`` is written with the ``mcp`` SDK's own server and runs in-process on
loopback under uvicorn: it records the ``_meta`` of every call, fails on purpose
(JSON-RPC errors from a tool, or an HTTP 503 before the request reaches the server)
and can grow a tool while a run goes on.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn
from mcp import MCPError
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import INTERNAL_ERROR, ToolAnnotations

from smyth_temporal.mcp import HttpServer, StdioServer
from smyth_temporal.types.mcp import MCP_IDEMPOTENCY_KEY_META

REPO_ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def time_server() -> StdioServer:
    return StdioServer([str(BIN / "mcp-server-time"), "--local-timezone", "UTC"])


def git_server(repository: Path) -> StdioServer:
    return StdioServer([str(BIN / "mcp-server-git"), "--repository", str(repository)])


def ledger_server(ledger: Path) -> StdioServer:
    return StdioServer(
        [sys.executable, "-m", "tests.helpers.mcp_ledger_server"],
        env={"SMYTH_TEST_LEDGER": str(ledger), "PYTHONPATH": str(REPO_ROOT)},
        cwd=str(REPO_ROOT),
    )


def make_repository(path: Path) -> Path:
    """A git repository with one commit and one file staged for the next."""
    path.mkdir()

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=path, check=True, capture_output=True)

    git("init", "-q")
    git("config", "user.email", "tests@example.com")
    git("config", "user.name", "tests")
    (path / "README").write_text("hello\n")
    git("add", "README")
    git("commit", "-q", "-m", "first")
    (path / "notes.txt").write_text("staged\n")
    git("add", "notes.txt")
    return path


def staged(repository: Path) -> list[str]:
    out = subprocess.run(
        ["git", "diff", "--cached", "--name-only"],
        cwd=repository,
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.split()


IDEMPOTENT = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True)
SIDE_EFFECT = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False)
READ_ONLY = ToolAnnotations(read_only_hint=True)


@dataclass
class ProbeServer:
    """A streamable-HTTP MCP server on loopback that records and fails on purpose."""

    charge_failures: int = 0
    """JSON-RPC internal errors ``charge`` (idempotent) answers before it succeeds."""
    send_failures: int = 0
    """JSON-RPC internal errors ``send`` (a side effect) answers before it succeeds."""
    http_failures: int = 0
    """``tools/call`` requests answered with HTTP 503 before they reach the server."""
    calls: list[tuple[str, str | None]] = field(default_factory=list)
    """Every call that reached a tool or the 503 gate: (tool or ``503:<tool>``, key)."""
    authorizations: list[str] = field(default_factory=list)
    """The ``Authorization`` header of every POST (what a worker's credentials look like)."""

    def __post_init__(self) -> None:
        self.server = server = MCPServer("probe")

        @server.tool(annotations=IDEMPOTENT)
        async def charge(amount: int, ctx: Context) -> str:
            """Charge an amount (idempotent with the key in _meta).

            Args:
                amount: Cents.
            """
            self._record("charge", ctx)
            if self.charge_failures > 0:
                self.charge_failures -= 1
                raise MCPError(INTERNAL_ERROR, "ledger busy")
            return f"charged {amount}"

        @server.tool(annotations=SIDE_EFFECT)
        async def send(text: str, ctx: Context) -> str:
            """Send a message (not safe to repeat).

            Args:
                text: The message.
            """
            self._record("send", ctx)
            if self.send_failures > 0:
                self.send_failures -= 1
                raise MCPError(INTERNAL_ERROR, "mail relay broke mid-send")
            return f"sent {text}"

        @server.tool(annotations=READ_ONLY)
        async def dump(size: int) -> str:
            """Return a large text.

            Args:
                size: Characters.
            """
            return "x" * size

        @server.tool(annotations=READ_ONLY)
        async def lookup(key: str) -> str:
            """Look a key up.

            Args:
                key: The key.
            """
            return f"value of {key}"

        self.port = _free_port()
        self._uvicorn: uvicorn.Server | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def config(self) -> HttpServer:
        return HttpServer(self.url)

    def add_tool(self, name: str) -> None:
        async def added(text: str) -> str:
            return f"{name}: {text}"

        self.server.add_tool(
            added, name=name, description="Added while a run goes on.", annotations=READ_ONLY
        )

    def add_whoami(self) -> None:
        """A tool that repeats the request's credentials back (a careless server)."""

        async def whoami() -> str:
            return f"you sent {self.authorizations[-1] if self.authorizations else 'nothing'}"

        self.server.add_tool(
            whoami, name="whoami", description="Who am I to you?", annotations=READ_ONLY
        )

    def keys(self, tool: str) -> list[str | None]:
        return [key for name, key in self.calls if name == tool]

    async def start(self) -> None:
        app = _Gate(self.server.streamable_http_app(), self)
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self._uvicorn = uvicorn.Server(config)
        self._task = asyncio.create_task(self._uvicorn.serve())
        while not self._uvicorn.started:
            if self._task.done():
                await self._task
            await asyncio.sleep(0.02)

    async def stop(self) -> None:
        if self._uvicorn is not None and self._task is not None:
            self._uvicorn.should_exit = True
            await self._task

    async def __aenter__(self) -> ProbeServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def _record(self, tool: str, ctx: Context) -> None:
        meta = dict(ctx.request_context.meta or {})
        self.calls.append((tool, meta.get(MCP_IDEMPOTENCY_KEY_META)))


Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class _Gate:
    """ASGI middleware: answers the first ``http_failures`` tool calls with a 503."""

    def __init__(self, app: Any, probe: ProbeServer) -> None:
        self.app = app
        self.probe = probe

    async def __call__(self, scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        self.probe.authorizations.append(headers.get(b"authorization", b"").decode())
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        request = json.loads(body or b"{}")
        if request.get("method") == "tools/call" and self.probe.http_failures > 0:
            self.probe.http_failures -= 1
            params = request.get("params") or {}
            key = (params.get("_meta") or {}).get(MCP_IDEMPOTENCY_KEY_META)
            self.probe.calls.append((f"503:{params.get('name')}", key))
            await send({"type": "http.response.start", "status": 503, "headers": []})
            await send({"type": "http.response.body", "body": b"busy"})
            return
        replayed = False

        async def replay() -> MutableMapping[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def clock_model() -> Any:
    """The model a ``smyth worker --model tests.helpers.mcp_servers:clock_model`` process uses."""
    from smyth_temporal.testing import ScriptedModel, reply, tool_call

    def answer(request: Any) -> Any:
        return reply(" | ".join(m.content or "" for m in request.messages if m.role == "tool"))

    return ScriptedModel([tool_call("get_current_time", timezone="Asia/Tokyo"), answer])
