"""Approval notifications end to end on a dev server: a signed webhook and an e-mail,
received on loopback; retried without blocking the decision; never in history."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import quote

from temporalio.client import Client, WorkflowHistory
from temporalio.worker import Worker

from smyth_temporal import AgentClient, AgentInput, SmythPlugin
from smyth_temporal.models import ModelRequest, ModelResponse
from smyth_temporal.notifications import Notifications, verify_signature
from smyth_temporal.testing import ScriptedModel, reply, tool_call
from smyth_temporal.types import NOTIFY_ACTIVITY, AgentEvent
from tests.helpers.agents import read_ledger
from tests.helpers.notify_agents import NotifyingTrader, Payer
from tests.helpers.notify_receivers import eventually, smtp_server, webhook_receiver

SECRET = "whsec-test-0123456789abcdef"
CONSOLE = "https://agents.example.com/console"
SELL = tool_call("sell", symbol="ACME", quantity=10)


def echo_tool_results(request: ModelRequest) -> ModelResponse:
    return reply(" | ".join(m.content or "" for m in request.messages if m.role == "tool"))


@asynccontextmanager
async def notifying_worker(
    client: Client, task_queue: str, notifications: Notifications
) -> AsyncIterator[None]:
    model = ScriptedModel([SELL, echo_tool_results])
    plugin = SmythPlugin(model=model, notifications=notifications)
    worker_client = Client(client.service_client, namespace=client.namespace, plugins=[plugin])
    async with Worker(worker_client, task_queue=task_queue, workflows=[NotifyingTrader]):
        yield


def recorded_bytes(history: WorkflowHistory) -> bytes:
    """Every event as stored (payloads as their raw JSON bytes, not base64)."""
    return b"".join(event.SerializeToString() for event in history.events)


def start_input(*channels: str) -> AgentInput:
    return AgentInput(prompt="Sell ACME", metadata={"notify": list(channels)})


async def pending_request_id(agents: AgentClient, workflow_id: str) -> str:
    for _ in range(400):
        state = await agents.state(workflow_id)
        if state.pending_approvals:
            return state.pending_approvals[0].id
        await asyncio.sleep(0.05)
    raise AssertionError("no request became pending")


async def notifications_done(client: Client, workflow_id: str, count: int) -> None:
    """Wait until ``count`` notification activities have closed (completed or failed)."""

    async def closed() -> int:
        history = await client.get_workflow_handle(workflow_id).fetch_history()
        notify = {
            e.event_id
            for e in history.events
            if e.HasField("activity_task_scheduled_event_attributes")
            and e.activity_task_scheduled_event_attributes.activity_type.name == NOTIFY_ACTIVITY
        }
        ends = [
            a.scheduled_event_id
            for e in history.events
            for a in (
                e.activity_task_completed_event_attributes,
                e.activity_task_failed_event_attributes,
                e.activity_task_timed_out_event_attributes,
            )
            if a.scheduled_event_id in notify
        ]
        return len(ends)

    for _ in range(400):
        if await closed() >= count:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{count} notifications never closed")


async def test_webhook_is_signed_and_carries_the_request_who_decides_and_its_link(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    with webhook_receiver() as receiver:
        notifications = Notifications.parse(
            [f"hook={receiver.url}"], webhook_secret=SECRET, console_url=CONSOLE
        )
        async with notifying_worker(client, task_queue, notifications):
            handle = await agents.start(NotifyingTrader, start_input("hook"))
            request_id = await pending_request_id(agents, handle.id)
            await eventually(lambda: bool(receiver.accepted), "the webhook was received")
            await notifications_done(client, handle.id, 1)
            await agents.approve(handle.id, request_id, by="alice")
            result = await agents.result(handle.id)
            history = await client.get_workflow_handle(handle.id).fetch_history()

    assert result.output == "sold 10 ACME"
    [delivery] = receiver.deliveries
    signature = delivery.headers["x-smyth-signature"]
    assert signature.startswith("sha256=")
    assert verify_signature(delivery.body, signature, SECRET)
    assert not verify_signature(delivery.body + b" ", signature, SECRET)
    assert not verify_signature(delivery.body, signature, "another-secret-0123456789")
    body = json.loads(delivery.body)
    assert body["event"] == "approval.requested"
    assert body["workflow_id"] == handle.id
    assert body["roles"] == ["approver", "finance"]
    request = body["request"]
    assert (request["id"], request["tool"]) == (request_id, "sell")
    assert request["arguments"] == {"symbol": "ACME", "quantity": 10}
    link = f"{CONSOLE}/#/runs/{quote(handle.id, safe='')}/approvals/{quote(request_id, safe='')}"
    assert body["console_url"] == link
    assert "Approval needed: sell" in body["text"]  # what a Slack incoming webhook shows
    assert f"<{link}|" in body["text"]
    key = f"{quote(handle.id, safe='')}/{quote(request_id, safe='')}/hook/requested"
    assert body["delivery"] == key
    delivery_id = hashlib.sha256(key.encode()).hexdigest()[:40]
    assert delivery.headers["idempotency-key"] == delivery.headers["x-smyth-delivery"]
    assert delivery.headers["idempotency-key"] == delivery_id

    # Only the channel's name is in history: not its URL, not the secret.
    recorded = recorded_bytes(history)
    assert b'"channel":"hook"' in recorded
    assert receiver.url.encode() not in recorded
    assert b"s3cr3t-path" not in recorded
    assert SECRET.encode() not in recorded


async def test_email_reaches_an_smtp_server_with_the_request_arguments_and_link(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    with smtp_server(login=("mailer", "pa55-word!")) as mailbox:
        notifications = Notifications.parse(
            ["oncall=ops@example.com,lead@example.com"],
            smtp_url=f"smtp://mailer:pa55-word%21@127.0.0.1:{mailbox.port}?from=agents@example.com",
            console_url=CONSOLE,
        )
        async with notifying_worker(client, task_queue, notifications):
            handle = await agents.start(NotifyingTrader, start_input("oncall"))
            request_id = await pending_request_id(agents, handle.id)
            await eventually(lambda: bool(mailbox.messages), "the e-mail was received")
            await notifications_done(client, handle.id, 1)
            await agents.reject(handle.id, request_id, by="ops", comment="not today")
            await agents.result(handle.id)
            history = await client.get_workflow_handle(handle.id).fetch_history()

    [message] = mailbox.messages
    assert mailbox.envelopes == [("agents@example.com", ["ops@example.com", "lead@example.com"])]
    assert mailbox.logins == [("mailer", "pa55-word!")]
    assert "Approval needed: sell" in message["Subject"]
    assert message["From"] == "agents@example.com"
    text = message.get_content()
    assert '"symbol": "ACME"' in text and '"quantity": 10' in text
    assert request_id in text and handle.id in text
    assert "approver, finance" in text
    link = f"{CONSOLE}/#/runs/{quote(handle.id, safe='')}/approvals/{quote(request_id, safe='')}"
    assert link in text
    assert message["X-Smyth-Delivery"] in message["Message-ID"]
    recorded = recorded_bytes(history)
    assert b'"channel":"oncall"' in recorded
    assert b"pa55-word" not in recorded
    assert b"ops@example.com" not in recorded


async def test_a_receiver_failing_twice_gets_the_notification_once_more_not_twice_more(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    with webhook_receiver(statuses=[503, 503]) as receiver:
        notifications = Notifications.parse([f"hook={receiver.url}"], webhook_secret=SECRET)
        async with notifying_worker(client, task_queue, notifications):
            handle = await agents.start(NotifyingTrader, start_input("hook"))
            await eventually(lambda: bool(receiver.deliveries), "a first attempt")
            # The request is there to decide while the receiver fails.
            request_id = await pending_request_id(agents, handle.id)
            await eventually(lambda: bool(receiver.accepted), "a delivery that passed")
            await notifications_done(client, handle.id, 1)
            await agents.approve(handle.id, request_id, by="alice")
            result = await agents.result(handle.id)

    assert result.output == "sold 10 ACME"
    assert [d.status for d in receiver.deliveries] == [503, 503, 200]
    # Every attempt is the same notification: same bytes, same signature, same key.
    assert len({d.body for d in receiver.deliveries}) == 1
    assert len({d.headers["x-smyth-signature"] for d in receiver.deliveries}) == 1
    assert len({d.headers["idempotency-key"] for d in receiver.deliveries}) == 1


async def test_a_failing_webhook_never_blocks_the_decision(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    with webhook_receiver(statuses=[503] * 1000) as receiver:
        notifications = Notifications.parse([f"hook={receiver.url}"], webhook_secret=SECRET)
        async with notifying_worker(client, task_queue, notifications):
            handle = await agents.start(NotifyingTrader, start_input("hook"))
            await eventually(lambda: bool(receiver.deliveries), "a first attempt")
            request_id = await pending_request_id(agents, handle.id)
            outcome = await agents.approve(handle.id, request_id, by="alice")
            result = await agents.result(handle.id)

    assert outcome is not None and outcome.request.status == "approved"
    assert result.status == "completed"
    assert result.output == "sold 10 ACME"
    assert [e["tool"] for e in read_ledger(ledger)] == ["sell"]
    assert receiver.accepted == []


async def test_a_refused_notification_is_published_and_the_request_still_waits(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    with webhook_receiver(statuses=[404]) as receiver:
        notifications = Notifications.parse([f"hook={receiver.url}"], webhook_secret=SECRET)
        async with notifying_worker(client, task_queue, notifications):
            handle = await agents.start(NotifyingTrader, start_input("hook"))
            request_id = await pending_request_id(agents, handle.id)
            await notifications_done(client, handle.id, 1)
            state = await agents.state(handle.id)
            assert [r.id for r in state.pending_approvals] == [request_id]
            await agents.approve(handle.id, request_id, by="alice")
            result = await agents.result(handle.id)
            events: list[AgentEvent] = [e async for e in agents.events(handle.id)]

    assert result.output == "sold 10 ACME"
    assert [d.status for d in receiver.deliveries] == [404]  # a 404 is not retried
    failed = {e.channel: e for e in events if e.kind == "notification_failed"}
    assert set(failed) == {"hook"}
    assert failed["hook"].request_id == request_id
    assert "404" in failed["hook"].error


async def test_a_policy_notifies_its_channels_and_each_escalation_step(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    with webhook_receiver() as receiver:
        notifications = Notifications.parse(
            [f"hook={receiver.url}", f"lead={receiver.url}"],
            webhook_secret=SECRET,
            console_url=CONSOLE,
        )
        model = ScriptedModel([tool_call("pay", amount=12_000, to="ACME"), echo_tool_results])
        plugin = SmythPlugin(model=model, notifications=notifications)
        worker_client = Client(client.service_client, namespace=client.namespace, plugins=[plugin])
        async with Worker(worker_client, task_queue=task_queue, workflows=[Payer]):
            handle = await agents.start(Payer, "Pay ACME")
            request_id = await pending_request_id(agents, handle.id)
            await eventually(lambda: len(receiver.accepted) == 2, "the request and its escalation")
            await agents.approve(handle.id, request_id, by="lee")
            result = await agents.result(handle.id)
            history = await client.get_workflow_handle(handle.id).fetch_history()

    assert result.output == "paid 12000 to ACME"
    requested, escalated = (json.loads(d.body) for d in receiver.deliveries)
    assert (requested["event"], requested["notification_channel"]) == ("approval.requested", "hook")
    assert requested["roles"] == ["finance"]
    assert requested["escalation"] is None
    assert (escalated["event"], escalated["notification_channel"]) == ("approval.escalated", "lead")
    assert (escalated["escalation"], escalated["roles"]) == (1, ["finance", "lead"])
    assert escalated["delivery"].endswith(f"/{quote(request_id, safe='')}/lead/escalated-1")
    assert "Escalated (step 1): pay still waits" in escalated["text"]
    assert requested["request"]["id"] == escalated["request"]["id"] == request_id
    assert receiver.url.encode() not in recorded_bytes(history)
