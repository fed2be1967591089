"""I1 and I2 over adversarial model turns: approvals and idempotency keys hold.

- I1: a gated call runs only with arguments whose hash an approver approved or edited
  (and one approval runs one call).
- I2: every logical tool call has one idempotency key, distinct from every other call's
  (across turns, continue-as-new and a session started again under its workflow id),
  stable across retries and replays.

Model turns are generated with colliding, empty, huge and slash-containing call ids and
arguments of any shape; the approver decides by update and signal, twice, for requests
that do not exist, with wrong hashes, with edits, and late. The pure parts (id
assignment, key encoding, argument depth) are searched with many examples in
``tests/agent/test_tool_call_ids.py`` and ``tests/tools/test_tool_arguments.py``; here real agents
run on the dev server with a scripted model, a few examples per profile.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from temporalio.client import Client

from smyth_temporal import AgentClient, AgentInput, ClientError, InvalidDecisionError
from smyth_temporal.models import ModelResponse
from smyth_temporal.testing import ScriptedModel, agent_worker, reply
from smyth_temporal.types import ApprovalRequest, Message, ToolCall, arguments_sha256
from tests.helpers.agents import read_ledger
from tests.helpers.tool_call_agents import HoppingAnalyst
from tests.helpers.trader import Trader

CALL_IDS = st.one_of(
    st.sampled_from(["a", "a~2"]),  # weighted: repeats and suffixes collide most
    st.sampled_from(["a~3", "", "call_1_0", "call_1_1", "x/y", "/", "%2F", "z" * 3_000]),
)
"""Model ids that collide with each other, with suffixes and with the workflow's own
(in 0.7, ``a, a~2, a`` became ``a, a~2, a~2``: Hypothesis finds that in the ci profile)."""

JUNK = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=8,
).map(json.dumps) | st.sampled_from(["", "{", "[" * 3_000, '{"symbol": "ACME"}'])
"""Arguments of any shape (almost none fit a tool)."""

SYMBOLS = st.sampled_from(["ACME", "GLOBEX"])


def sell(symbol: str, quantity: int) -> tuple[str, dict[str, Any]]:
    return "sell", {"symbol": symbol, "quantity": quantity}


def buy(symbol: str, quantity: int) -> tuple[str, dict[str, Any]]:
    return "buy", {"order": {"symbol": symbol, "quantity": quantity}}


TRADES = st.one_of(
    st.builds(sell, SYMBOLS, st.sampled_from([1, 1_000])),
    st.builds(buy, SYMBOLS, st.sampled_from([5, 500])),  # buys over 100 are gated
    st.tuples(st.sampled_from(["sell", "buy"]), JUNK),
)

ACTIONS = [
    "approve",
    "approve_unpinned",
    "edit",
    "reject",
    "twice",
    "wrong_hash",
    "unknown",
    "signal",
]

_RUNS = itertools.count()


def model_turn(calls: list[tuple[str, str, Any]]) -> ModelResponse:
    """A turn of calls ``(id, tool, arguments)``; non-string arguments become JSON."""
    tool_calls = [
        ToolCall(id=i, name=n, arguments=a if isinstance(a, str) else json.dumps(a))
        for i, n, a in calls
    ]
    return ModelResponse(message=Message(role="assistant", tool_calls=tool_calls))


def edited(request: ApprovalRequest) -> dict[str, Any]:
    """The approver's edit: the same trade, for 7 shares."""
    if request.tool == "sell":
        return {**request.arguments, "quantity": 7}
    return {"order": {**request.arguments["order"], "quantity": 7}}


def executed_arguments(entry: dict[str, Any]) -> dict[str, Any]:
    """What a ledger line says the tool ran with, in the tool's argument shape."""
    return (sell if entry["tool"] == "sell" else buy)(entry["symbol"], entry["quantity"])[1]


class Approver:
    """Decides each request as drawn, and notes every hash it approved or edited to."""

    def __init__(self, agents: AgentClient, workflow_id: str, decisions: list[str]) -> None:
        self.agents, self.workflow_id = agents, workflow_id
        self.decisions = itertools.cycle(decisions)
        self.approved: Counter[str] = Counter()
        self.decided: list[str] = []

    async def decide(self, request: ApprovalRequest) -> None:
        action = next(self.decisions)
        approve = self.agents.approve
        pinned = request.arguments_sha256
        if action in ("wrong_hash", "unknown"):
            # Refused without a trace; then the approver decides for real.
            with pytest.raises(InvalidDecisionError):
                if action == "wrong_hash":
                    await approve(self.workflow_id, request.id, by="eve", arguments_sha256="0" * 64)
                else:
                    await approve(self.workflow_id, "apr-999-call_999_0", by="eve")
            action = "approve"
        if action == "reject":
            await self.agents.reject(self.workflow_id, request.id, by="ann", comment="no")
        elif action == "edit":
            change = edited(request)
            await approve(self.workflow_id, request.id, by="ann", arguments=change)
            self.approved[arguments_sha256(change)] += 1
        else:
            unpinned = action == "approve_unpinned"
            wait = action != "signal"
            await approve(
                self.workflow_id,
                request.id,
                by="ann",
                arguments_sha256=None if unpinned else pinned,
                wait=wait,
            )
            self.approved[pinned] += 1
            if action == "twice":
                with pytest.raises(InvalidDecisionError, match="already approved"):
                    await approve(self.workflow_id, request.id, by="ann", arguments_sha256=pinned)
        self.decided.append(request.id)

    async def until_done(self, result: asyncio.Future[Any]) -> None:
        seen: set[str] = set()
        while not result.done():
            for request in (await self.agents.state(self.workflow_id)).pending_approvals:
                if request.id not in seen:
                    seen.add(request.id)
                    await self.decide(request)
            await asyncio.wait([result], timeout=0.05)


@settings(max_examples=max(settings.default.max_examples // 5, 3))
@given(
    calls=st.lists(st.tuples(CALL_IDS, TRADES), min_size=1, max_size=5),
    decisions=st.lists(st.sampled_from(ACTIONS), min_size=1, max_size=5),
)
# Issue 23's reproduction, in every profile: in 0.7 the third call took the second's
# approval (ids a, a~2, a~2) and sold 1000 nobody saw.
@example(
    calls=[("a", sell("ACME", 1)), ("a~2", sell("ACME", 1)), ("a", sell("ACME", 1_000))],
    decisions=["approve", "approve", "reject"],
)
async def test_i1_a_gated_call_runs_only_with_arguments_an_approver_approved(
    client: Client,
    agents: AgentClient,
    task_queue: str,
    ledger: Path,
    calls: list[tuple[str, tuple[str, Any]]],
    decisions: list[str],
) -> None:
    before = len(read_ledger(ledger))
    model = ScriptedModel([model_turn([(i, n, a) for i, (n, a) in calls]), reply("done")])
    async with agent_worker(client, Trader, model=model, task_queue=task_queue):
        handle = await agents.start(Trader, AgentInput(prompt="Trade"))
        approver = Approver(agents, handle.id, decisions)
        result = asyncio.ensure_future(agents.result(handle.id))
        await approver.until_done(result)
        outcome = result.result()
        if approver.decided:  # a decision after the run ended is refused, not lost
            with pytest.raises(ClientError):
                await agents.approve(handle.id, approver.decided[0], by="late")

    assert outcome.status == "completed"
    # What ran, once per logical call (a retried attempt has the same key).
    firsts = [e for e in read_ledger(ledger)[before:] if e["attempt"] == 1]
    ran = Counter(arguments_sha256(executed_arguments(e)) for e in firsts)
    # What needed nobody: buys of at most 100 shares, as the model asked.
    free = Counter(
        arguments_sha256(arguments)
        for _, (name, arguments) in calls
        if name == "buy" and isinstance(arguments, dict)
        if arguments["order"]["quantity"] <= 100
    )
    assert ran <= approver.approved + free, (ran, approver.approved, free)


@settings(max_examples=max(settings.default.max_examples // 5, 3))
@given(
    turns=st.lists(
        st.lists(
            st.tuples(
                CALL_IDS,
                st.sampled_from(["get_quote", "place_order", "flaky_note", "junk"]),
            ),
            min_size=1,
            max_size=4,
        ),
        min_size=1,
        max_size=3,
    )
)
async def test_i2_every_call_has_one_key_of_its_own_across_retries_replays_and_runs(
    client: Client,
    agents: AgentClient,
    task_queue: str,
    ledger: Path,
    turns: list[list[tuple[str, str]]],
) -> None:
    arguments = {
        "get_quote": {"symbol": "ACME"},
        "place_order": {"order": {"symbol": "ACME", "quantity": 1}},
        "flaky_note": {"text": "note"},
        "junk": "[" * 3_000,
    }
    script = [
        model_turn([(i, "get_quote" if t == "junk" else t, arguments[t]) for i, t in calls])
        for calls in turns
    ]
    logical = sum(1 for calls in turns for _, t in calls if t != "junk")
    workflow_id = f"i2/{task_queue}/{next(_RUNS)}"  # a slash, escaped in every key
    before = len(read_ledger(ledger))
    runs = []
    # No cache: every workflow task replays the run from its history (and each step
    # continues as new), so a key computed differently on replay would show.
    async with agent_worker(
        client,
        HoppingAnalyst,
        model=ScriptedModel([*script, reply("done")]),
        task_queue=task_queue,
        max_cached_workflows=0,
    ):
        for _ in range(2):  # a second session under the same workflow id
            handle = await agents.start(HoppingAnalyst, AgentInput(prompt="Go"), id=workflow_id)
            assert (await agents.result(handle.id)).status == "completed"
            runs.append(handle.first_execution_run_id)

    entries = read_ledger(ledger)[before:]
    attempts: dict[str, list[int]] = {}
    for entry in entries:
        attempts.setdefault(entry["key"], []).append(entry["attempt"])
    # One key per logical call: as many keys as calls, in two sessions.
    assert len(attempts) == 2 * logical
    # Stable across retries: each key's attempts count up from 1, without a gap (a
    # flaky note's second attempt has its first one's key).
    assert all(sorted(a) == list(range(1, len(a) + 1)) for a in attempts.values())
    flaky = 2 * sum(1 for calls in turns for _, t in calls if t == "flaky_note")
    assert sum(1 for a in attempts.values() if a == [1, 2]) == flaky
    # Each session's keys carry its first run's id, the same across continue-as-new.
    escaped = workflow_id.replace("/", "%2F")
    by_run = Counter(key.split("/")[1] for key in attempts)
    assert all(key.startswith(f"{escaped}/") for key in attempts)
    assert set(by_run) <= set(runs)
    assert [by_run[run] for run in runs] == [logical, logical]
