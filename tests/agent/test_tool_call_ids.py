"""Tool-call identity: ids the workflow gives, the approvals and keys that follow them.

A model's call ids are untrusted input (repeated, empty, crafted); a call's id in the
run comes from its step and position, and an approval or an idempotency key keyed by
it can never be shared by two calls. The invariants over generated turns are in
``tests/invariants/test_tool_calls.py``; here each finding has its own regression test.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from temporalio.client import Client, WorkflowHistory
from temporalio.worker import Replayer

from smyth_temporal import (
    AgentClient,
    AgentConfig,
    AgentInput,
    ConfigurationError,
    SmythPlugin,
)
from smyth_temporal.agent import WorkflowLogger
from smyth_temporal.agent.approvals import Approvals
from smyth_temporal.agent.config import DEFAULT_MAX_TOOL_CALLS_PER_TURN
from smyth_temporal.agent.conversation import assign_call_ids
from smyth_temporal.agent.tooling import ToolRunner, idempotency_key
from smyth_temporal.models import ModelRequest, ModelResponse
from smyth_temporal.testing import ScriptedModel, agent_worker, reply
from smyth_temporal.tools import Tool
from smyth_temporal.types import ApprovalDecision, Message, ToolCall, arguments_sha256
from tests.helpers.agents import Analyst, read_ledger
from tests.helpers.runs import bare_run
from tests.helpers.tool_call_agents import CappedAnalyst
from tests.helpers.trader import Trader
from tests.helpers.trading import sell

LOG = WorkflowLogger("tests.tool_call_ids")
NOW = datetime(2026, 11, 26, tzinfo=UTC)

MODEL_IDS = st.one_of(
    st.sampled_from(["", "a", "a~2", "a~3", "call_1_0", "call_1_1", "x/y", "/", "%2F"]),
    st.text(max_size=12),
)


def turn(*calls: tuple[str, str, dict[str, Any]]) -> ModelResponse:
    """A model turn whose calls carry exactly the ids given (``(id, tool, arguments)``)."""
    tool_calls = [ToolCall(id=i, name=n, arguments=json.dumps(a)) for i, n, a in calls]
    return ModelResponse(message=Message(role="assistant", tool_calls=tool_calls))


def tool_texts(request: ModelRequest) -> list[str]:
    return [m.content or "" for m in request.messages if m.role == "tool"]


# -- ids: pure ---------------------------------------------------------------------------


def test_call_ids_come_from_step_and_position_whatever_the_model_sent() -> None:
    sent = [ToolCall(id=i, name="sell", arguments="{}") for i in ("a", "a", "a~2", "", "x/y")]

    assigned = assign_call_ids(sent, 3)

    assert [c.id for c in assigned] == [f"call_3_{i}" for i in range(5)]
    # Towards the model every call keeps its id (an empty one gets the workflow's).
    assert [c.wire_id for c in assigned] == ["a", "a", "a~2", "call_3_3", "x/y"]
    assert assigned[3].original_id is None


@settings(max_examples=10 * settings.default.max_examples)  # pure: cheap
@given(ids=st.lists(MODEL_IDS, max_size=12), steps=st.integers(1, 10_000))
def test_assigned_call_ids_are_unique_across_turns_and_keep_the_models_ids(
    ids: list[str], steps: int
) -> None:
    calls = [ToolCall(id=i, name="t", arguments="{}") for i in ids]
    first, second = assign_call_ids(calls, steps), assign_call_ids(calls, steps + 1)
    every = [c.id for c in first + second]
    assert len(set(every)) == len(every)
    assert [c.wire_id for c in first] == [i or c.id for i, c in zip(ids, first, strict=True)]


# -- idempotency keys: pure --------------------------------------------------------------

KEY_PARTS = st.tuples(
    st.text(alphabet="ab/%2F", max_size=6),
    st.text(alphabet="rn/%", max_size=4),
    st.integers(0, 3),
    st.text(alphabet="c/%_1", max_size=4),
)


@settings(max_examples=10 * settings.default.max_examples)  # pure: cheap
@given(one=KEY_PARTS, other=KEY_PARTS)
def test_idempotency_keys_of_different_calls_never_collide(
    one: tuple[str, str, int, str], other: tuple[str, str, int, str]
) -> None:
    # Slashes and percent signs anywhere cannot make two calls' keys equal.
    assert (idempotency_key(*one) == idempotency_key(*other)) == (one == other)


def test_a_slash_in_a_workflow_id_cannot_take_another_workflows_key() -> None:
    assert idempotency_key("team/a", "r1", 1, "call_1_0") != idempotency_key(
        "team", "a/r1", 1, "call_1_0"
    )
    assert idempotency_key("w/1", "r", 2, "c") == "w%2F1/r/2/c"


# -- the gate, checked again at execution --------------------------------------------------


def runner_with_approvals() -> tuple[ToolRunner, Approvals, list[dict[str, Any]]]:
    """A runner whose ``sell`` calls are recorded, not run, with a fixed clock."""
    ran: list[dict[str, Any]] = []

    async def run(spec: Tool, call: ToolCall, arguments: dict[str, Any]) -> str:
        ran.append(arguments)
        return "sold"

    fake_sell = dataclasses.replace(sell, executor="fake")
    config = AgentConfig(model="m", tools=[fake_sell])
    context = bare_run(config, input=AgentInput(tenant="t"), log=LOG)
    context.conversation.step = 1
    approvals = Approvals(context, on_change=lambda: None, clock=lambda: NOW)
    runner = ToolRunner(
        context,
        approvals,
        executors={"fake": run},
        workflow_id=lambda: "wf",
        first_run_id=lambda: "run",
        patched=lambda _: True,
    )
    return runner, approvals, ran


def _sell(call_id: str, quantity: int) -> ToolCall:
    arguments = json.dumps({"symbol": "ACME", "quantity": quantity})
    return ToolCall(id=call_id, name="sell", arguments=arguments)


async def test_a_gated_call_never_runs_with_arguments_other_than_the_approved_ones() -> None:
    runner, approvals, ran = runner_with_approvals()
    shown = _sell("c", 1)
    request = runner.request_approval(shown)
    assert request is not None
    approvals.apply(
        request,
        ApprovalDecision(approved=True, by="ann", arguments_sha256=request.arguments_sha256),
    )

    # Another call under the same id (as colliding ids made it) finds the approval.
    swapped = await runner.call(_sell("c", 1000))

    assert ran == []
    assert swapped.content is not None
    assert swapped.content.startswith("Error: not run: its arguments are not the ones approved")
    assert request.executed_arguments_sha256 is None


async def test_one_approval_runs_one_call() -> None:
    runner, approvals, ran = runner_with_approvals()
    shown = _sell("c", 1)
    request = runner.request_approval(shown)
    assert request is not None
    approvals.apply(request, ApprovalDecision(approved=True, by="ann"))

    first = await runner.call(shown)
    again = await runner.call(shown)

    assert first.content == "sold" and ran == [{"symbol": "ACME", "quantity": 1}]
    assert (
        again.content == f"Error: not run: approval {request.id} was already used by another call"
    )


async def test_an_approvers_edit_runs_as_edited() -> None:
    runner, approvals, ran = runner_with_approvals()
    shown = _sell("c", 1000)
    request = runner.request_approval(shown)
    assert request is not None
    edit = {"symbol": "ACME", "quantity": 10}
    approvals.apply(request, ApprovalDecision(approved=True, by="ann", arguments=edit))

    result = await runner.call(shown)

    assert result.content == "sold" and ran == [edit]
    assert request.executed_arguments_sha256 == arguments_sha256(edit)


# -- runs started before -------------------------------------------------------------------

LEGACY_IDS = Path(__file__).parents[1] / "histories" / "legacy_ids" / "trader_model_ids_0_7.json"
"""A Trader run recorded with 0.7.0: one turn of two sells the model both called ``a``,
approved by update as ``apr-1-a`` and ``apr-1-a~2`` (the ids of that scheme). It cannot
be recorded again: today's code names those calls ``call_1_0`` and ``call_1_1``."""


async def test_runs_started_before_0_8_keep_the_models_call_ids_on_replay() -> None:
    # Without the patch, the replayed run names its calls call_1_*, the recorded
    # decisions find no request, and the sells the history scheduled never come.
    history = WorkflowHistory.from_json("history-trader_model_ids_0_7", LEGACY_IDS.read_text())
    replayer = Replayer(workflows=[Trader], plugins=[SmythPlugin()])
    result = await replayer.replay_workflow(history)
    assert result.replay_failure is None


# -- on a server -------------------------------------------------------------------------


async def test_colliding_call_ids_never_run_an_unapproved_call(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    # The reproduction from issue 23: ids a, a, a~2 once became a, a~2, a~2; the second
    # a~2 found the first one's approval (quantity 1) and sold 1000 nobody saw.
    model = ScriptedModel(
        [
            turn(
                ("a", "sell", {"symbol": "ACME", "quantity": 1}),
                ("a", "sell", {"symbol": "ACME", "quantity": 1}),
                ("a~2", "sell", {"symbol": "ACME", "quantity": 1000}),
            ),
            lambda request: reply(" | ".join(tool_texts(request))),
        ]
    )
    seen: dict[str, dict[str, Any]] = {}
    async with agent_worker(client, Trader, model=model, task_queue=task_queue):
        handle = await agents.start(Trader, AgentInput(prompt="Sell"))
        result_task = asyncio.ensure_future(agents.result(handle.id))
        while not result_task.done():
            # The approver approves exactly what they see with quantity 1, by hash.
            for request in (await agents.state(handle.id)).pending_approvals:
                if request.id in seen:
                    continue
                seen[request.id] = request.arguments
                if request.arguments["quantity"] == 1:
                    await agents.approve(
                        handle.id,
                        request.id,
                        by="alice",
                        arguments_sha256=request.arguments_sha256,
                    )
                else:
                    await agents.reject(handle.id, request.id, by="alice", comment="too many")
            await asyncio.wait([result_task], timeout=0.05)
        result = result_task.result()
        state = await agents.state(handle.id)

    # Three calls, three requests, each shown with its own arguments.
    assert sorted(r["quantity"] for r in seen.values()) == [1, 1, 1000]
    sells = [e for e in read_ledger(ledger) if e["tool"] == "sell"]
    assert sorted(e["quantity"] for e in sells) == [1, 1]
    assert len({e["key"] for e in sells}) == 2
    # The model hears about each of its calls, under the ids it gave them.
    tool_results = [m for m in state.messages if m.role == "tool"]
    assert [m.tool_call_id for m in tool_results] == ["a", "a", "a~2"]
    assert "rejected by alice: too many" in result.output


async def test_a_session_restarted_under_its_workflow_id_gets_new_idempotency_keys(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    # A provider with deterministic call ids, a workflow id with a slash: the second
    # run's keys must not repeat the first's (a tool would skip its work as done).
    model = ScriptedModel(
        [
            turn(("call_0", "place_order", {"order": {"symbol": "ACME", "quantity": 1}})),
            reply("done"),
        ]
    )
    workflow_id = f"team/{task_queue}"
    async with agent_worker(client, Analyst, model=model, task_queue=task_queue):
        for _ in range(2):
            handle = await agents.start(Analyst, AgentInput(prompt="Buy"), id=workflow_id)
            await agents.result(handle.id)

    keys = [e["key"] for e in read_ledger(ledger) if e["tool"] == "place_order"]
    assert len(keys) == 2 and keys[0] != keys[1]
    assert all(k.startswith(f"team%2F{task_queue}/") for k in keys)


# -- calls per turn ----------------------------------------------------------------------


def quotes(count: int) -> ModelResponse:
    return turn(*((f"q{i}", "get_quote", {"symbol": "ACME"}) for i in range(count)))


async def test_calls_past_the_cap_are_answered_unrun(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = ScriptedModel([quotes(5), lambda request: reply(" | ".join(tool_texts(request)))])
    async with agent_worker(client, CappedAnalyst, model=model, task_queue=task_queue):
        handle = await agents.start(CappedAnalyst, AgentInput(prompt="Quote"))
        result = await agents.result(handle.id)
        state = await agents.state(handle.id)

    answers = result.output.split(" | ")
    assert answers[:3] == ["101.5"] * 3
    assert (
        answers[3:]
        == [
            "Error: not run: at most 3 tool calls of one turn run. "
            "Make fewer calls per turn, and repeat the ones still needed."
        ]
        * 2
    )
    assert len([e for e in read_ledger(ledger) if e["tool"] == "get_quote"]) == 3
    # Every call the model made is answered, under its own id, in its order.
    replies = [m.tool_call_id for m in state.messages if m.role == "tool"]
    assert replies == [f"q{i}" for i in range(5)]
    assert result.usage.tool_calls == 3


async def test_a_turn_of_1000_calls_runs_the_default_cap_and_answers_every_call(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = ScriptedModel([quotes(1_000), lambda request: reply(str(len(tool_texts(request))))])
    async with agent_worker(client, Analyst, model=model, task_queue=task_queue):
        handle = await agents.start(Analyst, AgentInput(prompt="Quote"))
        result = await asyncio.wait_for(agents.result(handle.id), timeout=120)

    assert result.output == "1000"
    ran = [e for e in read_ledger(ledger) if e["tool"] == "get_quote"]
    assert len(ran) == DEFAULT_MAX_TOOL_CALLS_PER_TURN == 64


def test_the_cap_must_let_one_call_run() -> None:
    with pytest.raises(ConfigurationError, match="max_tool_calls_per_turn must be at least 1"):
        AgentConfig(model="m", max_tool_calls_per_turn=0)
