"""``smyth watch``, ``interrupt``, streamed ``send`` and ``result --json`` on a real dev server.

Workers run in-process (``agent_worker``) with scripted or gated models; ``smyth`` runs
in-process through ``main`` (in a thread: it has its own event loop), or as a real
process where a test reads its output as it comes or sends it SIGINT.
"""

from __future__ import annotations

import asyncio
import io
import itertools
import json
import os
import shlex
import signal
import sys
from collections.abc import Awaitable, Callable

import pytest
from rich.console import Console
from temporalio.client import Client

from smyth_temporal import AgentClient, AgentInput
from smyth_temporal.cli._live import LiveText
from smyth_temporal.cli.main import main
from smyth_temporal.clients import ReplyChunk
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from smyth_temporal.types.sessions import SessionReply, session_workflow_id
from tests.agent.test_interrupts import flag, until
from tests.cli.test_cli_sessions import new_session, worker
from tests.helpers.agents import Analyst, Rater
from tests.helpers.cli_support import PROCESS_TIMEOUT, ROOT, Outcome, assert_one_error_line
from tests.helpers.live_agents import GatedModel, HalfWritten, Operator

pytestmark = pytest.mark.usefixtures("reset_structlog")


ANSWER = "ACME trades at 101.5, up two percent on the week; nothing to do."

Smyth = Callable[..., Awaitable[Outcome]]


@pytest.fixture
def smyth(capsys: pytest.CaptureFixture[str], address: str) -> Smyth:
    """Run ``smyth ARGS... --address A`` in-process."""

    async def call(*args: str) -> Outcome:
        capsys.readouterr()
        code = await asyncio.to_thread(main, [*args, "--address", address])
        captured = capsys.readouterr()
        return Outcome(code, captured.out, captured.err)

    return call


def analyst(piece_delay: float = 0.0) -> ScriptedModel:
    steps = [tool_call("get_quote", symbol="ACME"), reply(ANSWER)]
    return ScriptedModel(steps, piece_delay=piece_delay)


# -- watch -------------------------------------------------------------------------------


async def test_watch_shows_a_run_then_exits(
    smyth: Smyth, client: Client, agents: AgentClient, task_queue: str
) -> None:
    async with agent_worker(client, Analyst, model=analyst(), task_queue=task_queue):
        handle = await agents.start(Analyst, AgentInput(prompt="How is ACME?"))
        await agents.result(handle.id)
        watched = await smyth("watch", handle.id)  # a finished run: its events, then exit

    assert watched.code == 0, watched.err
    lines = watched.out.splitlines()
    assert lines[0] == f"Analyst started a task ({handle.id})"
    assert "» How is ACME?" in lines
    calls = [line for line in lines if line.startswith(("→", "←"))]
    assert calls == ["→ get_quote(symbol=ACME)", "← get_quote: 101.5"]
    assert ANSWER in lines
    assert lines[-1] == (
        "completed after 2 steps; 2 requests, 40 tokens (20 in, 20 out), 1 tool call"
    )
    assert watched.err == ""


async def test_watch_json_and_after(
    smyth: Smyth, client: Client, agents: AgentClient, task_queue: str
) -> None:
    # The answer streams in several pieces, slowly enough that the command (which starts
    # the turn's live channel) is there before it ends.
    model = analyst(piece_delay=0.1)
    async with agent_worker(client, Analyst, model=model, task_queue=task_queue):
        handle = await agents.start(Analyst, AgentInput(prompt="How is ACME?"))
        # Watched while it runs: the command ends when the run does.
        everything = await smyth("watch", handle.id, "--json")
        events = [json.loads(line) for line in everything.out.splitlines()]
        result = next(e for e in events if e["kind"] == "tool_result")
        rest = await smyth("watch", handle.id, "--after", str(result["offset"]), "--json")
        human = await smyth("watch", handle.id, "--after", str(result["offset"]))

    assert everything.code == 0, everything.err
    offsets = [e["offset"] for e in events if e["kind"] != "text_delta"]
    assert offsets == sorted(set(offsets))
    # The streamed text sits after the run's event it followed, with that offset.
    assert all(
        e["offset"] == b["offset"]
        for b, e in itertools.pairwise(events)
        if e["kind"] == "text_delta"
    )
    assert events[0]["kind"] == "run_started" and events[-1]["kind"] == "run_finished"
    assert events[-1]["output"] == ANSWER
    deltas = [e["text"] for e in events if e["kind"] == "text_delta"]
    assert len(deltas) > 1 and "".join(deltas) == ANSWER
    assert [json.loads(line) for line in rest.out.splitlines()] == [
        e for e in events if e["offset"] > result["offset"]
    ]
    assert human.code == 0, human.err
    assert "→ get_quote" not in human.out and "← get_quote" not in human.out
    assert ANSWER in human.out.splitlines()


async def test_watch_an_unknown_run_is_one_error_line(smyth: Smyth) -> None:
    watched = await smyth("watch", "no-such-run")
    assert_one_error_line(watched, "no agent run with workflow id 'no-such-run'")


async def test_watch_prints_the_commands_that_decide_an_approval(
    client: Client, agents: AgentClient, address: str, task_queue: str
) -> None:
    model = ScriptedModel([tool_call("sell", symbol="ACME", quantity=5), reply("sold")])
    async with agent_worker(client, Operator, model=model, task_queue=task_queue):
        handle = await agents.start(Operator, AgentInput(prompt="Sell ACME"))
        watcher = await spawn_smyth("watch", handle.id, "--address", address)
        try:
            shown = await read_until(watcher, lambda line: line.startswith("    smyth approve "))
            # The printed command is the one to run, as printed.
            approve = shlex.split(shown[-1])[1:]
            decided = await asyncio.to_thread(main, [*approve, "--by", "bob"])
            rest, _ = await asyncio.wait_for(watcher.communicate(), PROCESS_TIMEOUT)
        finally:
            await stop(watcher)
        [request] = (await agents.state(handle.id)).approvals

    assert decided == 0
    assert watcher.returncode == 0
    assert shown[-2].startswith(
        f"? sell(symbol=ACME, quantity=5) waits for approval (request {request.id}, deadline in "
    )
    assert shown[-1] == f"    smyth approve {handle.id} --request {request.id} --address {address}"
    after = rest.decode().splitlines()
    assert after[0] == f"    smyth reject {handle.id} --request {request.id} --address {address}"
    assert f"approved {request.id} (sell) on {handle.id} by bob" in after
    assert "← sell: sold 5 ACME" in after
    assert after[-1].startswith("completed after 2 steps")


async def test_ctrl_c_stops_watching_and_says_where_to_resume(
    smyth: Smyth, client: Client, agents: AgentClient, address: str, task_queue: str
) -> None:
    model = GatedModel([tool_call("get_quote", symbol="ACME"), reply(ANSWER)], held={2})
    async with agent_worker(client, Operator, model=model, task_queue=task_queue):
        handle = await agents.start(Operator, AgentInput(prompt="How is ACME?"))
        watcher = await spawn_smyth("watch", handle.id, "--address", address)
        try:
            await read_until(watcher, lambda line: line.startswith("← get_quote"))
            await until(flag(lambda: 2 in model.waiting), "the second turn thinking")
            watcher.send_signal(signal.SIGINT)
            _, err = await asyncio.wait_for(watcher.communicate(), PROCESS_TIMEOUT)
        finally:
            await stop(watcher)
        model.release.set()
        hint = err.decode().strip().splitlines()[-1]
        prefix = f"resume with: smyth watch {handle.id} --after "
        assert hint.startswith(prefix) and hint.endswith(f" --address {address}"), err
        offset = int(hint.removeprefix(prefix).split()[0])
        resumed = await smyth("watch", handle.id, "--after", str(offset), "--json")

    assert watcher.returncode == 130
    assert "Traceback" not in err.decode()
    # The in-process worker's log lines share the captured stdout.
    events = [json.loads(line) for line in resumed.out.splitlines() if line.startswith("{")]
    assert events and all(e["offset"] > offset for e in events)
    assert "tool_result" not in [e["kind"] for e in events]  # shown before Ctrl-C
    assert events[-1]["kind"] == "run_finished"


# -- interrupt ---------------------------------------------------------------------------


async def test_interrupt_a_running_turn(
    smyth: Smyth, client: Client, agents: AgentClient, task_queue: str
) -> None:
    model = GatedModel([tool_call("get_quote", symbol="ACME"), reply("never")], held={2})
    async with agent_worker(client, Operator, model=model, task_queue=task_queue):
        handle = await agents.start(Operator, AgentInput(prompt="How is ACME?"))
        await until(flag(lambda: 2 in model.waiting), "the second turn thinking")
        stopped = await smyth("interrupt", handle.id, "--reason", "wrong ticker", "--by", "ann")
        result = await agents.result(handle.id)
        again = await smyth("interrupt", handle.id)
        state = await agents.state(handle.id)

    assert (stopped.code, stopped.out) == (0, f"interrupted {handle.id} while thinking at step 1\n")
    assert result.status == "interrupted"
    assert state.messages[-1].content == (
        "[The previous turn was interrupted by ann: wrong ticker]"
    )
    assert_one_error_line(again, f"agent {handle.id}: nothing to interrupt: the run has finished")


async def test_interrupt_an_idle_session_or_an_unknown_run_is_one_error_line(
    smyth: Smyth, client: Client, agents: AgentClient, task_queue: str
) -> None:
    session = new_session()
    workflow_id = session_workflow_id("Operator", "default", session)
    async with agent_worker(
        client, Operator, model=ScriptedModel([reply("hi")]), task_queue=task_queue
    ):
        await agents.send(Operator, session, "Hello")
        idle = await smyth("interrupt", workflow_id)
    unknown = await smyth("interrupt", "no-such-run")
    assert_one_error_line(idle, f"agent {workflow_id}: nothing to interrupt: the agent is idle")
    assert_one_error_line(unknown, "no agent run with workflow id 'no-such-run'")


# -- send --------------------------------------------------------------------------------


async def test_send_streams_the_reply_and_no_stream_prints_it_whole(
    smyth: Smyth, client: Client, task_queue: str
) -> None:
    session = new_session()
    sent = ("send", "Concierge", "--session", session, "--task-queue", task_queue)
    async with worker(client, task_queue):
        streamed = await smyth(*sent, "hello there")
        whole = await smyth(*sent, "--no-stream", "and again")
        as_json = await smyth(*sent, "--json", "once more")
    workflow_id = session_workflow_id("Concierge", "default", session)
    assert (streamed.code, streamed.out) == (0, "#1 hello there | heard: hello there\n")
    assert streamed.error_lines == [
        f"message 1 of {workflow_id}; 1 request, 20 tokens (10 in, 10 out), 0 tool calls"
    ]
    assert (whole.code, whole.out) == (0, "#2 and again | heard: hello there, and again\n")
    assert SessionReply.model_validate_json(as_json.out).number == 3  # JSON only, no text


async def test_while_busy_reject_is_one_error_line(
    smyth: Smyth, client: Client, agents: AgentClient, task_queue: str
) -> None:
    session = new_session()
    model = GatedModel([reply("first answer"), reply("second answer")], held={1})
    sent = ("send", "Operator", "--session", session, "--task-queue", task_queue)
    async with agent_worker(client, Operator, model=model, task_queue=task_queue):
        first = asyncio.create_task(agents.send(Operator, session, "first"))
        await until(flag(lambda: 1 in model.waiting), "the first message thinking")
        refused = await smyth(*sent, "--while-busy", "reject", "second")
        model.release.set()
        await first
        accepted = await smyth(*sent, "--while-busy", "reject", "second")
        bad = await smyth(*sent, "--while-busy", "later", "third")
    workflow_id = session_workflow_id("Operator", "default", session)
    assert_one_error_line(
        refused, f"session {workflow_id}: the session is busy answering message 1"
    )
    assert (accepted.code, accepted.out) == (0, "second answer\n")
    assert bad.code == 2
    assert "argument --while-busy: invalid choice: 'later'" in bad.err


async def test_send_prints_the_reply_while_it_is_written(
    client: Client, address: str, task_queue: str
) -> None:
    model = HalfWritten([reply(ANSWER)])
    async with agent_worker(client, Operator, model=model, task_queue=task_queue):
        sender = await spawn_smyth(
            *("send", "Operator", "--session", new_session(), "How is ACME?"),
            *("--address", address, "--task-queue", task_queue),
        )
        try:
            assert sender.stdout is not None
            first = await asyncio.wait_for(sender.stdout.readexactly(5), PROCESS_TIMEOUT)
            running = sender.returncode is None
            model.release.set()
            rest, _ = await asyncio.wait_for(sender.communicate(), PROCESS_TIMEOUT)
        finally:
            await stop(sender)
    assert (first, running) == (b"ACME ", True)  # shown while the rest was not yet written
    assert (first + rest).decode() == f"{ANSWER}\n"
    assert sender.returncode == 0


# -- result ------------------------------------------------------------------------------


async def test_result_json_has_the_typed_answer(
    smyth: Smyth, client: Client, agents: AgentClient, task_queue: str
) -> None:
    verdict = {"symbol": "ACME", "action": "buy", "confidence": 0.8}
    model = ScriptedModel([reply(json.dumps(verdict))])
    async with agent_worker(client, Rater, model=model, task_queue=task_queue):
        handle = await agents.start(Rater, "Rate ACME")
        await agents.result(handle.id)
    result = await smyth("result", handle.id, "--json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["data"] == verdict


# -- how streamed text is shown ----------------------------------------------------------


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_streamed_text_on_a_pipe_is_written_as_it_comes() -> None:
    out = io.StringIO()
    with LiveText(Console(file=out), prefix="A> ") as view:
        view.add(ReplyChunk("Hel", "m1"))
        view.add(ReplyChunk("lo", "m1"))
        written = out.getvalue()
        view.add(ReplyChunk("Hi", "m1", reset=True))  # a retried call: start again
        view.add(ReplyChunk(" the", "m1"))
        view.finish("Hi there")  # the reply's text is the truth
        view.add(ReplyChunk("Next\tone", "m2"))
    assert written == "A> Hello"
    assert out.getvalue() == "A> Hello\nA> Hi there\nA> Next\tone\n"


def test_streamed_text_on_a_terminal_is_redrawn_then_printed() -> None:
    out = _Terminal()
    console = Console(file=out, force_terminal=True, width=40, height=10, color_system=None)
    with LiveText(console) as view:
        view.show("m1", "Hello wor")
        view.show("m1", "Hi")  # a retry: the region is redrawn from scratch
        view.end("m1", "Hi there")
    # Printed for good once, at the end; the draft was only ever in the live region.
    assert out.getvalue().count("Hi there") == 1
    assert "Hi there\n" in out.getvalue()


# -- processes ---------------------------------------------------------------------------


async def spawn_smyth(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "smyth_temporal.cli", *args,
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip


async def read_until(process: asyncio.subprocess.Process, done: Callable[[str], bool]) -> list[str]:
    """Lines of the process's stdout up to the first that is ``done``."""
    assert process.stdout is not None
    lines: list[str] = []
    while not lines or not done(lines[-1]):
        raw = await asyncio.wait_for(process.stdout.readline(), PROCESS_TIMEOUT)
        if not raw:
            raise AssertionError(f"stdout ended before the line looked for: {lines}")
        lines.append(raw.decode().rstrip("\n"))
    return lines


async def stop(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.kill()
    await process.wait()
