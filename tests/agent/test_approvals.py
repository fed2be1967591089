"""Human approvals on a real dev server: decisions by update and signal, the audit trail."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from smyth_temporal import AgentClient, AgentState, InvalidDecisionError
from smyth_temporal.models import ModelRequest, ModelResponse
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from smyth_temporal.types import arguments_sha256
from tests.helpers.agents import read_ledger
from tests.helpers.trader import Trader


def executed(ledger: Path) -> list[dict[str, object]]:
    return read_ledger(ledger)


def echo_tool_results(request: ModelRequest) -> ModelResponse:
    return reply(" | ".join(m.content or "" for m in request.messages if m.role == "tool"))


async def wait_for_pending(agents: AgentClient, workflow_id: str, count: int) -> AgentState:
    for _ in range(200):
        state = await agents.state(workflow_id)
        if len(state.pending_approvals) == count:
            return state
        await asyncio.sleep(0.05)
    raise AssertionError(f"never saw {count} pending approvals: {state.pending_approvals}")


SELL = tool_call("sell", symbol="ACME", quantity=10)


async def test_approve_runs_the_tool_and_keeps_the_audit_trail(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = ScriptedModel([SELL, echo_tool_results])
    async with agent_worker(client, Trader, model=model, task_queue=task_queue):
        handle = await agents.start(Trader, "Sell ACME")
        state = await wait_for_pending(agents, handle.id, 1)
        request = state.pending_approvals[0]
        assert state.status == "awaiting_approval"
        assert request.tool == "sell"
        assert request.arguments == {"symbol": "ACME", "quantity": 10}
        assert request.arguments_sha256 == arguments_sha256(request.arguments)
        assert executed(ledger) == []  # nothing runs before the decision

        outcome = await agents.approve(
            handle.id,
            by="alice",
            comment="fine",
            arguments_sha256=request.arguments_sha256,
        )
        assert outcome is not None
        assert outcome.request.status == "approved"
        result = await agents.result(handle.id)
        final = await agents.state(handle.id)

    assert result.output == "sold 10 ACME"
    assert [e["tool"] for e in executed(ledger)] == ["sell"]
    audit = final.approvals[0]
    assert audit.decision is not None
    assert (audit.decision.by, audit.decision.comment) == ("alice", "fine")
    assert audit.decided_at is not None and audit.decided_at >= audit.requested_at
    assert audit.executed_arguments_sha256 == audit.arguments_sha256
    assert final.pending_approvals == []

    # The decision is in history too: an accepted update carrying who decided.
    history = await client.get_workflow_handle(handle.id).fetch_history()
    accepted = [
        e
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
    ]
    assert len(accepted) == 1
    assert b"alice" in accepted[0].SerializeToString()


async def test_reject_tells_the_model_who_and_why(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = ScriptedModel([SELL, echo_tool_results])
    async with agent_worker(client, Trader, model=model, task_queue=task_queue):
        handle = await agents.start(Trader, "Sell ACME")
        await wait_for_pending(agents, handle.id, 1)
        await agents.reject(handle.id, by="bob", comment="market is closed")
        result = await agents.result(handle.id)

    assert executed(ledger) == []
    assert "was not run" in result.output
    assert "rejected by bob: market is closed" in result.output


async def test_edit_and_approve_runs_with_the_edited_arguments(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = ScriptedModel(
        [tool_call("buy", order={"symbol": "ACME", "quantity": 500}), echo_tool_results]
    )
    async with agent_worker(client, Trader, model=model, task_queue=task_queue):
        handle = await agents.start(Trader, "Buy lots of ACME")
        state = await wait_for_pending(agents, handle.id, 1)
        edited = {"order": {"symbol": "ACME", "quantity": 50}}
        await agents.approve(handle.id, state.pending_approvals[0].id, by="carol", arguments=edited)
        result = await agents.result(handle.id)
        final = await agents.state(handle.id)

    assert result.output == "bought 50 ACME"
    assert [(e["tool"], e["quantity"]) for e in executed(ledger)] == [("buy", 50)]
    audit = final.approvals[0]
    assert audit.arguments == {"order": {"symbol": "ACME", "quantity": 500}}
    assert audit.executed_arguments_sha256 == arguments_sha256(edited)
    assert audit.executed_arguments_sha256 != audit.arguments_sha256


async def test_predicate_lets_small_calls_through(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = ScriptedModel(
        [tool_call("buy", order={"symbol": "ACME", "quantity": 5}), echo_tool_results]
    )
    async with agent_worker(client, Trader, model=model, task_queue=task_queue):
        handle = await agents.start(Trader, "Buy a little ACME")
        result = await agents.result(handle.id)
        state = await agents.state(handle.id)
    assert result.output == "bought 5 ACME"
    assert state.approvals == []


async def test_two_gated_calls_decided_in_opposite_order(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = ScriptedModel(
        [
            [
                tool_call("sell", symbol="ACME", quantity=1),
                tool_call("sell", symbol="GLOBEX", quantity=2),
            ],
            echo_tool_results,
        ]
    )
    async with agent_worker(client, Trader, model=model, task_queue=task_queue):
        handle = await agents.start(Trader, "Sell both")
        state = await wait_for_pending(agents, handle.id, 2)
        first, second = state.pending_approvals
        assert first.arguments["symbol"] == "ACME"
        await agents.reject(handle.id, second.id, by="dave", comment="keep GLOBEX")
        state = await wait_for_pending(agents, handle.id, 1)
        assert state.pending_approvals[0].id == first.id
        await agents.approve(handle.id, first.id, by="dave")
        result = await agents.result(handle.id)

    assert [e["symbol"] for e in executed(ledger)] == ["ACME"]
    acme, globex = result.output.split(" | ")
    assert acme == "sold 1 ACME"
    assert "rejected by dave: keep GLOBEX" in globex


async def test_invalid_decisions_are_refused_without_a_trace(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = ScriptedModel(
        [
            [
                tool_call("sell", symbol="ACME", quantity=1),
                tool_call("buy", order={"symbol": "ACME", "quantity": 900}),
            ],
            echo_tool_results,
        ]
    )
    async with agent_worker(client, Trader, model=model, task_queue=task_queue):
        handle = await agents.start(Trader, "Trade")
        state = await wait_for_pending(agents, handle.id, 2)
        sell, buy = state.pending_approvals
        workflow = client.get_workflow_handle(handle.id)
        events_before = len((await workflow.fetch_history()).events)

        async def refused(match: str, **decision: object) -> None:
            with pytest.raises(InvalidDecisionError, match=match):
                await agents.approve(handle.id, by="eve", **decision)  # type: ignore[arg-type]

        await refused("2 requests are pending .* name one")
        await refused("unknown approval request 'nope'", request_id="nope")
        await refused(
            "arguments_sha256 does not match", request_id=sell.id, arguments_sha256="0" * 64
        )
        await refused(
            "edited arguments rejected: .*quantity",
            request_id=buy.id,
            arguments={"order": {"symbol": "ACME", "quantity": "many"}},
        )
        with pytest.raises(InvalidDecisionError, match="only make sense with an approval"):
            await agents.decide(
                handle.id,
                _decision(request_id=sell.id, approved=False, arguments={"symbol": "X"}),
            )
        # Validator rejections never reach history.
        assert len((await workflow.fetch_history()).events) == events_before

        await agents.approve(handle.id, sell.id, by="eve")
        await refused("already approved \\(by eve\\)", request_id=sell.id)
        await agents.reject(handle.id, buy.id, by="eve")
        result = await agents.result(handle.id)

    assert [e["tool"] for e in executed(ledger)] == ["sell"]
    assert result.output.startswith("sold 1 ACME | Error:")


def _decision(**fields: object):  # type: ignore[no-untyped-def]
    from smyth_temporal import ApprovalDecision

    return ApprovalDecision(by="eve", **fields)  # type: ignore[arg-type]


async def test_bad_signal_is_logged_and_ignored(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = ScriptedModel([SELL, echo_tool_results])
    async with agent_worker(client, Trader, model=model, task_queue=task_queue):
        handle = await agents.start(Trader, "Sell ACME")
        state = await wait_for_pending(agents, handle.id, 1)
        await agents.approve(handle.id, "no-such-request", by="mallory", wait=False)
        await agents.approve(handle.id, state.pending_approvals[0].id, by="frank", wait=False)
        result = await agents.result(handle.id)
        final = await agents.state(handle.id)

    assert result.output == "sold 10 ACME"
    assert final.approvals[0].decision is not None
    assert final.approvals[0].decision.by == "frank"


async def test_pending_approvals_are_found_by_search_attribute(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    model = ScriptedModel([SELL, echo_tool_results])
    async with agent_worker(client, Trader, model=model, task_queue=task_queue):
        handle = await agents.start(Trader, "Sell ACME")
        await wait_for_pending(agents, handle.id, 1)
        # A client that knows no workflow id finds it (visibility is eventually consistent).
        for _ in range(100):
            found = [p for p in await agents.pending_approvals() if p.workflow_id == handle.id]
            if found:
                break
            await asyncio.sleep(0.1)
        assert len(found) == 1
        assert found[0].agent == "Trader"
        assert found[0].request.tool == "sell"
        await agents.approve(handle.id, by="grace")
        await agents.result(handle.id)
    for _ in range(100):
        if not [p for p in await agents.pending_approvals() if p.workflow_id == handle.id]:
            break
        await asyncio.sleep(0.1)
    else:
        raise AssertionError("the decided request is still listed")


async def test_registering_search_attributes_is_idempotent(client: Client) -> None:
    from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
    from temporalio.common import SearchAttributeKey

    from smyth_temporal.testing import register_search_attributes

    extra = SearchAttributeKey.for_keyword("SmythTestExtra")
    await register_search_attributes(client, [extra])
    await register_search_attributes(client, [extra])
    listed = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=client.namespace)
    )
    assert {"SmythStatus", "SmythPendingApprovals", "SmythTestExtra"} <= set(
        listed.custom_attributes
    )
