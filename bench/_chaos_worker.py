"""A worker process for the chaos bench: the chaos agents, a planning model, the ledger.

Run from the repository root (``bench.chaos`` starts and SIGKILLs these)::

    .venv/bin/python -m bench._chaos_worker --address 127.0.0.1:7233 \
        --task-queue Q --ledger /tmp/ledger.jsonl

It prints ``READY`` once the server lists it among the queue's pollers. The model
decides each turn from the conversation alone (how many tool results follow the
last user message), so a turn answers the same on any process, after any crash.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import TypeVar

from temporalio.client import Client
from temporalio.worker import Worker

from bench._chaos_agents import ChaosDesk, ChaosLong, ChaosStreamer, ChaosTrader
from smyth_temporal import configure_logging
from smyth_temporal.models import ModelRequest, ModelResponse, TextSink
from smyth_temporal.plugin import SmythPlugin
from smyth_temporal.testing import ScriptedModel, reply, tool_call
from smyth_temporal.types.messages import Message
from tests.helpers.agents import LEDGER_ENV
from tests.helpers.mcp_agents import Scribe
from tests.helpers.mcp_servers import ledger_server
from tests.helpers.worker_process import READY, _wait_until_polling

T = TypeVar("T")

WORKFLOWS = (ChaosTrader, ChaosLong, ChaosDesk, ChaosStreamer, Scribe)

STREAMED_WORDS = 60
"""Words in the streamer's answer (sent a word at a time, ``PIECE_DELAY`` apart)."""
PIECE_DELAY = 0.03


def _since_user(messages: Sequence[Message]) -> tuple[str, list[str]]:
    """The last user message's text, and the tool results after it."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "user":
            after = messages[index + 1 :]
            return messages[index].content or "", [
                m.content or "" for m in after if m.role == "tool"
            ]
    return "", [m.content or "" for m in messages if m.role == "tool"]


def _plan(
    calls: Sequence[ModelResponse], answer: Callable[[str, list[str]], str]
) -> Callable[[ModelRequest], ModelResponse]:
    def turn(request: ModelRequest) -> ModelResponse:
        text, results = _since_user(request.messages)
        if len(results) < len(calls):
            return calls[len(results)]
        return reply(answer(text, results))

    return turn


def streamed_answer(text: str, results: list[str]) -> str:
    """The streamer's long answer (the bench checks readers get it whole)."""
    words = [f"w{n:02d}" for n in range(STREAMED_WORDS)]
    return f"{' | '.join(results)} then " + " ".join(words) + " end."


PLANS = {
    "ChaosTrader": _plan(
        [tool_call("get_quote", symbol="ACME"), tool_call("sell", symbol="ACME", quantity=5)],
        lambda _, results: " | ".join(results),
    ),
    "ChaosLong": _plan(
        [
            tool_call("get_quote", symbol="ACME"),
            tool_call("write_note", text="halfway"),
            tool_call("get_quote", symbol="GLOBEX"),
        ],
        lambda _, results: " | ".join(results),
    ),
    "ChaosDesk": _plan(
        [tool_call("get_quote", symbol="INITECH")],
        lambda text, results: f"re {text}: {' | '.join(results)}",
    ),
    "ChaosStreamer": _plan([tool_call("get_quote", symbol="ACME")], streamed_answer),
    "Scribe": _plan(
        [tool_call("write", text="first"), tool_call("write", text="second")],
        lambda _, results: " | ".join(results),
    ),
}


class PlanningModel:
    """Each agent's plan as a ``ScriptedModel`` (streaming included), keeping no requests."""

    def __init__(self) -> None:
        self._models = {
            name: ScriptedModel([plan] * 400, piece_delay=PIECE_DELAY)
            for name, plan in PLANS.items()
        }

    async def complete(self, request: ModelRequest) -> ModelResponse:
        model = self._models[request.agent]
        try:
            return await model.complete(request)
        finally:
            model.requests.clear()

    async def stream(self, request: ModelRequest, on_text: TextSink) -> ModelResponse:
        model = self._models[request.agent]
        try:
            return await model.stream(request, on_text)
        finally:
            model.requests.clear()


def _die_with_parent() -> None:
    """Have the kernel SIGKILL this worker when the bench dies, however it dies (Linux)."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() == 1:  # the bench died before prctl
            os._exit(1)


async def serve(args: argparse.Namespace) -> None:
    """Run the worker until SIGTERM/SIGINT (or SIGKILL, which is the point)."""
    _die_with_parent()
    os.environ[LEDGER_ENV] = args.ledger
    configure_logging("WARNING")
    plugin = SmythPlugin(
        model=PlanningModel(), mcp_servers={"ledger": ledger_server(Path(args.ledger))}
    )
    client = await _retrying(lambda: Client.connect(args.address, plugins=[plugin]))
    identity = f"chaos-worker-{os.getpid()}"
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    worker = Worker(
        client,
        task_queue=args.task_queue,
        workflows=list(WORKFLOWS),
        identity=identity,
        graceful_shutdown_timeout=timedelta(seconds=1),
    )
    running = asyncio.create_task(worker.run())
    # The server may be killed while this worker starts: keep asking until it answers.
    await _retrying(lambda: _wait_until_polling(client, args.task_queue, identity))
    print(READY, flush=True)
    stopping = asyncio.create_task(stop.wait())
    await asyncio.wait({running, stopping}, return_when=asyncio.FIRST_COMPLETED)
    if running.done():
        # The worker gave up (the server gone too long?): say so and exit, and the
        # bench starts another one.
        print(f"worker ended: {running.exception()!r}", file=sys.stderr, flush=True)
        os._exit(3)
    await worker.shutdown()


async def _retrying(call: Callable[[], Awaitable[T]], seconds: float = 90.0) -> T:
    """``call()`` until it succeeds (or ``seconds`` pass: then its error)."""
    deadline = asyncio.get_running_loop().time() + seconds
    while True:
        try:
            return await call()
        except Exception:
            if asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(0.3)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench._chaos_worker")
    parser.add_argument("--address", required=True)
    parser.add_argument("--task-queue", required=True)
    parser.add_argument("--ledger", required=True)
    asyncio.run(serve(parser.parse_args()))
    sys.stdout.flush()
    os._exit(0)  # temporalio's core threads may abort a normal teardown (sdk-python#300)


if __name__ == "__main__":
    from bench._chaos_worker import main as _main  # workflows under their real module

    _main()
