"""The agent runtime's components on their own: no server, no workflow.

Each component owns a piece of an agent's state and the rules over it; these tests
drive them directly, with a fixed clock where time matters. What needs Temporal (the
waits, the commands) is covered by the tests that run agents on a real server.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from smyth_temporal import AgentConfig, tool
from smyth_temporal.agent import WorkflowLogger
from smyth_temporal.agent.approvals import Approvals, refusal
from smyth_temporal.agent.compaction import Compactor
from smyth_temporal.agent.conversation import Conversation, unique_call_ids
from smyth_temporal.agent.delegation import Delegation
from smyth_temporal.agent.lifecycle import CARRIED_APPROVALS, Lifecycle
from smyth_temporal.agent.run import Run
from smyth_temporal.agent.sessions import MAX_SESSION_MESSAGE_CHARS, Inbox
from smyth_temporal.agent.tooling import ToolRunner
from smyth_temporal.exceptions import (
    ApprovalExpiredError,
    InvalidDecisionError,
    InvalidMessageError,
    ToolCallError,
)
from smyth_temporal.tools import Tool
from smyth_temporal.types import (
    AgentInput,
    ApprovalDecision,
    Message,
    SessionMessage,
    SessionReply,
    ToolCall,
    Usage,
    arguments_sha256,
)
from tests.helpers.runs import bare_run

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
LOG = WorkflowLogger("tests.components")


@tool(effect="side_effect", requires_approval=lambda amount, to: amount > 100)
async def pay(amount: int, to: str) -> str:
    """Pay someone.

    Args:
        amount: In euros.
        to: The payee.
    """
    return f"paid {amount} to {to}"


@tool
async def lookup(key: str) -> str:
    """Look something up."""
    return key


CONFIG = AgentConfig(model="m", tools=[pay, lookup], approval_timeout=timedelta(hours=1))


def call(name: str, call_id: str = "c1", **arguments: Any) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=json.dumps(arguments))


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> datetime:
        return self.now


def approvals(
    clock: Clock | None = None, run: Run | None = None
) -> tuple[Approvals, Conversation, list[int]]:
    run = run or bare_run(CONFIG, log=LOG)
    published: list[int] = []
    component = Approvals(
        run,
        on_change=lambda: published.append(len(component.pending)),
        clock=clock or Clock(),
    )
    return component, run.conversation, published


# -- approvals --------------------------------------------------------------------------


def test_a_gated_call_gets_one_request_and_publishes_it() -> None:
    component, _, published = approvals()
    big = call("pay", amount=500, to="ACME")

    request = component.request(big, pay, step=3, reason="rent")
    again = component.request(big, pay, step=3, reason="rent")

    assert request is not None and again is request  # idempotent: same call, same request
    assert (request.id, request.tool, request.step, request.reason) == (
        "apr-3-c1",
        "pay",
        3,
        "rent",
    )
    assert request.arguments_sha256 == arguments_sha256({"amount": 500, "to": "ACME"})
    assert request.deadline == NOW + timedelta(hours=1)
    assert published == [1]


def test_calls_the_predicate_lets_through_or_that_are_invalid_get_no_request() -> None:
    component, _, published = approvals()
    assert component.request(call("pay", amount=5, to="ACME"), pay, step=1, reason=None) is None
    assert component.request(call("pay", amount="lots"), pay, step=1, reason=None) is None
    assert component.request(call("lookup", key="k"), lookup, step=1, reason=None) is None
    assert component.request(call("gone"), None, step=1, reason=None) is None
    assert component.requests == {} and published == []


def test_a_broken_predicate_asks_a_person() -> None:
    spec = dataclasses.replace(pay, requires_approval=lambda **_: 1 / 0)
    component, _, _ = approvals()
    assert component.request(call("pay", amount=1, to="x"), spec, step=1, reason=None)


def test_decisions_are_checked_before_they_are_applied() -> None:
    component, _, _ = approvals()
    request = component.request(call("pay", amount=500, to="ACME"), pay, step=1, reason=None)
    assert request is not None

    with pytest.raises(InvalidDecisionError, match="unknown approval request 'apr-9'"):
        component.check(ApprovalDecision(request_id="apr-9", approved=True, by="ann"))
    with pytest.raises(InvalidDecisionError, match="does not match"):
        component.check(ApprovalDecision(approved=True, by="ann", arguments_sha256="0" * 64))
    with pytest.raises(InvalidDecisionError, match="edited arguments rejected"):
        component.check(ApprovalDecision(approved=True, by="ann", arguments={"amount": "x"}))
    with pytest.raises(InvalidDecisionError, match="only make sense with an approval"):
        component.check(ApprovalDecision(approved=False, by="ann", arguments={"amount": 1}))
    assert request.status == "pending"  # refused decisions change nothing

    edit = ApprovalDecision(approved=True, by="ann", arguments={"amount": 300, "to": "ACME"})
    component.apply(component.check(edit), edit)
    assert (request.status, request.decided_at, request.decision) == (
        "approved",
        NOW,
        edit.model_copy(update={"request_id": request.id}),
    )
    with pytest.raises(InvalidDecisionError, match="already approved"):
        component.check(ApprovalDecision(request_id=request.id, approved=False, by="bob"))


def test_a_decision_without_an_id_needs_exactly_one_pending_request() -> None:
    component, _, _ = approvals()
    anyone = ApprovalDecision(approved=True, by="ann")
    with pytest.raises(InvalidDecisionError, match="no approval request is pending"):
        component.check(anyone)
    component.request(call("pay", "c1", amount=500, to="A"), pay, step=1, reason=None)
    component.request(call("pay", "c2", amount=600, to="B"), pay, step=1, reason=None)
    with pytest.raises(InvalidDecisionError, match="2 requests are pending"):
        component.check(anyone)


def test_an_edit_must_fit_the_tool_as_configured_now() -> None:
    component, _, _ = approvals()
    request = component.request(call("pay", amount=500, to="A"), pay, step=1, reason=None)
    assert request is not None
    request.tool = "retired"  # a tool dropped from the config while the request waited
    with pytest.raises(InvalidDecisionError, match="no longer has tool 'retired'"):
        component.check(ApprovalDecision(approved=True, by="a", arguments={"amount": 1}))


@pytest.mark.parametrize(
    ("policy", "status", "approved"), [("reject", "expired", False), ("approve", "expired", True)]
)
def test_expiry_applies_the_policy(policy: str, status: str, approved: bool) -> None:
    clock = Clock()
    component, _, _ = approvals(clock)
    request = component.request(call("pay", amount=500, to="A"), pay, step=1, reason=None)
    assert request is not None
    request.on_timeout = policy  # type: ignore[assignment]
    clock.now = request.deadline
    component.expire(request)
    assert request.status == status
    assert request.decision is not None and request.decision.approved is approved
    assert request.decision.by == "system:timeout"
    assert "not run" in refusal(request) or approved


def test_expiry_with_policy_fail_fails_the_run() -> None:
    component, conversation, _ = approvals()
    request = component.request(call("pay", amount=500, to="A"), pay, step=1, reason=None)
    assert request is not None
    request.on_timeout = "fail"
    with pytest.raises(ApprovalExpiredError, match="expired at"):
        component.expire(request)
    assert (request.status, conversation.status) == ("expired", "failed")


def test_refusal_tells_the_model_who_rejected_and_why() -> None:
    component, _, _ = approvals()
    request = component.request(call("pay", amount=500, to="A"), pay, step=1, reason=None)
    assert request is not None
    no = ApprovalDecision(approved=False, by="ann", comment="over budget")
    component.apply(request, no)
    assert refusal(request) == (
        "the call to 'pay' was not run: it was rejected by ann: over budget. "
        "Adapt your plan instead of retrying it unchanged."
    )


# -- the session inbox ------------------------------------------------------------------


def test_inbox_numbers_messages_and_hands_replies_to_waiting_senders() -> None:
    inbox = Inbox(bare_run(CONFIG, log=LOG))
    assert not inbox
    first = inbox.enqueue(SessionMessage(text="hi"), reply=True)
    second = inbox.enqueue(SessionMessage(text="fyi"), reply=False)
    assert (first, second, inbox.received) == (1, 2, 2)

    queued = inbox.next()
    assert (queued.number, queued.message.text, queued.reply) == (1, "hi", True)
    inbox.answer(queued, SessionReply(text="hello", number=1, step=1))
    event = inbox.next()
    inbox.answer(event, SessionReply(text="noted", number=2, step=2))
    assert not inbox
    assert list(inbox._replies) == [1]  # nobody waits for an event's reply


@pytest.mark.parametrize(
    ("message", "input", "status", "problem"),
    [
        (SessionMessage(text="hi"), None, "idle", "not a session"),
        (SessionMessage(text="hi"), AgentInput(), "idle", "not a session"),
        (
            SessionMessage(text="hi", tenant="evil"),
            AgentInput(mode="session"),
            "idle",
            "another tenant",
        ),
        (SessionMessage(text="  "), AgentInput(mode="session"), "idle", "empty"),
        (
            SessionMessage(text="x" * (MAX_SESSION_MESSAGE_CHARS + 1)),
            AgentInput(mode="session"),
            "idle",
            "the limit is",
        ),
        (SessionMessage(text="hi"), AgentInput(mode="session"), "completed", "closed"),
    ],
)
def test_inbox_refuses_what_a_session_cannot_take(
    message: SessionMessage, input: AgentInput | None, status: Any, problem: str
) -> None:
    inbox = Inbox(bare_run(CONFIG, log=LOG))
    with pytest.raises(InvalidMessageError, match=problem):
        inbox.check(message, input, status)
    assert inbox.received == 0


def test_a_closing_session_refuses_new_messages() -> None:
    inbox = Inbox(bare_run(CONFIG, log=LOG))
    inbox.check(SessionMessage(text="hi"), AgentInput(mode="session"), "idle")
    inbox.closing = True
    with pytest.raises(InvalidMessageError, match="closed"):
        inbox.check(SessionMessage(text="hi"), AgentInput(mode="session"), "idle")


# -- the lifecycle ----------------------------------------------------------------------


def lifecycle() -> tuple[Lifecycle, Conversation, Approvals, Inbox, Delegation, dict[str, Any]]:
    run = bare_run(CONFIG, log=LOG)
    component, conversation, _ = approvals(run=run)
    inbox, delegation = Inbox(run), Delegation(run)
    run.hooks.data = data = {"watchlist": ["ACME"]}
    life = Lifecycle(run, component, Compactor(run), inbox, delegation)
    return life, conversation, component, inbox, delegation, data


def test_a_checkpoint_carries_everything_a_new_run_needs() -> None:
    life, conversation, component, inbox, delegation, _ = lifecycle()
    conversation.messages = [Message.system("s"), Message.user("task")]
    conversation.step, conversation.usage = 7, Usage(requests=7, input_tokens=70)
    pending = component.request(call("pay", "p", amount=500, to="A"), pay, step=7, reason=None)
    for index in range(CARRIED_APPROVALS + 5):  # more decided requests than are carried
        done = component.request(
            call("pay", f"d{index}", amount=500, to="A"), pay, step=1, reason=None
        )
        assert done is not None
        component.apply(done, ApprovalDecision(approved=True, by="ann"))
    inbox.enqueue(SessionMessage(text="hi"), reply=False)
    delegation.count = 2

    checkpoint = life.checkpoint()
    new, new_conversation, new_approvals, new_inbox, new_delegation, _ = lifecycle()
    data = new.restore(checkpoint)

    assert new_conversation.messages == conversation.messages
    assert (new_conversation.step, new.run_start_step, new.generation) == (7, 7, 2)
    assert new_conversation.usage == conversation.usage
    assert pending is not None and pending.id in new_approvals.requests
    decided = [r for r in new_approvals.requests.values() if r.status != "pending"]
    assert len(decided) == CARRIED_APPROVALS
    assert decided[-1].id == f"apr-1-d{CARRIED_APPROVALS + 4}"  # the most recent are kept
    assert (new_inbox.received, new_delegation.count) == (1, 2)
    assert data == {"watchlist": ["ACME"]} and new.restored


# -- the conversation and the tool path -------------------------------------------------


def test_repeated_call_ids_of_a_turn_become_unique() -> None:
    calls = [
        call("lookup", "x", key="a"),
        call("lookup", "x", key="b"),
        call("lookup", "y", key="c"),
    ]
    unique = unique_call_ids(calls)
    assert [c.id for c in unique] == ["x", "x~2", "y"]
    assert [c.wire_id for c in unique] == ["x", "x", "y"]
    assert unique[1].original_id == "x" and unique[0].original_id is None
    result = Message.tool_result(unique[1], "b")
    assert result.tool_call_id == "x"  # the model's id, for the model


async def test_every_tool_goes_through_one_path() -> None:
    fake_lookup = dataclasses.replace(lookup, executor="fake")
    run = bare_run(CONFIG, tools=[fake_lookup, pay], input=AgentInput(tenant="acme"), log=LOG)
    conversation = run.conversation
    conversation.step = 4
    component, _, _ = approvals(run=run)
    ran: list[tuple[str, dict[str, Any]]] = []

    async def fake(spec: Tool, call: ToolCall, arguments: dict[str, Any]) -> str:
        ran.append((spec.name, arguments))
        if arguments.get("key") == "boom":
            raise ToolCallError("it broke")
        return f"found {arguments['key']}"

    runner = ToolRunner(
        run,
        component,
        executors={"fake": fake},
        workflow_id=lambda: "wf-1",
        first_run_id=lambda: "run-1",
        patched=lambda _: True,
    )

    ok = await runner.call(call("lookup", key="k"))
    broken = await runner.call(call("lookup", key="boom"))
    invalid = await runner.call(call("lookup", key=3))
    unknown = await runner.call(call("nope"))

    assert (ok.content, ok.step, ok.name) == ("found k", 4, "lookup")
    assert broken.content == "Error: it broke"
    assert invalid.content is not None and invalid.content.startswith("Error: ")
    assert unknown.content == "Error: unknown tool 'nope'. Available tools: lookup, pay."
    assert ran == [("lookup", {"key": "k"}), ("lookup", {"key": "boom"})]

    # A gated call that was rejected is never executed; the model hears why.
    big = call("pay", "p1", amount=500, to="A")
    request = runner.request_approval(big)
    assert request is not None
    component.apply(request, ApprovalDecision(approved=False, by="ann"))
    rejected = await runner.call(big)
    assert rejected.content is not None and "rejected by ann" in rejected.content
    assert len(ran) == 2


def test_gated_calls_with_the_same_id_get_their_own_requests() -> None:
    component, _, _ = approvals()
    same = [call("pay", "dup", amount=500, to="A"), call("pay", "dup", amount=700, to="B")]
    requests = [component.request(c, pay, step=2, reason=None) for c in unique_call_ids(same)]
    assert [r.id for r in requests if r] == ["apr-2-dup", "apr-2-dup~2"]
    assert [r.arguments["to"] for r in requests if r] == ["A", "B"]
