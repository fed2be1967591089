"""``smyth send`` and ``smyth chat`` against a real dev server and an in-process worker.

The worker serves ``tests.helpers.context_agents:Concierge`` with the scripted model of
``tests.agent.test_sessions``: each reply is ``#N <message> | heard: <every message so far>``,
so a reply shows what the session remembers.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from temporalio.client import Client, WorkflowExecutionStatus

from smyth_temporal import AgentClient
from smyth_temporal.cli import sessions as _session
from smyth_temporal.cli.main import main
from smyth_temporal.testing import ScriptedModel, agent_worker
from smyth_temporal.types.agent import AgentState
from smyth_temporal.types.messages import ToolCall
from smyth_temporal.types.sessions import SessionReply, session_workflow_id
from tests.agent.test_sessions import concierge
from tests.helpers.cli_support import Outcome, assert_one_error_line, run_smyth
from tests.helpers.context_agents import Concierge

pytestmark = pytest.mark.usefixtures("reset_structlog")

Smyth = Callable[..., Awaitable[Outcome]]


@pytest.fixture
def smyth(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    address: str,
    task_queue: str,
) -> Smyth:
    """Run ``smyth ARGS... --address A --task-queue Q`` in-process, ``stdin`` piped in."""

    async def call(*args: str, stdin: str | None = None) -> Outcome:
        if stdin is not None:
            monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        capsys.readouterr()
        # In a thread: main() runs its own event loop with asyncio.run.
        code = await asyncio.to_thread(
            main, [*args, "--address", address, "--task-queue", task_queue]
        )
        captured = capsys.readouterr()
        return Outcome(code, captured.out, captured.err)

    return call


@contextlib.asynccontextmanager
async def worker(client: Client, task_queue: str) -> AsyncIterator[None]:
    """An in-process Concierge worker, once the server sees it poll (or send warns)."""
    async with agent_worker(
        client, Concierge, model=ScriptedModel([concierge] * 50), task_queue=task_queue
    ):
        agents = AgentClient(client, task_queue=task_queue)
        for _ in range(200):
            if await agents.workers_polling():
                break
            await asyncio.sleep(0.02)
        yield


def new_session() -> str:
    return f"cli-{uuid.uuid4().hex[:8]}"


async def test_send_twice_keeps_the_context(smyth: Smyth, client: Client, task_queue: str) -> None:
    session = new_session()
    async with worker(client, task_queue):
        first = await smyth("send", "Concierge", "--session", session, "hello")
        second = await smyth(
            "send", "tests.helpers.context_agents:Concierge", "--session", session, "thanks"
        )
    assert (first.code, first.out) == (0, "#1 hello | heard: hello\n"), first.err
    workflow_id = session_workflow_id("Concierge", "default", session)
    assert first.error_lines == [
        f"message 1 of {workflow_id}; 1 request, 20 tokens (10 in, 10 out), 0 tool calls"
    ]
    assert (second.code, second.out) == (0, "#2 thanks | heard: hello, thanks\n"), second.err


async def test_send_json_with_tenant_and_sender(
    smyth: Smyth, client: Client, agents: AgentClient, task_queue: str
) -> None:
    session = new_session()
    async with worker(client, task_queue):
        sent = await smyth(
            "send", "Concierge", "--session", session, "--tenant", "acme", "--sender", "ann",
            "--json", "hi",
        )  # fmt: skip
        state = await agents.state(session_workflow_id("Concierge", "acme", session))
    reply = SessionReply.model_validate_json(sent.out)
    assert (reply.text, reply.number, reply.step) == ("#1 hi | heard: hi", 1, 1)
    assert reply.usage.requests == 1
    assert sent.error_lines == []
    assert (state.tenant, state.session_id, state.status) == ("acme", session, "idle")


async def test_refused_message_and_unserved_agent_are_one_error_line(
    smyth: Smyth, client: Client, agents: AgentClient, task_queue: str
) -> None:
    session = new_session()
    async with worker(client, task_queue):
        empty = await smyth("send", "Concierge", "--session", session, "   ")
        started = time.monotonic()
        unserved = await smyth("send", "Nobody", "--session", session, "hi")
        elapsed = time.monotonic() - started
        after = await smyth("send", "Concierge", "--session", session, "hello")
    workflow_id = session_workflow_id("Concierge", "default", session)
    assert_one_error_line(empty, f"session {workflow_id}: the message is empty")
    nobody = session_workflow_id("Nobody", "default", session)
    assert_one_error_line(
        unserved,
        f"no worker serves agent 'Nobody' on task queue {task_queue!r}; start one with "
        f"`smyth worker module:Nobody` (run {nobody} was terminated)",
    )
    assert elapsed < 5
    description = await client.get_workflow_handle(nobody).describe()
    assert description.status == WorkflowExecutionStatus.TERMINATED
    # The refused message left no trace: the next one is the session's first.
    assert after.out == "#1 hello | heard: hello\n", after.err


async def test_send_without_a_worker_warns_and_the_message_waits(
    smyth: Smyth, client: Client, task_queue: str
) -> None:
    session = new_session()
    posted = await smyth("send", "Concierge", "--session", session, "--no-wait", "first")
    workflow_id = session_workflow_id("Concierge", "default", session)
    assert (posted.code, posted.out) == (0, f"sent to {workflow_id} (not waiting for a reply)\n")
    assert posted.error_lines == [
        f"warning: no worker polls task queue {task_queue!r}; the message waits until one "
        "does (start one with `smyth worker module:Concierge`)"
    ]
    never = await smyth("chat", "Concierge", "--session", new_session(), stdin="/close\n")
    assert never.code == 1
    assert "is not open (never started, or ended); there is nothing to close" in never.err
    async with worker(client, task_queue):
        second = await smyth("send", "Concierge", "--session", session, "second")
    assert second.out == "#2 second | heard: first, second\n", second.err


async def test_chat_with_piped_input_then_close(
    smyth: Smyth, client: Client, agents: AgentClient, task_queue: str
) -> None:
    session = new_session()
    async with worker(client, task_queue):
        chat = await smyth(
            "chat", "Concierge", "--session", session, stdin="hello\n\n  how are you\n/close\n"
        )
        workflow_id = session_workflow_id("Concierge", "default", session)
        result = await agents.result(workflow_id)
    assert chat.code == 0, chat.err
    assert chat.out.splitlines() == [
        "Concierge> #1 hello | heard: hello",
        "Concierge> #2 how are you | heard: hello, how are you",
    ]
    assert chat.error_lines == [f"closed session {workflow_id}"]
    assert (result.status, result.output) == (
        "completed",
        "#2 how are you | heard: hello, how are you",
    )


async def test_chat_goes_on_after_a_refusal_and_leaves_the_session_open(
    smyth: Smyth, client: Client, agents: AgentClient, task_queue: str
) -> None:
    session = new_session()
    workflow_id = session_workflow_id("Concierge", "default", session)
    async with worker(client, task_queue):
        first = await smyth(
            "chat",
            "Concierge",
            "--session",
            session,
            stdin=f"hi\n{'x' * 100_001}\nstill here\n/quit\n",
        )
        # End of input leaves it open too; a later chat carries on with the same context.
        second = await smyth("chat", "Concierge", "--session", session, stdin="again")
        state = await agents.state(workflow_id)
    assert first.code == 0, first.err
    assert first.out.splitlines() == [
        "Concierge> #1 hi | heard: hi",
        "Concierge> #2 still here | heard: hi, still here",
    ]
    assert first.error_lines == [
        f"smyth: error: session {workflow_id}: the message has 100001 characters; the limit "
        "is 100000",
        f"session {workflow_id} stays open; go on with `smyth chat Concierge --session {session}`",
    ]
    assert second.out == "Concierge> #3 again | heard: hi, still here, again\n", second.err
    assert state.status == "idle"


async def test_a_fresh_process_talks_to_the_session(
    client: Client, agents: AgentClient, address: str, task_queue: str
) -> None:
    session = new_session()
    async with worker(client, task_queue):
        await agents.send(Concierge, session, "from python")
        outcome = await asyncio.to_thread(
            run_smyth,
            *("send", "Concierge", "--session", session, "from the shell"),
            *("--address", address, "--task-queue", task_queue),
        )
    assert outcome.code == 0, outcome.err
    assert outcome.out == "#2 from the shell | heard: from python, from the shell\n"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class _BusyAgent:
    async def state(self, workflow_id: str) -> AgentState:
        call = ToolCall(id="c1", name="daily_report", arguments="{}")
        return AgentState.model_construct(status="acting", pending_tool_calls=[call])


async def test_waiting_line_on_a_terminal_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_session, "PROGRESS_DELAY", 0.05)
    monkeypatch.setattr(_session, "TICK_INTERVAL", 0.1)
    terminal, pipe = _Terminal(), io.StringIO()
    for stream in (terminal, pipe):
        async with _session._waiting(_BusyAgent(), "Concierge", "wf", stream=stream):  # type: ignore[arg-type]
            await asyncio.sleep(0.3)
    assert pipe.getvalue() == ""
    shown = terminal.getvalue()
    assert "\r\x1b[Kwaiting for Concierge… 0s  (running daily_report)\r" in shown
    assert shown.endswith("\r\x1b[K")  # erased at the end
