"""Agents whose side-effect tools have reconcile hooks (workflow code and their tools).

The ledger (``tests.helpers.trading.record``) stands for the outside world: ``send``
and ``transfer`` write their effect there, and the hooks look it up there, as a real
hook asks the system the tool acted on. Imported by in-process workers and by
``tests.helpers.reconcile_worker`` (a process a test can SIGKILL). They take a
``RewindNotice`` by ``AgentWorkflow``'s own rewind signal.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError

from smyth_temporal import AgentConfig, AgentInput, AgentResult, AgentWorkflow, tool
from smyth_temporal.tools import Reconciled, tool_context
from smyth_temporal.types.approvals import arguments_sha256
from smyth_temporal.types.rewind import RewoundCall
from tests.helpers.trading import LEDGER_ENV, read_ledger, record

__all__ = [
    "ANSWERS",
    "HoppingPostman",
    "Payer",
    "Postman",
    "abandoned_send",
    "post",
    "send",
    "transfer",
]

ANSWERS: Mapping[str, Reconciled] = {
    "ann": Reconciled.done("sent to ann (before the rewind)"),
    "bob": Reconciled.not_done(),
    "cy": Reconciled.unknown("the mail server keeps no log"),
}
"""What ``sent_before`` answers, by recipient."""


def sent_before(key: str, arguments: Mapping[str, Any]) -> Reconciled:
    """A plain ``def`` hook (run in a thread): the answer set for the recipient."""
    record("reconcile.send", abandoned=key, to=arguments["to"])
    return ANSWERS[arguments["to"]]


@tool(effect="side_effect", reconcile=sent_before)
async def send(to: str, text: str) -> str:
    """Send a message.

    Args:
        to: The recipient.
        text: The message.
    """
    record("send", to=to)
    return f"sent to {to}"


def broken_lookup(key: str, arguments: Mapping[str, Any]) -> Reconciled:
    """A hook whose system is down: it raises on every attempt."""
    record("reconcile.post", abandoned=key)
    raise RuntimeError("the mail archive is down")


@tool(
    effect="side_effect",
    reconcile=broken_lookup,
    retry=RetryPolicy(initial_interval=timedelta(milliseconds=10), maximum_attempts=2),
)
async def post(to: str) -> str:
    """Post a letter.

    Args:
        to: The recipient.
    """
    record("post", to=to)
    return f"posted to {to}"


def abandoned_send(to: str, index: int) -> RewoundCall:
    """The call ``send(to, "hi")`` a rewind abandoned after it completed, at step 2."""
    return RewoundCall(
        step=2,
        call_id=f"call_2_{index}",
        tool="send",
        arguments_sha256=arguments_sha256({"to": to, "text": "hi"}),
        idempotency_key=f"abandoned/{to}",
        outcome="completed",
        result=f"sent to {to}",
    )


def _acted(key: str) -> list[dict[str, Any]]:
    ledger = Path(os.environ[LEDGER_ENV])
    return [e for e in read_ledger(ledger) if e["tool"] == "transfer.acted" and e["key"] == key]


async def transferred_before(key: str, arguments: Mapping[str, Any]) -> Reconciled:
    """Looks the transfer up at the "bank" (the ledger); a large one cannot be told."""
    record("reconcile.transfer", abandoned=key, attempt_seen=tool_context().attempt)
    if arguments["amount"] >= 1000:
        return Reconciled.unknown("the bank answers about large transfers only by letter")
    done = _acted(key)
    return Reconciled.done(f"transferred {arguments['amount']}") if done else Reconciled.not_done()


@tool(
    effect="side_effect",
    reconcile=transferred_before,
    timeout=timedelta(seconds=60),
    retry=RetryPolicy(initial_interval=timedelta(milliseconds=50), maximum_attempts=3),
)
async def transfer(amount: int, hang: bool = False) -> str:
    """Transfer money.

    Args:
        amount: How much.
        hang: Hang after acting (until the worker is killed).
    """
    key = tool_context().idempotency_key
    first = not _acted(key)
    record("transfer.acted", amount=amount)
    if hang and first:
        await asyncio.sleep(3600)  # the test SIGKILLs the worker here
    if not hang and first:
        # The effect happened, then the connection dropped: Temporal retries.
        raise ApplicationError("connection reset after the transfer", non_retryable=False)
    return f"transferred {amount}"


@workflow.defn
class Postman(AgentWorkflow):
    config = AgentConfig(model="test-model", tools=[send, post], max_steps=4)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class HoppingPostman(AgentWorkflow):
    """``Postman`` continuing as new after every step."""

    config = dataclasses.replace(Postman.config, continue_as_new_after_steps=1)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class Payer(AgentWorkflow):
    config = AgentConfig(model="test-model", tools=[transfer], max_steps=4)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)
