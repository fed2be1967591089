"""A run's lineage: its parent, its forks (visibility, tenant-safe) and its rewinds (history)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType
from temporalio.api.workflowservice.v1 import ResetWorkflowExecutionRequest
from temporalio.client import Client
from temporalio.common import SearchAttributePair, TypedSearchAttributes

from smyth_temporal import AccessDeniedError, AgentClient, AgentInput
from smyth_temporal.security import Principal
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from smyth_temporal.types.model import MODEL_ACTIVITY
from smyth_temporal.types.rewind import REWIND_SIGNAL, RewindNotice, RewoundCall
from smyth_temporal.types.visibility import FORK_OF_ATTRIBUTE, TENANT_ATTRIBUTE
from tests.agent.test_approvals import wait_for_pending
from tests.helpers.agents import Analyst
from tests.helpers.cli_support import run_smyth
from tests.helpers.trader import Trader

SCRIPT = [
    tool_call("get_quote", symbol="ACME"),
    tool_call("get_quote", symbol="GLOBEX"),
    reply("Both are up."),
]


async def test_a_runs_forks_are_listed_for_its_tenant_only(
    client: Client, agents: AgentClient, task_queue: str, address: str, ledger: Path
) -> None:
    env = {"TEMPORAL_ADDRESS": address, "SMYTH_TASK_QUEUE": task_queue}
    acme = agents.acting_for(Principal(name="acme-ops", tenant="acme", role="operator"))
    viewer = agents.acting_for(Principal(name="acme-viewer", tenant="acme", role="viewer"))
    async with agent_worker(client, Analyst, model=ScriptedModel(SCRIPT), task_queue=task_queue):
        parent = await acme.start(Analyst, AgentInput(prompt="ACME and GLOBEX?", tenant="acme"))
        await acme.result(parent.id)
        first = await acme.fork(parent.id, at_step=1, id=f"{parent.id}-a")
        second = await acme.fork(parent.id, at_step=2, id=f"{parent.id}-b")
        await acme.result(first.id)
        await acme.result(second.id)
        # Another tenant's run that names the same parent (as a run of a reused id could).
        intruder = await client.start_workflow(
            "Analyst",
            AgentInput(prompt="mine", tenant="globex"),
            id=f"{parent.id}-globex",
            task_queue=f"{task_queue}-nobody",
            search_attributes=TypedSearchAttributes(
                [
                    SearchAttributePair(FORK_OF_ATTRIBUTE, parent.id),
                    SearchAttributePair(TENANT_ATTRIBUTE, "globex"),
                ]
            ),
        )
        # And one started without a tenant attribute: its input says whose it is.
        untagged = await client.start_workflow(
            "Analyst",
            AgentInput(prompt="mine too", tenant="globex"),
            id=f"{parent.id}-untagged",
            task_queue=f"{task_queue}-nobody",
            search_attributes=TypedSearchAttributes(
                [SearchAttributePair(FORK_OF_ATTRIBUTE, parent.id)]
            ),
        )
        state = await viewer.state(parent.id, lineage=True)
        fork_state = await acme.state(first.id, lineage=True)
        plain = await acme.state(parent.id)
        trail = await acme.audit(parent.id)
        fork_trail = await acme.audit(first.id)
        shown = await asyncio.to_thread(run_smyth, "state", parent.id, env=env)
        await intruder.terminate()
        await untagged.terminate()

    assert [(f.workflow_id, f.step) for f in state.forks] == [(first.id, 1), (second.id, 2)]
    assert all(f.status == "completed" and f.parent_run_id for f in state.forks)
    assert plain.forks == [] and state.rewinds == []  # lineage only when asked for
    assert fork_state.fork_of is not None and fork_state.fork_of.workflow_id == parent.id
    assert fork_state.forks == []
    assert [f.workflow_id for f in trail.forks] == [first.id, second.id]
    assert trail.fork_of is None
    assert fork_trail.fork_of is not None and fork_trail.fork_of.step == 1
    started = fork_trail.of("run_started")[0].fields
    assert (started["forked_from"], started["forked_at_step"]) == (parent.id, 1)
    assert shown.code == 0, shown.err
    assert f"forks    {first.id} (after step 1, completed); {second.id} (after step 2" in shown.out
    assert "globex" not in shown.out


async def _reset_after_step(
    client: Client, workflow_id: str, step: int, notice: RewindNotice | None
) -> str:
    """Reset the run to the workflow task that ended ``step``, then signal it ``notice``
    (``None``: no notice).

    What a rewind does (helper W's ``AgentClient.rewind``), done by hand so the lineage
    reader is tested against a real reset's history. Returns the new run id.
    """
    handle = client.get_workflow_handle(workflow_id)
    events = [e async for e in handle.fetch_history_events()]
    turns = [
        e.event_id
        for e in events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name == MODEL_ACTIVITY
    ]
    # The workflow task that scheduled turn step+1 is the one that ended ``step``.
    ended = max(
        e.event_id
        for e in events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED and e.event_id < turns[step]
    )
    run_id = (await handle.describe()).run_id
    response = await client.workflow_service.reset_workflow_execution(
        ResetWorkflowExecutionRequest(
            namespace=client.namespace,
            workflow_execution=WorkflowExecution(workflow_id=workflow_id, run_id=run_id),
            reason="rewind (test)",
            workflow_task_finish_event_id=ended,
            request_id=str(uuid.uuid4()),
        )
    )
    # The dev server refuses a signal as a post-reset operation: sent right after.
    if notice is not None:
        await client.get_workflow_handle(workflow_id, run_id=response.run_id).signal(
            REWIND_SIGNAL, notice
        )
    return response.run_id


async def test_a_rewind_is_in_the_runs_lineage_and_audit_and_is_no_lost_worker(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    async with agent_worker(client, Analyst, model=ScriptedModel(SCRIPT), task_queue=task_queue):
        handle = await agents.start(Analyst, "ACME and GLOBEX?")
        await agents.result(handle.id)
        abandoned = (await handle.describe()).run_id
        call = RewoundCall(
            step=2,
            call_id="call-2",
            tool="get_quote",
            arguments_sha256="0" * 64,
            idempotency_key="key-2",
            outcome="completed",
            result="GLOBEX 7",
        )
        notice = RewindNotice(
            to_step=1,
            abandoned_run_id=abandoned,
            side_effects=(call,),
            voided_approvals=("request-9",),
            by="alice",
            prompt="Only ACME.",
        )
        new_run = await _reset_after_step(client, handle.id, 1, notice)
        await client.get_workflow_handle(handle.id, run_id=new_run).result()
        state = await agents.state(handle.id, lineage=True)
        trail = await agents.audit(handle.id)

    [rewind] = state.rewinds
    assert (rewind.to_step, rewind.abandoned_run_id, rewind.run_id) == (1, abandoned, new_run)
    assert (rewind.by, rewind.voided_approvals) == ("alice", ["request-9"])
    assert [c.idempotency_key for c in rewind.side_effects] == ["key-2"]
    assert trail.of("worker_lost") == []  # the reset's failed workflow task is no lost worker
    [reset] = trail.of("reset")
    assert (reset.fields["abandoned_run_id"], reset.fields["new_run_id"]) == (abandoned, new_run)
    [rewound] = trail.of("rewound")
    assert rewound.fields["to_step"] == 1 and rewound.fields["by"] == "alice"
    assert rewound.fields["after_reset"] is True
    assert rewound.fields["side_effects"][0]["idempotency_key"] == "key-2"
    assert "result" not in rewound.fields["side_effects"][0]  # results stay out of the audit
    assert "prompt" not in rewound.fields and len(rewound.fields["prompt_sha256"]) == 64


async def test_a_rewind_notice_without_its_reset_is_no_rewind_and_a_key_cannot_send_one(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    operator = agents.acting_for(Principal(name="ops", tenant="default", role="operator"))
    model = ScriptedModel([tool_call("sell", symbol="ACME", quantity=10), reply("sold")])
    async with agent_worker(client, Trader, model=model, task_queue=task_queue):
        handle = await agents.start(Trader, "Sell ACME")
        await wait_for_pending(agents, handle.id, 1)  # open: it waits for an approval
        first = (await handle.describe()).run_id
        forged = RewindNotice(to_step=0, abandoned_run_id="made-up", by="mallory")
        # A key may not send a notice itself: it says who rewound and what to forget.
        with pytest.raises(AccessDeniedError, match="says who decided or rewound"):
            await operator.signal(handle.id, REWIND_SIGNAL, forged)
        new_run = await _reset_after_step(client, handle.id, 0, None)
        # A trusted client's signal that names no reset of this run is no rewind either.
        await client.get_workflow_handle(handle.id).signal(REWIND_SIGNAL, forged)
        await wait_for_pending(agents, handle.id, 1)
        assert (await agents.state(handle.id, lineage=True)).rewinds == []
        genuine = RewindNotice(to_step=0, abandoned_run_id=first, by="alice")
        await client.get_workflow_handle(handle.id).signal(REWIND_SIGNAL, genuine)
        rewinds = (await agents.state(handle.id, lineage=True)).rewinds
        trail = await agents.audit(handle.id)
        await handle.terminate()

    assert [(r.abandoned_run_id, r.run_id, r.by) for r in rewinds] == [(first, new_run, "alice")]
    # The audit shows both signals, and which followed a reset.
    notices = [(e.fields["by"], e.fields["after_reset"]) for e in trail.of("rewound")]
    assert notices == [("mallory", False), ("alice", True)]
