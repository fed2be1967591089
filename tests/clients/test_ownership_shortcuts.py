"""The ownership checks a client skips, and that another tenant is still refused.

Each shortcut drops a server call the caller's check had already made (or could know
without asking): the tenant of a run this client just started, the second describe
of a streamed reply, a separate existence check before a continued session's message.
Each test also shows a key of another tenant still sees nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError

from smyth_temporal import AgentClient, AgentNotFoundError
from smyth_temporal.clients._tenancy import TenantResolver
from smyth_temporal.security import Principal
from smyth_temporal.testing import ScriptedModel, agent_worker, reply
from smyth_temporal.types.sessions import session_workflow_id
from tests.helpers.live_agents import Operator

ACME = Principal(name="acme-operator", tenant="acme", role="operator")
GLOBEX = Principal(name="globex-admin", tenant="globex", role="admin")
NOWHERE = "no-worker-polls-this-queue"
"""Runs started here are never taken: their input (and so tenant) is all there is."""


def counting(monkeypatch: pytest.MonkeyPatch, name: str) -> list[str]:
    """Count calls of ``TenantResolver.<name>`` (by workflow id)."""
    calls: list[str] = []
    original: Callable[..., Awaitable[Any]] = getattr(TenantResolver, name)

    async def counted(self: TenantResolver, *args: Any) -> Any:
        calls.append(str(args[0]) if args else "")
        return await original(self, *args)

    monkeypatch.setattr(TenantResolver, name, counted)
    return calls


async def test_a_started_runs_tenant_is_known_and_another_tenant_is_still_refused(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    trusted = AgentClient(client, task_queue=NOWHERE)
    acme, globex = trusted.acting_for(ACME), trusted.acting_for(GLOBEX)
    reads = counting(monkeypatch, "_input_tenant")
    handle = await acme.start(Operator, "Hello.")

    mine = await acme.status(handle.id)
    read_after_start = len(reads)
    theirs = await globex.status(handle.id)
    with pytest.raises(AgentNotFoundError):
        await globex.interrupt(handle.id)
    # A client that did not start it reads the tenant from the run's history, once.
    elsewhere = await AgentClient(client, task_queue=NOWHERE, principal=ACME).status(handle.id)
    await client.get_workflow_handle(handle.id).terminate("test over")

    assert mine == WorkflowExecutionStatus.RUNNING and read_after_start == 0
    assert theirs is None  # the shared cache names acme: globex sees no run
    assert elsewhere == WorkflowExecutionStatus.RUNNING and len(reads) == 1


async def test_start_can_refuse_an_id_ever_used_so_a_retry_starts_nothing(
    client: Client,
) -> None:
    acme = AgentClient(client, task_queue=NOWHERE, principal=ACME)
    run_id = f"once-{uuid.uuid4().hex[:8]}"
    first = await acme.start(Operator, "Hello.", id=run_id)
    await client.get_workflow_handle(run_id).terminate("ended")
    with pytest.raises(WorkflowAlreadyStartedError):  # closed, and still refused
        await acme.start(
            Operator, "Hello.", id=run_id, id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE
        )
    # Another tenant's start of the id is refused the same way, and learns no tenant.
    with pytest.raises(WorkflowAlreadyStartedError):
        await AgentClient(client, task_queue=NOWHERE, principal=GLOBEX).start(
            Operator, "Hi.", id=run_id, id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE
        )
    described = await client.get_workflow_handle(run_id).describe()

    assert described.run_id == first.result_run_id  # no second run began


async def test_a_streamed_reply_checks_its_session_once_and_never_another_tenants(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = ScriptedModel([reply("Hi, Alice."), reply("You are Alice.")])
    session = f"once-{uuid.uuid4().hex[:8]}"
    trusted = AgentClient(client, task_queue=task_queue)
    acme, globex = trusted.acting_for(ACME), trusted.acting_for(GLOBEX)
    # An acme run holding the id globex's session of that name would have.
    squatter = session_workflow_id("Operator", "globex", session)
    await trusted.acting_for(ACME).start(Operator, "Hello.", id=squatter, task_queue=NOWHERE)
    async with agent_worker(client, Operator, model=model, task_queue=task_queue):
        await acme.send(Operator, session, "I am Alice.")
        checks = counting(monkeypatch, "current")
        stream = acme.send(Operator, session, "Who am I?", stream=True)
        text = "".join([chunk.text async for chunk in stream])
        checked = list(checks)
        for name in (session, f"never-{session}"):  # globex's is acme's squatter, or none
            with pytest.raises(AgentNotFoundError):
                async for _ in globex.send(Operator, name, "Who am I?", stream=True, existing=True):
                    pass
            with pytest.raises(AgentNotFoundError):
                await globex.send(Operator, name, "Who am I?", existing=True)
    squatted = await trusted.acting_for(ACME).status(squatter)
    await client.get_workflow_handle(squatter).terminate("test over")

    assert text == "You are Alice."
    assert checked == [session_workflow_id("Operator", "acme", session)]  # one describe
    assert len(model.requests) == 2  # nothing reached the model for globex
    assert (
        await globex.status(session_workflow_id("Operator", "globex", f"never-{session}")) is None
    )
    assert squatted == WorkflowExecutionStatus.RUNNING  # acme's run took no message
