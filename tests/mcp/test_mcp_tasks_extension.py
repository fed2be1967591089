"""MCP tasks of the 2026-07-28 revision (the ``io.modelcontextprotocol/tasks`` extension).

``smyth mcp serve`` is the real command in a process of its own (stdio, and streamable
HTTP with keys); the client is the mcp SDK's own ``Client`` speaking 2026-07-28 with
``TasksClient``, a client side of the extension written from its specification. The
agents run on an in-process worker; a task is a run, read from Temporal.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY
from mcp.types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    ElicitRequestParams,
    ElicitResult,
    SubscriptionFilter,
    SubscriptionsAcknowledgedNotification,
)
from temporalio.client import Client as TemporalClient

from smyth_temporal.models import ModelRequest, ModelResponse
from smyth_temporal.testing import ScriptedModel, agent_worker, tool_call
from tests.helpers.gateway_support import make_keys
from tests.helpers.mcp_tasks_client import (
    TASKS,
    DetailedTask,
    TaskHandle,
    TasksClient,
    cancel_task,
    get_task,
    listen_to_tasks,
    poll,
    send_raw,
    update_task,
)
from tests.helpers.trader import Trader
from tests.mcp.test_mcp_serve import TIMEOUT, echo_tool_results, mcp_as, start_http_server
from tests.mcp.test_mcp_tasks import runs_started_since, stdio_server

SELL = {"agent": "Trader", "prompt": "Sell 10 ACME"}


@pytest.fixture
async def trader(client: TemporalClient, task_queue: str, ledger: Path) -> AsyncIterator[Path]:
    """A worker whose runs each ask to sell, then answer with the tool's result."""
    steps = [sell_then_answer] * 12  # each run, whatever the others did before it
    async with agent_worker(client, Trader, model=ScriptedModel(steps), task_queue=task_queue):
        yield ledger


def sell_then_answer(request: ModelRequest) -> ModelResponse:
    if any(message.role == "tool" for message in request.messages):
        return echo_tool_results(request)
    return tool_call("sell", symbol="ACME", quantity=10)


async def approving(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    """A person who reads the request and approves it."""
    assert "sell" in params.message and '"quantity": 10' in params.message
    return ElicitResult(action="accept", content={"approve": True, "comment": "fine"})


def sales(ledger: Path) -> list[dict[str, Any]]:
    if not ledger.exists():
        return []
    return [json.loads(line) for line in ledger.read_text().splitlines() if '"sell"' in line]


async def start(mcp: Client) -> TaskHandle:
    handle = await mcp.session.call_tool("start_run", SELL, allow_claimed=True)
    assert isinstance(handle, TaskHandle), handle
    return handle


@contextlib.asynccontextmanager
async def tasks_over_http(url: str, key: str) -> AsyncIterator[Client]:
    """A 2026-07-28 client of ``url`` with the extension, sending ``key``."""
    async with mcp_as(url, key, extensions=[TasksClient()]) as mcp:
        assert mcp.protocol_version == "2026-07-28"
        yield mcp


async def test_start_run_is_a_task_that_asks_for_approval_is_told_and_completes_with_the_sale(
    address: str, task_queue: str, trader: Path
) -> None:
    tasks, acks = TasksClient(), list[SubscriptionFilter]()

    async def note(message: Any) -> None:
        if isinstance(message, SubscriptionsAcknowledgedNotification):
            acks.append(message.params.notifications)

    server = stdio_server(address, task_queue)
    async with (
        asyncio.timeout(TIMEOUT),
        Client(
            server, extensions=[tasks], elicitation_callback=approving, message_handler=note
        ) as mcp,
    ):
        assert mcp.protocol_version == "2026-07-28"
        assert TASKS in (mcp.server_capabilities.extensions or {})

        handle = await start(mcp)
        assert handle.task_id.startswith("Trader-") and handle.status == "working"
        assert handle.ttl_ms is None and handle.poll_interval_ms

        waiting = await poll(mcp.session, handle.task_id, "input_required")
        (key, asked), *others = (waiting.input_requests or {}).items()
        assert others == [] and asked.params is not None
        state = await mcp.call_tool("run_state", {"workflow_id": handle.task_id})
        request = (state.structured_content or {})["pending_approvals"][0]
        for named in (request["id"], "sell", request["arguments_sha256"]):
            assert named in asked.params.message
        # Asked again until answered, under the same key (a client shows it once).
        again = await get_task(mcp.session, handle.task_id)
        assert list(again.input_requests or {}) == [key]

        answer = ElicitResult(action="accept", content={"approve": True})
        ack = await update_task(mcp.session, handle.task_id, {key: answer})
        assert ack.result_type == "complete"
        # The same answer again, to a key no longer asked: ignored, nothing sold twice.
        await update_task(mcp.session, handle.task_id, {key: answer})
        done = await poll(mcp.session, handle.task_id, "completed")
        assert done.poll_interval_ms is None and done.result is not None
        assert done.result["structuredContent"]["output"] == "sold 10 ACME"
        assert not done.result.get("isError")

        # A host resolves the task itself: the elicitation callback decides, and
        # call_tool returns the run's result.
        result = await mcp.call_tool("start_run", SELL)
        assert not result.is_error, result
        assert (result.structured_content or {})["output"] == "sold 10 ACME"

        # A client that listens is told each change of its task instead of polling.
        handle = await start(mcp)
        # An unknown id is not followed (another tenant's neither: no task to them).
        listening = asyncio.create_task(
            listen_to_tasks(mcp.session, handle.task_id, "Trader-nosuchrun")
        )
        while (told := await tasks.told.get()).status != "input_required":
            assert told.task_id == handle.task_id and told.status == "working"
        [key] = told.input_requests or {}
        assert acks and (acks[0].model_extra or {}).get("taskIds") == [handle.task_id]
        await update_task(mcp.session, handle.task_id, {key: answer})
        while (told := await tasks.told.get()).status != "completed":
            assert told.status == "working", told
        assert (told.result or {})["structuredContent"]["output"] == "sold 10 ACME"
        # Every task it follows has ended: the stream ends, gracefully.
        ended = await listening
        assert ended["_meta"][SUBSCRIPTION_ID_META_KEY] is not None
    assert len(sales(trader)) == 3


async def test_bad_requests_decide_nothing_and_a_refusal_or_a_cancel_sells_nothing(
    address: str, task_queue: str, trader: Path, client: TemporalClient
) -> None:
    since = datetime.now(UTC)
    async with (
        asyncio.timeout(TIMEOUT),
        Client(stdio_server(address, task_queue), extensions=[TasksClient()]) as mcp,
    ):
        for unknown in ("Trader-nosuchrun", "x" * 1001, ""):
            for ask in (get_task, cancel_task):
                with pytest.raises(MCPError) as refused:
                    await ask(mcp.session, unknown)
                assert refused.value.code == INVALID_PARAMS, refused.value
        with pytest.raises(MCPError, match="no task with id 'Trader-nosuchrun'"):
            await update_task(mcp.session, "Trader-nosuchrun", {})
        for method in ("tasks/get", "tasks/update", "tasks/cancel"):
            with pytest.raises(MCPError) as missing:
                await send_raw(mcp.session, method, {})
            assert missing.value.code == INVALID_PARAMS, missing.value
        for task_ids in ("Trader-x", [7], [f"Trader-{n}" for n in range(101)], [""]):
            with pytest.raises(MCPError) as bad_listen:
                await send_raw(
                    mcp.session, "subscriptions/listen", {"notifications": {"taskIds": task_ids}}
                )
            assert bad_listen.value.code == INVALID_PARAMS, bad_listen.value
        # An unknown agent: the tool's error, no task and no run.
        unknown_agent = await mcp.session.call_tool(
            "start_run", {**SELL, "agent": "Nobody"}, allow_claimed=True
        )
        assert getattr(unknown_agent, "is_error", False), unknown_agent
        assert await runs_started_since(client, task_queue, since) == 0

        handle = await start(mcp)
        waiting = await poll(mcp.session, handle.task_id, "input_required")
        [key] = waiting.input_requests or {}
        for malformed in ({"action": "accept"}, {"action": "accept", "content": {"approve": "y"}}):
            with pytest.raises(MCPError, match=r"content\.approve") as bad:
                await send_raw(
                    mcp.session,
                    "tasks/update",
                    {"taskId": handle.task_id, "inputResponses": {key: malformed}},
                )
            assert bad.value.code == INVALID_PARAMS
        not_an_answer = {"taskId": handle.task_id, "inputResponses": {key: {"action": "maybe"}}}
        with pytest.raises(MCPError, match="not an elicitation result"):
            await send_raw(mcp.session, "tasks/update", not_an_answer)
        # Nothing was decided: the same request is still asked.
        still: DetailedTask = await get_task(mcp.session, handle.task_id)
        assert (still.status, list(still.input_requests or {})) == ("input_required", [key])
        await cancel_task(mcp.session, handle.task_id)

        # A refused approval, and a cancel: each ends its task, and nothing is sold.
        declined = await start(mcp)
        waiting = await poll(mcp.session, declined.task_id, "input_required")
        [key] = waiting.input_requests or {}
        decline = ElicitResult(action="decline")
        await update_task(mcp.session, declined.task_id, {key: decline})
        done = await poll(mcp.session, declined.task_id, "completed")
        assert done.result is not None and "sold" not in json.dumps(done.result)

        cancelled = await start(mcp)
        waiting = await poll(mcp.session, cancelled.task_id, "input_required")
        # Dismissing the form decides nothing: the request is still asked.
        [key] = waiting.input_requests or {}
        await update_task(mcp.session, cancelled.task_id, {key: ElicitResult(action="cancel")})
        assert list((await get_task(mcp.session, cancelled.task_id)).input_requests or {}) == [key]
        assert (await cancel_task(mcp.session, cancelled.task_id)).result_type == "complete"
        assert (await poll(mcp.session, cancelled.task_id, "cancelled")).poll_interval_ms is None
        with pytest.raises(MCPError, match="has ended") as again:
            await cancel_task(mcp.session, cancelled.task_id)
        assert again.value.code == INVALID_PARAMS
    assert sales(trader) == []


async def test_only_the_tasks_tenant_sees_it_and_only_a_deciding_key_answers_it(
    address: str, task_queue: str, trader: Path, tmp_path: Path
) -> None:
    keys = make_keys(tmp_path / "keys.json")
    process, url = await start_http_server(address, task_queue, keys.store.path)
    try:
        async with asyncio.timeout(TIMEOUT):
            async with tasks_over_http(url, keys.by_role["operator"]) as operator:
                task_id = (await start(operator)).task_id
                [key] = (
                    await poll(operator.session, task_id, "input_required")
                ).input_requests or {}
                approve = {key: ElicitResult(action="accept", content={"approve": True})}
                # Operating is not deciding.
                with pytest.raises(MCPError, match="may not decide") as operating:
                    await update_task(operator.session, task_id, approve)
                assert operating.value.code == INVALID_REQUEST

            async with tasks_over_http(url, keys.other) as stranger:
                # Another tenant's admin: the task does not exist for it.
                for ask in (get_task, cancel_task):
                    with pytest.raises(MCPError, match=f"no task with id '{task_id}'"):
                        await ask(stranger.session, task_id)
                with pytest.raises(MCPError, match=f"no task with id '{task_id}'"):
                    await update_task(stranger.session, task_id, approve)
            async with tasks_over_http(url, keys.by_role["viewer"]) as viewer:
                assert (await get_task(viewer.session, task_id)).status == "input_required"
                for refused_to_viewer in (
                    update_task(viewer.session, task_id, approve),
                    cancel_task(viewer.session, task_id),
                ):
                    with pytest.raises(MCPError) as looked:
                        await refused_to_viewer
                    assert looked.value.code == INVALID_REQUEST

            async with tasks_over_http(url, keys.by_role["approver"]) as approver:
                await update_task(approver.session, task_id, approve)
                done = await poll(approver.session, task_id, "completed")
                assert (done.result or {})["structuredContent"]["output"] == "sold 10 ACME"
        [sale] = sales(trader)
        assert sale["quantity"] == 10
    finally:
        process.terminate()
        await process.wait()
