"""``smyth send`` and ``smyth chat``: talk to an agent's persistent session.

Both go through ``AgentClient.send`` (update-with-start), so a session is started by
its first message and any later process can carry on with it. Replies are shown as the
agent writes them (``send(..., stream=True)``), unless ``--no-stream`` or ``--json``.

Added in 0.2.0; streamed replies and ``--while-busy`` added in 0.3.0.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Annotated, Any, TextIO, cast, get_args

import typer
from temporalio.client import WorkflowExecutionStatus, WorkflowUpdateRPCTimeoutOrCancelledError
from temporalio.service import RPCError

from smyth_temporal.cli._common import (
    CommonOptions,
    agent_type,
    choice,
    command,
    error_line,
    non_empty,
    run,
    status,
)
from smyth_temporal.cli._live import LiveText, stdout_console
from smyth_temporal.cli._output import format_usage, one_line
from smyth_temporal.clients import PICKUP_TIMEOUT, AgentClient
from smyth_temporal.exceptions import AgentNotFoundError, ClientError, InvalidMessageError
from smyth_temporal.types.agent import AgentState
from smyth_temporal.types.sessions import SessionReply, WhileBusy, session_workflow_id

__all__ = ["CHAT_PROMPT", "PROGRESS_DELAY", "TICK_INTERVAL", "app"]

CHAT_PROMPT = "you> "
"""What ``smyth chat`` shows before each line it reads from a terminal."""

PROGRESS_DELAY = 0.5
"""Seconds a reply may take before the waiting line appears (terminals only)."""

TICK_INTERVAL = 1.0
"""Seconds between two updates of the waiting line."""

_EXISTS_POLL = 0.05

_SESSION_EPILOG = "\n\n".join(
    [
        (
            "A session is one long-lived agent run per agent, tenant and session id (workflow id "
            "<agent>-session-<tenant>-<session>). The first message starts it on the agents' task "
            "queue; each message waits for the agent's reply. An idle session holds no worker "
            "memory, so it may wait days for its next message."
        ),
        "examples:",
        '  smyth send Concierge --session alice "Book a table for two."',
        '  smyth send Concierge --session alice --json "And a taxi at eight."',
        '  smyth send Concierge --session alice --while-busy interrupt "No, for three."',
        "  smyth chat Concierge --session alice        (/quit leaves it open, /close ends it)",
        "  printf 'hello\\n/close\\n' | smyth chat Concierge --session bob",
    ]
)

_CHAT_HELP = "/quit (or end of input) leaves the session open, /close ends it, /help shows this"

# Agent statuses worth naming on the waiting line (``idle``/``running`` say nothing).
_BUSY = {"thinking": "thinking", "acting": "running", "awaiting_approval": "awaiting approval"}


app = typer.Typer()

_Agent = Annotated[
    str, typer.Argument(metavar="AGENT", help="the agent's workflow type name or module:Class")
]
_SessionId = Annotated[
    str, typer.Option("--session", parser=non_empty, metavar="ID", help="names the session")
]
_Tenant = Annotated[str, typer.Option("--tenant", parser=non_empty, help="whose session")]
_Sender = Annotated[
    str | None,
    typer.Option(
        "--sender", parser=non_empty, metavar="NAME", help="who sends, kept in the session"
    ),
]
_NoStream = Annotated[
    bool,
    typer.Option("--no-stream", help="print the reply once it is complete, not as it is written"),
]


def _while_busy(text: str) -> WhileBusy:
    return cast(WhileBusy, choice(*get_args(WhileBusy))(text))


@command(
    app,
    "send",
    task_queue=True,
    epilog=_SESSION_EPILOG,
    help="Send TEXT to an agent's session (starting it if need be) and print the agent's reply.",
)
def send(
    options: CommonOptions,
    agent: _Agent,
    text: Annotated[str, typer.Argument(metavar="TEXT", help="the message")],
    session: _SessionId,
    tenant: _Tenant = "default",
    sender: _Sender = None,
    no_wait: Annotated[
        bool,
        typer.Option(
            "--no-wait",
            help="post the message as an event and return at once; the agent answers it, but "
            "nobody gets the reply",
        ),
    ] = False,
    json_: Annotated[
        bool,
        typer.Option(
            "--json", help="print the SessionReply as JSON once complete (null with --no-wait)"
        ),
    ] = False,
    while_busy: Annotated[
        str | None,
        typer.Option(
            "--while-busy",
            parser=_while_busy,
            metavar="[enqueue|reject|interrupt|steer]",
            help="if the session is answering another message: answer this one after it "
            "(enqueue), refuse this one (reject), stop that answer and take this one "
            "(interrupt), or add this one to it (steer); default: the agent's while_busy",
        ),
    ] = None,
    no_stream: _NoStream = False,
) -> None:
    """Send one message to an agent's session and print the reply."""
    streamed = not (no_wait or json_ or no_stream)
    message = _Message(text, cast(WhileBusy | None, while_busy), streamed)
    run(_send(options, _Target(agent, session, tenant, sender), message, no_wait, json_))


async def _send(
    options: CommonOptions, target: _Target, message: _Message, no_wait: bool, as_json: bool
) -> None:
    _ignore_unread_start_failures()
    session = await _Session.open(options, target)
    with LiveText(stdout_console()) as view:
        reply = await session.send(message, wait=not no_wait, view=view)
    if reply is None:
        print("null" if as_json else f"sent to {session.workflow_id} (not waiting for a reply)")
    elif as_json:
        print(reply.model_dump_json(indent=2))
    else:
        if not message.streamed:
            print(reply.text, flush=True)
        status(_summary(session, reply))


@command(
    app,
    "chat",
    task_queue=True,
    epilog=_SESSION_EPILOG,
    help="Chat with an agent's session: read messages line by line from stdin (a terminal or "
    f"a pipe), send each to the session and print the agent's replies. {_CHAT_HELP}.",
)
def chat(
    options: CommonOptions,
    agent: _Agent,
    session: _SessionId,
    tenant: _Tenant = "default",
    sender: _Sender = None,
    no_stream: _NoStream = False,
) -> None:
    """Chat with an agent's session in the terminal."""
    run(_chat(options, _Target(agent, session, tenant, sender), streamed=not no_stream))


async def _chat(options: CommonOptions, target: _Target, *, streamed: bool) -> None:
    _ignore_unread_start_failures()
    interactive = sys.stdin.isatty()
    session = await _Session.open(options, target)
    if interactive:
        status(f"session {session.workflow_id}; {_CHAT_HELP}")
    while True:
        line = await _read_line(CHAT_PROMPT if interactive else "")
        if line is None:  # end of input
            if interactive:
                print()  # the shell's prompt on a line of its own after Ctrl-D
            break
        text = line.strip()
        if not text:
            continue
        if text == "/quit":
            break
        if text == "/help":
            status(_CHAT_HELP)
            continue
        if text == "/close":
            await session.close()
            status(f"closed session {session.workflow_id}")
            return
        try:
            with LiveText(stdout_console(), prefix=f"{session.agent}> ") as view:
                reply = await session.send(_Message(text, streamed=streamed), view=view)
        except InvalidMessageError as exc:
            status(error_line(exc))
            continue
        assert reply is not None  # sent with wait=True
        if not streamed:
            print(f"{session.agent}> {reply.text}", flush=True)
    status(f"session {session.workflow_id} stays open; go on with `{session.command()}`")


@dataclass(frozen=True)
class _Target:
    """The session the command line names."""

    agent: str
    session_id: str
    tenant: str
    sender: str | None


@dataclass(frozen=True)
class _Message:
    """A message to send, and how."""

    text: str
    while_busy: WhileBusy | None = None
    streamed: bool = False
    """Show the reply as it is written (the view then ends with the reply's text)."""


# -- a session, from the CLI's side -----------------------------------------------


@dataclass
class _Session:
    """One agent's session as the CLI talks to it."""

    agents: AgentClient
    agent: str
    session_id: str
    tenant: str
    sender: str | None
    pollers: int
    running: bool = False
    """Known to have a running run a worker has served (no pickup check needed)."""

    @classmethod
    async def open(cls, options: CommonOptions, target: _Target) -> _Session:
        """Connect, and warn when no worker polls the queue (the reply would wait)."""
        agent = agent_type(target.agent)
        agents = await AgentClient.connect(options.settings())
        pollers = await agents.workers_polling()
        session = cls(agents, agent, target.session_id, target.tenant, target.sender, pollers)
        if session.pollers == 0:
            status(
                f"warning: no worker polls task queue {agents.task_queue!r}; the message "
                f"waits until one does (start one with `smyth worker module:{agent}`)"
            )
        return session

    @property
    def workflow_id(self) -> str:
        """The session's workflow id."""
        return session_workflow_id(self.agent, self.tenant, self.session_id)

    def command(self) -> str:
        """The ``smyth chat`` command that goes on with this session."""
        tenant = f" --tenant {self.tenant}" if self.tenant != "default" else ""
        return f"smyth chat {self.agent} --session {self.session_id}{tenant}"

    async def send(
        self, message: _Message, *, wait: bool = True, view: LiveText | None = None
    ) -> SessionReply | None:
        """Send one message, showing progress on a terminal while the reply is due.

        A message that starts the session is watched until a worker takes it: a worker
        on the queue without the agent fails it forever, which ends in an error here.
        A streamed reply is shown on ``view`` as it is written.

        Raises:
            InvalidMessageError: The session refused the message.
            UnknownAgentError: No worker on the queue serves the agent.
            ClientError: The wait for the reply was cut short by the server.
        """
        check = self.pollers > 0 and not self.running and not await self._is_running()
        tasks: list[asyncio.Task[Any]] = []
        try:
            async with _waiting(self.agents, self.agent, self.workflow_id, enabled=wait) as quiet:
                sending = asyncio.create_task(self._deliver(message, wait, view, quiet))
                checking = asyncio.create_task(self._confirm_pickup()) if check else None
                tasks = [t for t in (sending, checking) if t is not None]
                if checking is not None:
                    await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
                    if checking.done() or not wait or sending.exception() is not None:
                        # Its error (no worker serves the agent) explains a failed send.
                        await checking
                reply = await sending
        except WorkflowUpdateRPCTimeoutOrCancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise asyncio.CancelledError from None  # Ctrl-C: exit 130, not an error line
            raise ClientError(
                f"the wait for the reply of {self.workflow_id} was cut short; the agent may "
                f"still answer: see `smyth state {self.workflow_id}`"
            ) from None
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)  # read every outcome
        self.running = True
        return reply

    async def _deliver(
        self, message: _Message, wait: bool, view: LiveText | None, quiet: Callable[[], None]
    ) -> SessionReply | None:
        agent, session_id, text = self.agent, self.session_id, message.text
        tenant, sender, while_busy = self.tenant, self.sender, message.while_busy
        # Streaming first asks the session where its stream ends, and that query waits
        # for a worker: with none polling, the message itself would wait for it.
        if view is None or not message.streamed or self.pollers == 0:
            reply = await self.agents.send(
                agent, session_id, text, tenant=tenant, sender=sender, wait=wait,
                while_busy=while_busy,
            )  # fmt: skip
        else:
            stream = self.agents.send(
                agent, session_id, text, tenant=tenant, sender=sender, while_busy=while_busy,
                stream=True,
            )  # fmt: skip
            async for chunk in stream:
                quiet()  # the words themselves show that the agent answers
                view.add(chunk)
            reply = stream.reply
        if view is not None and message.streamed and reply is not None:
            view.finish(reply.text)  # the reply's text is the truth; chunks a view of it
        return reply

    async def close(self) -> None:
        """End the session once the messages already sent to it are answered.

        Raises:
            ClientError: The session is not open.
        """
        try:
            await self.agents.close_session(self.agent, self.session_id, tenant=self.tenant)
        except AgentNotFoundError as exc:
            raise ClientError(
                f"session {self.workflow_id} is not open (never started, or ended); "
                "there is nothing to close"
            ) from exc

    async def _is_running(self) -> bool:
        return await self.agents.status(self.workflow_id) == WorkflowExecutionStatus.RUNNING

    async def _confirm_pickup(self) -> None:
        """Once the message has started the session's run, wait for a worker to take it."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + PICKUP_TIMEOUT
        while not await self._is_running():
            if loop.time() > deadline:
                return  # not started: the send itself reports why
            await asyncio.sleep(_EXISTS_POLL)
        await self.agents.confirm_pickup(self.workflow_id, self.agent, note=status)


def _ignore_unread_start_failures() -> None:
    """Keep temporalio's second copy of a failed update-with-start off stderr.

    When an update-with-start call fails before the server answers, temporalio also
    sets the error on the start operation's future. ``AgentClient.send`` reads it when
    the call fails, but a call cancelled (Ctrl-C) mid-flight can have it set after
    ``send`` is gone; asyncio would then log "Future exception was never retrieved"
    with a traceback after the CLI's one error line. ``send`` raises the error itself,
    so nothing is lost. Other unread failures are logged as usual.
    """

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        unread = context.get("future")
        error = context.get("exception")
        if not isinstance(unread, asyncio.Task) and isinstance(
            error, RPCError | asyncio.CancelledError
        ):
            return
        loop.default_exception_handler(context)

    asyncio.get_running_loop().set_exception_handler(handle)


def _summary(session: _Session, reply: SessionReply) -> str:
    """``message 2 of Concierge-session-default-s1; 2 requests, 40 tokens ...``."""
    return f"message {reply.number} of {session.workflow_id}; {format_usage(reply.usage)}"


# -- terminal ---------------------------------------------------------------------


@contextlib.asynccontextmanager
async def _waiting(
    agents: AgentClient,
    agent: str,
    workflow_id: str,
    *,
    enabled: bool = True,
    stream: TextIO | None = None,
) -> AsyncIterator[Callable[[], None]]:
    """Show ``waiting for AGENT… 3s`` on ``stream`` (stderr) if it is a terminal.

    The line appears after ``PROGRESS_DELAY``, says what the agent does when a state
    query tells (thinking, running a tool, awaiting an approval), and is erased at the
    end, or earlier by the function it yields (when the reply starts to show). It
    leaves the cursor at the start of the line, so a status line printed meanwhile
    overwrites it rather than running on from it.
    """
    out = stream or sys.stderr
    if not enabled or not out.isatty():
        yield lambda: None
        return
    ticker = asyncio.create_task(_tick(agents, agent, workflow_id, out))
    stopped = asyncio.Event()

    def stop() -> None:
        # Once: a second erase would blank the line a streamed reply is on. The ticker
        # writes only between its awaits, so once cancelled it writes no more.
        if not stopped.is_set():
            stopped.set()
            ticker.cancel()
            out.write("\r\x1b[K")
            out.flush()

    try:
        yield stop
    finally:
        stop()
        await asyncio.gather(ticker, return_exceptions=True)


async def _tick(agents: AgentClient, agent: str, workflow_id: str, out: TextIO) -> None:
    loop = asyncio.get_running_loop()
    started = loop.time()
    await asyncio.sleep(PROGRESS_DELAY)
    doing = ""
    # Best-effort and in the background: a query waits for a worker, the line must not.
    query: asyncio.Task[AgentState] | None = None
    try:
        while True:
            if query is None or query.done():
                if query is not None and not query.cancelled() and query.exception() is None:
                    doing = _doing(query.result())
                query = asyncio.create_task(agents.state(workflow_id))
            elapsed = loop.time() - started
            out.write(f"\r\x1b[Kwaiting for {agent}… {int(elapsed)}s{doing}\r")
            out.flush()
            await asyncio.sleep(TICK_INTERVAL - (elapsed % TICK_INTERVAL))
    finally:
        if query is not None:
            query.cancel()
            await asyncio.gather(query, return_exceptions=True)


def _doing(state: AgentState) -> str:
    """``  (running daily_report)``: what a busy agent does, or nothing."""
    busy = _BUSY.get(state.status)
    if busy is None:
        return ""
    if state.pending_tool_calls:
        tools = ", ".join(call.name for call in state.pending_tool_calls)
        return f"  ({busy} {one_line(tools, 60)})"
    return f"  ({busy})"


async def _read_line(prompt: str) -> str | None:
    """One line of stdin without its newline (``None`` at end of input).

    Read on a daemon thread of its own, not the loop's executor: a thread blocked in
    ``input`` would keep ``asyncio.run`` from returning after Ctrl-C.
    """
    loop = asyncio.get_running_loop()
    line: asyncio.Future[str | None] = loop.create_future()

    def deliver(value: str | None) -> None:
        if not line.done():
            line.set_result(value)

    def read() -> None:
        try:
            value: str | None = input(prompt)
        except EOFError:
            value = None
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(deliver, value)

    threading.Thread(target=read, name="smyth-chat-stdin", daemon=True).start()
    return await line
