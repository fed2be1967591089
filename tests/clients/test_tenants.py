"""Tenants through every interface: a key of one tenant never reaches another's runs.

The client (``AgentClient`` bound to a key's principal), the CLI (``SMYTH_API_KEY``)
and the MCP server (``smyth mcp serve`` acting as one key) all refuse the same way:
another tenant's run looks exactly like one that does not exist. The gateway's own
tests (``test_gateway_keys.py``, ``test_gateway_api.py``) cover HTTP the same way.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from mcp import Client as MCPClient
from mcp import StdioServerParameters
from temporalio.client import Client

from smyth_temporal import (
    AccessDeniedError,
    AgentClient,
    AgentInput,
    AgentNotFoundError,
    ScheduleNotFoundError,
)
from smyth_temporal.gateway import create_app
from smyth_temporal.mcp_server import agents_mcp_server
from smyth_temporal.security import KeyStore, Principal
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from smyth_temporal.types.approvals import (
    APPROVAL_SIGNAL,
    APPROVAL_UPDATE,
    ApprovalDecision,
    ApprovalOutcome,
)
from tests.agent.test_approvals import wait_for_pending
from tests.helpers.cli_support import assert_one_error_line, run_smyth
from tests.helpers.mcp_servers import REPO_ROOT
from tests.helpers.trader import Trader
from tests.mcp.test_mcp_serve import serve_command, server_environment, text_of

KEY_NAMES = {
    "acme-operator": ("acme", "operator"),
    "acme-approver": ("acme", "approver"),
    "acme-viewer": ("acme", "viewer"),
    "globex-admin": ("globex", "admin"),
}


@pytest.fixture
def keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """One key per name above, in a key file this test's processes share."""
    path = tmp_path / "keys.json"
    monkeypatch.setenv("SMYTH_KEYS_FILE", str(path))
    monkeypatch.delenv("SMYTH_API_KEY", raising=False)
    store = KeyStore(path)
    return {
        name: store.create(tenant=tenant, role=role, name=name)[1]
        for name, (tenant, role) in KEY_NAMES.items()
    }


def as_key(client: Client, task_queue: str, name: str) -> AgentClient:
    tenant, role = KEY_NAMES[name]
    principal = Principal(name=name, tenant=tenant, role=role)  # type: ignore[arg-type]
    return AgentClient(client, task_queue=task_queue, principal=principal)


@pytest.fixture
async def waiting_run(client: Client, task_queue: str, keys: dict[str, str]) -> AsyncIterator[str]:
    """An acme run waiting for an approval, started by acme's operator."""
    model = ScriptedModel([tool_call("sell", symbol="ACME", quantity=10), reply("sold")])
    async with agent_worker(client, Trader, model=model, task_queue=task_queue):
        operator = as_key(client, task_queue, "acme-operator")
        handle = await operator.start(Trader, "Sell ACME")  # tenant "default" means "mine"
        await wait_for_pending(operator, handle.id, 1)
        yield handle.id


async def test_the_client_keeps_tenants_apart(
    client: Client, task_queue: str, waiting_run: str
) -> None:
    operator = as_key(client, task_queue, "acme-operator")
    approver = as_key(client, task_queue, "acme-approver")
    viewer = as_key(client, task_queue, "acme-viewer")
    stranger = as_key(client, task_queue, "globex-admin")
    assert (await viewer.state(waiting_run)).tenant == "acme"  # the key's tenant, not "default"

    # Another tenant's run is exactly like no run at all, whatever the operation.
    for attempt in (
        stranger.state(waiting_run),
        stranger.result(waiting_run),
        stranger.audit(waiting_run),
        stranger.approve(waiting_run, by="globex-admin"),
        stranger.interrupt(waiting_run),
    ):
        with pytest.raises(
            AgentNotFoundError, match=f"no agent run with workflow id '{waiting_run}'"
        ):
            await attempt
    with pytest.raises(AgentNotFoundError):
        await anext(aiter(stranger.events(waiting_run)))
    # (Other tests' runs of globex may be waiting on the shared server: look at this one.)
    assert waiting_run not in [p.workflow_id for p in await stranger.pending_approvals()]
    assert waiting_run in [p.workflow_id for p in await viewer.pending_approvals()]
    # Naming another tenant is refused outright, not silently redirected.
    with pytest.raises(AccessDeniedError, match="acts for tenant 'globex' only"):
        await stranger.start(Trader, AgentInput(prompt="x", tenant="acme"))
    with pytest.raises(AccessDeniedError, match="acts for tenant 'globex' only"):
        await stranger.memory.search("anything", tenant="acme", namespace="n")

    # Roles: a viewer starts nothing, an operator decides nothing.
    with pytest.raises(AccessDeniedError, match=r"role viewer.*start runs"):
        await viewer.start(Trader, "Sell")
    with pytest.raises(AccessDeniedError, match=r"role operator.*decide approvals"):
        await operator.approve(waiting_run, by="acme-operator")
    with pytest.raises(AccessDeniedError, match=r"role operator.*forget memories"):
        await operator.memory.forget(["m-1"], namespace="n")

    # The approver decides, and history records the key's name, whatever `by` says.
    outcome = await approver.approve(waiting_run, by="somebody-else")
    assert outcome is not None and outcome.request.decision is not None
    assert outcome.request.decision.by == "acme-approver"
    trail = await approver.audit(waiting_run)
    assert [e.fields["by"] for e in trail.of("approval_decided")] == ["acme-approver"]


async def test_the_cli_acts_as_its_key(
    client: Client, address: str, waiting_run: str, keys: dict[str, str], tmp_path: Path
) -> None:
    def smyth(key: str, *args: str) -> object:
        env = {"SMYTH_API_KEY": keys[key], "SMYTH_KEYS_FILE": str(tmp_path / "keys.json")}
        return run_smyth(*args, "--address", address, env=env)

    refused = await asyncio.to_thread(smyth, "globex-admin", "state", waiting_run)
    assert_one_error_line(refused, f"no agent run with workflow id '{waiting_run}'")  # type: ignore[arg-type]
    refused = await asyncio.to_thread(smyth, "globex-admin", "approve", waiting_run)
    assert_one_error_line(refused, f"no agent run with workflow id '{waiting_run}'")  # type: ignore[arg-type]
    denied = await asyncio.to_thread(smyth, "acme-viewer", "approve", waiting_run)
    assert_one_error_line(denied, "role viewer")  # type: ignore[arg-type]
    shown = await asyncio.to_thread(smyth, "acme-viewer", "state", waiting_run, "--json")
    assert json.loads(shown.out)["tenant"] == "acme"  # type: ignore[attr-defined]
    bad = run_smyth("state", waiting_run, "--address", address, env={"SMYTH_API_KEY": "smyth_nope"})
    assert_one_error_line(bad, "SMYTH_API_KEY is not a valid API key")


async def test_the_mcp_server_acts_as_one_key(
    address: str, task_queue: str, waiting_run: str, keys: dict[str, str], tmp_path: Path
) -> None:
    environment = {**server_environment(), "SMYTH_KEYS_FILE": str(tmp_path / "keys.json")}
    # With keys in the file, a server that does not say which key it is refuses to start.
    keyless = run_smyth(*serve_command(address, task_queue)[2:], env=environment)
    assert_one_error_line(keyless, "holds API keys: set SMYTH_API_KEY")

    params = StdioServerParameters(
        command=sys.executable,
        args=serve_command(address, task_queue),
        env={**environment, "SMYTH_API_KEY": keys["globex-admin"]},
        cwd=str(REPO_ROOT),
    )
    async with asyncio.timeout(60), MCPClient(params) as mcp:
        state = await mcp.call_tool("run_state", {"workflow_id": waiting_run})
        assert state.is_error and "no agent run with workflow id" in text_of(state)
        decided = await mcp.call_tool(
            "decide_approval", {"workflow_id": waiting_run, "approve": True, "by": "x"}
        )
        assert decided.is_error and "no agent run with workflow id" in text_of(decided)
        listed = await mcp.call_tool("list_approvals", {})
        assert waiting_run not in text_of(listed)
        started = await mcp.call_tool(
            "start_run", {"agent": "Trader", "prompt": "x", "tenant": "acme"}
        )
        assert started.is_error and "acts for tenant 'globex' only" in text_of(started)

    # Deciding needs the approver role: acme's viewer sees the approval, cannot decide it.
    viewer = StdioServerParameters(
        command=sys.executable,
        args=serve_command(address, task_queue),
        env={**environment, "SMYTH_API_KEY": keys["acme-viewer"]},
        cwd=str(REPO_ROOT),
    )
    async with asyncio.timeout(60), MCPClient(viewer) as mcp:
        listed = await mcp.call_tool("list_approvals", {})
        assert waiting_run in text_of(listed)
        decided = await mcp.call_tool(
            "decide_approval", {"workflow_id": waiting_run, "approve": True}
        )
        assert decided.is_error and "role viewer" in text_of(decided)


async def test_schedules_belong_to_the_key_s_tenant(
    client: Client, task_queue: str, keys: dict[str, str]
) -> None:
    operator = as_key(client, task_queue, "acme-operator").schedules
    viewer = as_key(client, task_queue, "acme-viewer").schedules
    stranger = as_key(client, task_queue, "globex-admin").schedules
    schedule_id = await operator.create(
        Trader, every=timedelta(hours=1), prompt="Sell", paused=True
    )
    try:
        assert (await viewer.describe(schedule_id)).tenant == "acme"
        assert schedule_id in [s.id for s in await viewer.list()]
        assert schedule_id not in [s.id for s in await stranger.list()]
        for attempt in (
            stranger.describe(schedule_id),
            stranger.resume(schedule_id),
            stranger.trigger(schedule_id),
            stranger.delete(schedule_id),
        ):
            with pytest.raises(ScheduleNotFoundError, match=f"no schedule with id '{schedule_id}'"):
                await attempt
        with pytest.raises(AccessDeniedError, match="role viewer"):
            await viewer.pause(schedule_id)
        with pytest.raises(AccessDeniedError, match="role viewer"):
            await viewer.create(Trader, every=timedelta(hours=1), prompt="x")
        with pytest.raises(AccessDeniedError, match="acts for tenant 'acme' only"):
            await operator.create(Trader, every=timedelta(hours=1), prompt="x", tenant="globex")
    finally:
        await operator.delete(schedule_id)


async def test_every_interface_refuses_another_tenants_run_and_a_viewers_decision_alike(
    client: Client, task_queue: str, address: str, waiting_run: str, keys: dict[str, str]
) -> None:
    """One access check (``AgentClient.acting_for``) behind the client, HTTP, MCP and the CLI."""
    state = await wait_for_pending(as_key(client, task_queue, "acme-viewer"), waiting_run, 1)
    request_id, sha256 = state.pending_approvals[0].id, state.pending_approvals[0].arguments_sha256
    app = create_app(AgentClient(client, task_queue=task_queue), [Trader], keys=KeyStore())
    http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gateway")

    async def refusals(name: str, whats: tuple[str, ...]) -> dict[str, str]:
        """What each interface answers ``name`` reading the run or deciding its request."""
        agents = as_key(client, task_queue, name)
        headers = {"Authorization": f"Bearer {keys[name]}"}
        env = {"SMYTH_API_KEY": keys[name]}
        attempts = {
            "state": (
                lambda: agents.state(waiting_run),
                lambda: http.get(f"/v1/runs/{waiting_run}", headers=headers),
                ("run_state", {"workflow_id": waiting_run}),
                ["state", waiting_run],
            ),
            "decide": (
                lambda: agents.approve(waiting_run, request_id, by=name, arguments_sha256=sha256),
                lambda: http.post(
                    f"/v1/runs/{waiting_run}/approvals/{request_id}",
                    json={"approved": True, "arguments_sha256": sha256},
                    headers=headers,
                ),
                (
                    "decide_approval",
                    {
                        "workflow_id": waiting_run,
                        "approve": True,
                        "request_id": request_id,
                        "arguments_sha256": sha256,
                    },
                ),
                ["approve", waiting_run, "--request", request_id, "--sha256", sha256],
            ),
        }
        said: dict[str, str] = {}
        # ``smyth mcp serve`` with SMYTH_API_KEY: its tools act through the key's client.
        async with MCPClient(agents_mcp_server(agents, ["Trader"])) as mcp:
            for what in whats:
                in_python, over_http, (tool, arguments), command = attempts[what]
                with pytest.raises((AgentNotFoundError, AccessDeniedError)) as refused:
                    await in_python()
                said[f"client {what}"] = str(refused.value)
                answer = await over_http()
                said[f"gateway {what} ({answer.status_code})"] = answer.json()["detail"]
                result = await mcp.call_tool(tool, arguments)
                assert result.is_error
                # (The mcp SDK frames a tool's error: "Error executing tool T: <error>".)
                said[f"mcp {what}"] = text_of(result).removeprefix(f"Error executing tool {tool}: ")
                outcome = await asyncio.to_thread(
                    run_smyth, *command, "--address", address, env=env
                )
                assert outcome.code == 1 and len(outcome.error_lines) == 1, outcome
                said[f"cli {what}"] = outcome.error_lines[0].removeprefix("smyth: error: ")
        return said

    try:
        stranger = await refusals("globex-admin", ("state", "decide"))
        viewer = await refusals("acme-viewer", ("decide",))
    finally:
        await http.aclose()

    missing = f"no agent run with workflow id '{waiting_run}'"
    assert stranger == {
        "client state": missing,
        "client decide": missing,
        "gateway state (404)": missing,
        "gateway decide (404)": missing,
        "mcp state": missing,
        "mcp decide": missing,
        "cli state": missing,
        "cli decide": missing,
    }
    forbidden = "key 'acme-viewer' (role viewer) may not decide approvals"
    assert viewer == {
        "client decide": forbidden,
        "gateway decide (403)": forbidden,
        "mcp decide": forbidden,
        "cli decide": forbidden,
    }
    # The run never heard of either.
    owner = as_key(client, task_queue, "acme-approver")
    assert [a.id for a in (await owner.state(waiting_run)).pending_approvals] == [request_id]


async def test_status_tells_another_tenants_run_from_no_run_never(
    client: Client, task_queue: str, waiting_run: str
) -> None:
    # ``status`` answered RUNNING for another tenant's run, and None for a missing one.
    stranger = as_key(client, task_queue, "globex-admin")
    assert await stranger.status(waiting_run) is None
    assert await stranger.status("no-such-run") is None
    assert await as_key(client, task_queue, "acme-viewer").status(waiting_run) is not None


async def test_a_viewer_cannot_decide_through_the_raw_signal_or_update(
    client: Client, task_queue: str, waiting_run: str
) -> None:
    # ``signal`` and ``update`` needed only "read": a viewer key could send the approval
    # signal itself and have the sale run.
    viewer = as_key(client, task_queue, "acme-viewer")
    decision = ApprovalDecision(approved=True, by="acme-viewer")
    with pytest.raises(AccessDeniedError, match="role viewer"):
        await viewer.signal(waiting_run, APPROVAL_SIGNAL, decision)
    with pytest.raises(AccessDeniedError, match="role viewer"):
        await viewer.update(waiting_run, APPROVAL_UPDATE, decision, result_type=ApprovalOutcome)
    approver = as_key(client, task_queue, "acme-approver")
    with pytest.raises(AccessDeniedError, match="role approver"):
        await approver.signal(waiting_run, APPROVAL_SIGNAL, decision)
    state = await as_key(client, task_queue, "acme-operator").state(waiting_run)
    assert [a.status for a in state.approvals] == ["pending"]


async def test_a_remembered_run_whose_id_another_tenant_took_is_never_decided(
    client: Client, task_queue: str, keys: dict[str, str]
) -> None:
    """The tenant cache trusts a remembered chain only for updates pinned to it."""
    model = ScriptedModel([tool_call("sell", symbol="ACME", quantity=10), reply("sold")] * 3)
    reused = f"reused-{task_queue}"
    trusted = AgentClient(client, task_queue=task_queue)
    acme = trusted.acting_for(Principal(name="acme-approver", tenant="acme", role="approver"))
    async with agent_worker(client, Trader, model=model, task_queue=task_queue):
        first = await trusted.start(Trader, AgentInput(prompt="Sell", tenant="acme"), id=reused)
        pending = await wait_for_pending(acme, first.id, 1)
        await acme.approve(first.id, pending.pending_approvals[0].id, by="x")  # remembered
        await trusted.result(first.id)

        # The id, used again by globex, waits for the same request id.
        await trusted.start(Trader, AgentInput(prompt="Sell", tenant="globex"), id=reused)
        theirs = await wait_for_pending(trusted, reused, 1)
        request_id = theirs.pending_approvals[0].id
        with pytest.raises(AgentNotFoundError, match=f"no agent run with workflow id '{reused}'"):
            await acme.approve(reused, request_id, by="x")
        assert [a.status for a in (await trusted.state(reused)).approvals] == ["pending"]
        await trusted.reject(reused, request_id, by="cleanup")
        await trusted.result(reused)

        # Used again by acme: the decision finds the new chain.
        await trusted.start(Trader, AgentInput(prompt="Sell", tenant="acme"), id=reused)
        ours = await wait_for_pending(trusted, reused, 1)
        outcome = await acme.approve(reused, ours.pending_approvals[0].id, by="x")
        assert outcome is not None and outcome.request.status == "approved"
        assert (await trusted.result(reused)).output == "sold"
