"""Reconcile hooks: a side effect that may already have happened is asked about, not repeated.

Two ways a side-effect call's outcome gets lost: a rewind abandons the history of calls
that completed after its step (the reset cannot undo them), and a worker dies after the
tool acted, before it could say so. The tool's ``reconcile`` hook answers ``done``
(the result is reused, nothing runs again), ``not_done`` (the tool runs once) or
``unknown`` (a person decides).

The rewound runs here get their ``RewindNotice`` by signal at start, as a run reset by
``AgentClient.rewind`` gets it right after the reset.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowHandle
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from smyth_temporal import AgentClient, AgentInput, tool
from smyth_temporal.activities import tool_activities
from smyth_temporal.agent.rewind import carry_unreconciled
from smyth_temporal.agent.tooling import idempotency_key
from smyth_temporal.exceptions import ToolDefinitionError
from smyth_temporal.security import EnvSecrets, Secrets
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from smyth_temporal.tools import Reconciled, tool_context
from smyth_temporal.types.approvals import ApprovalRequest, arguments_sha256
from smyth_temporal.types.rewind import REWIND_SIGNAL, RewindNotice, RewoundCall
from smyth_temporal.types.tools import ToolInvocation
from tests.agent.test_crash_recovery import RESULT_TIMEOUT, wait_for_entry
from tests.helpers.reconcile_agents import HoppingPostman, Payer, Postman, abandoned_send
from tests.helpers.reconcile_worker import spawn_payer
from tests.helpers.trading import read_ledger

RECIPIENTS = ("ann", "bob", "cy")


def tool_results(request: object) -> object:
    messages = getattr(request, "messages", [])
    return reply(" | ".join(m.content or "" for m in messages if m.role == "tool"))


async def pending(agents: AgentClient, workflow_id: str) -> ApprovalRequest:
    """The run's first pending request; fails if none comes (the run ended or went on)."""

    async def first() -> ApprovalRequest:
        while not (state := await agents.state(workflow_id)).pending_approvals:
            await asyncio.sleep(0.05)
        return state.pending_approvals[0]

    return await asyncio.wait_for(first(), RESULT_TIMEOUT / 4)


async def start_rewound(
    client: Client, task_queue: str, agent: str, prompt: str, notice: RewindNotice, prefix: str
) -> WorkflowHandle[Any, Any]:
    """Start ``agent`` as a rewound run: its notice comes with the start, before any turn."""
    return await client.start_workflow(
        agent,
        AgentInput(prompt=prompt),
        id=f"{prefix}-{uuid.uuid4().hex[:8]}",
        task_queue=task_queue,
        start_signal=REWIND_SIGNAL,
        start_signal_args=[notice],
    )


def test_only_side_effect_tools_take_a_reconcile_hook() -> None:
    async def act(x: int) -> int:
        return x

    def hook(key: str, arguments: object) -> Reconciled:
        return Reconciled.not_done()

    for effect in ("read_only", "idempotent"):
        with pytest.raises(ToolDefinitionError, match="side_effect tools only"):
            tool(effect=effect, reconcile=hook)(act)  # type: ignore[arg-type]
    with pytest.raises(ToolDefinitionError, match="takes a function"):
        tool(effect="side_effect", reconcile="hook")(act)  # type: ignore[arg-type]
    assert tool(effect="side_effect", reconcile=hook)(act).reconcile is hook


async def test_a_reconcile_hooks_error_never_carries_a_secret() -> None:
    # The error goes to history and, once the retries run out, to an approver.
    def leaky(key: str, arguments: object) -> Reconciled:
        raise RuntimeError(f"archive refused key {tool_context().secrets['MAIL_KEY']}")

    async def mail(to: str) -> str:
        return to

    spec = tool(name="mail", effect="side_effect", secrets=["MAIL_KEY"], reconcile=leaky)(mail)
    secrets = Secrets([EnvSecrets({"MAIL_KEY": "s3cr3t-value"})])
    reconcile = tool_activities([spec], secrets)[1]
    invocation = ToolInvocation(
        tool="mail",
        call_id="call_1_0",
        arguments={"to": "ann"},
        idempotency_key="k",
        agent="A",
        step=1,
        tenant="default",
    )
    with pytest.raises(ApplicationError) as raised:
        await ActivityEnvironment().run(reconcile, invocation)
    assert "s3cr3t-value" not in str(raised.value)
    assert "[secret:MAIL_KEY]" in str(raised.value) and not raised.value.non_retryable


async def test_a_rewound_side_effect_is_reconciled_done_reused_not_done_runs_unknown_asks(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    # The rewound run asks again for the three sends the rewind abandoned (and one more
    # that no abandoned call matches): ann's happened, bob's did not, cy's cannot be told.
    calls = [tool_call("send", to=to, text="hi") for to in (*RECIPIENTS, "dee")]
    model = ScriptedModel([calls, tool_results])
    notice = RewindNotice(
        to_step=0,
        abandoned_run_id="abandoned-run",
        side_effects=tuple(abandoned_send(to, i) for i, to in enumerate(RECIPIENTS)),
    )
    async with agent_worker(client, Postman, model=model, task_queue=task_queue):
        handle = await start_rewound(
            client, task_queue, "Postman", "Send hi to everyone", notice, "mailer"
        )
        workflow_id = handle.id
        request = await pending(agents, workflow_id)
        sends = [e["to"] for e in read_ledger(ledger) if e["tool"] == "send"]
        await agents.approve(workflow_id, request.id, by="ops")
        result = await agents.result(workflow_id)

    # cy waits for a person, with the reason; nothing of cy's ran before the decision.
    assert request.tool == "send" and request.arguments == {"to": "cy", "text": "hi"}
    assert "unknown" in (request.reason or "") and "no log" in (request.reason or "")
    assert "abandoned/cy" in (request.reason or "")
    assert sends == ["bob"]
    assert result.status == "completed"
    assert result.output == (
        "sent to ann (before the rewind) | sent to bob | sent to cy | sent to dee"
    )
    entries = read_ledger(ledger)
    # Each hook ran under the abandoned call's key; dee matched nothing, so no hook.
    assert [(e["to"], e["key"]) for e in entries if e["tool"] == "reconcile.send"] == [
        (to, f"abandoned/{to}") for to in RECIPIENTS
    ]
    # ann's send never ran again; bob's, cy's (approved) and dee's ran once each, under
    # the new calls' own keys.
    first_run = handle.first_execution_run_id or ""
    assert [(e["to"], e["key"]) for e in entries if e["tool"] == "send"] == [
        (to, idempotency_key(workflow_id, first_run, 1, f"call_1_{i}"))
        for i, to in enumerate((*RECIPIENTS, "dee"))
        if to != "ann"
    ]


async def test_a_rejected_unknown_outcome_is_skipped(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = ScriptedModel([tool_call("send", to="cy", text="hi"), tool_results])
    notice = RewindNotice(to_step=0, abandoned_run_id="r", side_effects=(abandoned_send("cy", 0),))
    async with agent_worker(client, Postman, model=model, task_queue=task_queue):
        handle = await start_rewound(
            client, task_queue, "Postman", "Send hi to cy", notice, "mailer"
        )
        workflow_id = handle.id
        request = await pending(agents, workflow_id)
        await agents.reject(workflow_id, request.id, by="ops", comment="it went out")
        result = await agents.result(workflow_id)
    assert [e for e in read_ledger(ledger) if e["tool"] == "send"] == []
    assert "was not run" in result.output and "it went out" in result.output


async def test_a_reconcile_hook_that_keeps_failing_asks_a_person_instead_of_failing_the_run(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = ScriptedModel([tool_call("post", to="cy"), tool_results])
    lost = RewoundCall(
        step=1,
        call_id="call_1_0",
        tool="post",
        arguments_sha256=arguments_sha256({"to": "cy"}),
        idempotency_key="abandoned/post",
        outcome="unknown",
    )
    notice = RewindNotice(to_step=0, abandoned_run_id="r", side_effects=(lost,))
    async with agent_worker(client, Postman, model=model, task_queue=task_queue):
        handle = await start_rewound(client, task_queue, "Postman", "Post to cy", notice, "postman")
        workflow_id = handle.id
        request = await pending(agents, workflow_id)
        await agents.approve(workflow_id, request.id, by="ops")
        result = await agents.result(workflow_id)
    assert "reconcile hook failed" in (request.reason or "")
    assert "archive is down" in (request.reason or "")
    entries = read_ledger(ledger)
    assert len([e for e in entries if e["tool"] == "reconcile.post"]) == 2  # its retries
    assert [e["to"] for e in entries if e["tool"] == "post"] == ["cy"]
    assert result.output == "posted to cy"


async def test_what_is_left_to_reconcile_survives_continue_as_new(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    # Two sends to ann were abandoned. The rewound run sends to ann at steps 1, 2 and 3,
    # continuing as new after each: the first two are reconciled (one abandoned call
    # each, across runs), the third is a new send and runs.
    model = ScriptedModel([tool_call("send", to="ann", text="hi")] * 3 + [tool_results])
    twice = tuple(
        abandoned_send("ann", i).model_copy(update={"idempotency_key": f"abandoned/ann/{i}"})
        for i in range(2)
    )
    notice = RewindNotice(to_step=0, abandoned_run_id="r", side_effects=twice)
    async with agent_worker(client, HoppingPostman, model=model, task_queue=task_queue):
        handle = await start_rewound(
            client, task_queue, "HoppingPostman", "Say hi to ann, three times", notice, "hopping"
        )
        workflow_id = handle.id
        result = await agents.result(workflow_id)
    entries = read_ledger(ledger)
    assert [e["key"] for e in entries if e["tool"] == "reconcile.send"] == [
        "abandoned/ann/0",
        "abandoned/ann/1",
    ]
    assert len([e for e in entries if e["tool"] == "send"]) == 1
    assert result.output.split(" | ") == ["sent to ann (before the rewind)"] * 2 + ["sent to ann"]


async def test_a_second_rewind_keeps_the_first_rewinds_unreconciled_side_effects(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    # The first rewind abandoned a send to ann; before the run repeated it, a second
    # rewind abandoned a send to bob. The second notice names only bob's (ann's is in no
    # history it reads), yet ann's happened: the run must still ask before sending again.
    calls = [tool_call("send", to=to, text="hi") for to in ("ann", "bob")]
    model = ScriptedModel([calls, tool_results])
    first = RewindNotice(to_step=0, abandoned_run_id="r1", side_effects=(abandoned_send("ann", 0),))
    second = RewindNotice(
        to_step=0, abandoned_run_id="r2", side_effects=(abandoned_send("bob", 0),)
    )
    handle = await start_rewound(
        client, task_queue, "Postman", "Send hi to ann and bob", first, "mailer"
    )
    workflow_id = handle.id
    await handle.signal(REWIND_SIGNAL, second)  # both come in the run's first task
    async with agent_worker(client, Postman, model=model, task_queue=task_queue):
        result = await agents.result(workflow_id)
    entries = read_ledger(ledger)
    assert [e["to"] for e in entries if e["tool"] == "reconcile.send"] == ["ann", "bob"]
    assert [e["to"] for e in entries if e["tool"] == "send"] == ["bob"]  # ann's: done
    assert result.output == "sent to ann (before the rewind) | sent to bob"
    assert result.status == "completed"


def test_a_second_notice_lists_its_own_calls_first_then_what_the_first_left() -> None:
    ann, bob = abandoned_send("ann", 0), abandoned_send("bob", 1)
    first = RewindNotice(to_step=1, abandoned_run_id="r1", side_effects=(ann, bob))
    second = RewindNotice(
        to_step=2, abandoned_run_id="r2", side_effects=(bob, abandoned_send("cy", 0))
    )
    carried = carry_unreconciled(first, second)
    # bob's call is listed once (same idempotency key); the new notice's own come first.
    assert [c.idempotency_key for c in carried.side_effects] == [
        "abandoned/bob",
        "abandoned/cy",
        "abandoned/ann",
    ]
    assert carried.abandoned_run_id == "r2" and carried.to_step == 2
    assert carry_unreconciled(None, second) is second
    assert carry_unreconciled(first.model_copy(update={"side_effects": ()}), second) is second


async def test_a_retry_after_the_tool_acted_reuses_the_result_when_reconcile_says_done(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    # Attempt 1 transfers, then its connection drops (a retryable failure); attempt 2
    # asks the hook first, which finds the transfer.
    model = ScriptedModel([tool_call("transfer", amount=5), tool_results])
    async with agent_worker(client, Payer, model=model, task_queue=task_queue):
        handle = await agents.start(Payer, AgentInput(prompt="Pay 5"))
        result = await agents.result(handle.id)
    entries = read_ledger(ledger)
    assert result.output == "transferred 5"
    assert [e["attempt"] for e in entries if e["tool"] == "transfer.acted"] == [1]
    assert [e["attempt_seen"] for e in entries if e["tool"] == "reconcile.transfer"] == [2]


async def test_a_retry_whose_outcome_reconcile_cannot_tell_waits_for_an_approval(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = ScriptedModel([tool_call("transfer", amount=5000), tool_results])
    async with agent_worker(client, Payer, model=model, task_queue=task_queue):
        handle = await agents.start(Payer, AgentInput(prompt="Pay 5000"))
        request = await pending(agents, handle.id)
        acted = [e for e in read_ledger(ledger) if e["tool"] == "transfer.acted"]
        await agents.approve(handle.id, request.id, by="ops")
        result = await agents.result(handle.id)
    assert request.id.endswith("-unknown") and "by letter" in (request.reason or "")
    assert len(acted) == 1  # the failed attempt's; the retry stopped at the hook
    # Approved: it runs again, under the same key (a person chose to).
    again = [e for e in read_ledger(ledger) if e["tool"] == "transfer.acted"]
    assert len(again) == 2 and len({e["key"] for e in again}) == 1
    assert result.output == "transferred 5000"


async def test_a_worker_killed_after_the_tool_acted_does_not_act_twice(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path, tmp_path: Path
) -> None:
    address = client.service_client.config.target_host
    first = await spawn_payer(address, task_queue, ledger, tmp_path / "worker-1.log")
    second = None
    try:
        handle = await agents.start(Payer, AgentInput(prompt="Pay 5"))
        await wait_for_entry(ledger, lambda e: e["tool"] == "transfer.acted")
        first.kill()  # after the transfer, before its activity could complete
        second = await spawn_payer(address, task_queue, ledger, tmp_path / "worker-2.log")
        result = await asyncio.wait_for(agents.result(handle.id), RESULT_TIMEOUT)
    finally:
        await first.stop()
        if second is not None:
            await second.stop()
    entries = read_ledger(ledger)
    assert result.output == "transferred 5"
    acted = [e for e in entries if e["tool"] == "transfer.acted"]
    assert [e["pid"] for e in acted] == [first.pid]
    hooks = [e for e in entries if e["tool"] == "reconcile.transfer"]
    assert [(e["pid"], e["attempt_seen"]) for e in hooks] == [(second.pid, 2)]


async def test_a_rewind_past_a_completed_send_reuses_its_result_and_sends_nothing(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    # The whole path: the send of step 2 completes, the run is rewound to step 1
    # (AgentClient.rewind: reset plus notice), and step 2 makes the same call again.
    sends = [tool_call("send", to=to, text="hi") for to in ("bob", "ann")]
    model = ScriptedModel([*sends, tool_results])
    async with agent_worker(client, Postman, model=model, task_queue=task_queue):
        handle = await agents.start(Postman, AgentInput(prompt="Say hi to bob, then ann"))
        original = await agents.result(handle.id)
        rewound = await agents.rewind(handle.id, to_step=1)
        result = await agents.result(handle.id)
    [listed] = rewound.side_effects
    assert (listed.tool, listed.step, listed.outcome) == ("send", 2, "completed")
    assert original.output == "sent to bob | sent to ann"
    assert result.output == "sent to bob | sent to ann (before the rewind)"
    entries = read_ledger(ledger)
    assert [e["to"] for e in entries if e["tool"] == "send"] == ["bob", "ann"]  # never again
    assert [e["key"] for e in entries if e["tool"] == "reconcile.send"] == [listed.idempotency_key]


async def test_a_rewind_before_an_earlier_rewinds_step_still_lists_its_side_effects(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    # Run 1 sends to bob (steps 1, 2) and ann (step 3). Rewound to step 2 (ann's send is
    # listed), run 2 answers without sending. Rewound again to step 1: run 2's history
    # holds no send to ann, only the first notice naming it; the second rewind must
    # list it, so run 3 repeating it asks reconcile and sends nothing.
    bob, again, ann = (
        tool_call("send", to=to, text=text)
        for to, text in (("bob", "hi"), ("bob", "again"), ("ann", "hi"))
    )
    model = ScriptedModel([bob, again, ann, tool_results, tool_results, again, ann, tool_results])
    async with agent_worker(client, Postman, model=model, task_queue=task_queue):
        handle = await agents.start(Postman, AgentInput(prompt="Greet bob twice, then ann"))
        await agents.result(handle.id)
        first = await agents.rewind(handle.id, to_step=2)
        await agents.result(handle.id)
        second = await agents.rewind(handle.id, to_step=1)
        result = await agents.result(handle.id)
    [ann_send] = first.side_effects
    assert ann_send.step == 3 and ann_send.tool == "send"
    # Run 2's own send of step 2 (copied from run 1), then what the first notice listed.
    assert [c.step for c in second.side_effects] == [2, 3]
    assert second.side_effects[1] == ann_send
    entries = read_ledger(ledger)
    assert [e["to"] for e in entries if e["tool"] == "send"] == ["bob", "bob", "ann", "bob"]
    # Run 2 asked about ann's send, then run 3 about bob's second and ann's again.
    assert [e["key"] for e in entries if e["tool"] == "reconcile.send"] == [
        ann_send.idempotency_key,
        second.side_effects[0].idempotency_key,
        ann_send.idempotency_key,
    ]
    assert result.output.endswith("sent to bob | sent to ann (before the rewind)")
