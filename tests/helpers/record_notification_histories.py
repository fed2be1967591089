"""Record the history that ``tests/notifications/test_notification_replay.py`` replays.

From the repository root::

    .venv/bin/python -m tests.helpers.record_notification_histories

``payer_notified``: ``Payer`` asks for approval of a payment under an ``ApprovalPolicy``
that notifies ``hook`` when the request is made and ``lead`` at its escalation step
(after 2 s); both webhooks are received on loopback, then the request is approved.
Re-record only on purpose (see ``tests/helpers/record_histories.py``).
"""

from __future__ import annotations

import asyncio
import os
import secrets
from pathlib import Path

from temporalio.client import Client
from temporalio.worker import Worker

from smyth_temporal import AgentClient, AgentInput, SmythPlugin, configure_logging
from smyth_temporal.notifications import Notifications
from smyth_temporal.testing import ScriptedModel, start_dev_environment, tool_call
from tests.helpers.notify_agents import Payer
from tests.helpers.notify_receivers import eventually, webhook_receiver
from tests.helpers.record_histories import tool_results

HISTORIES = Path(__file__).parents[1] / "notifications" / "histories"
SCENARIO = "payer_notified"


def workflow_id(scenario: str) -> str:
    return f"history-{scenario}"


async def record(client: Client) -> str:
    task_queue = f"smyth-histories-{SCENARIO}"
    with webhook_receiver() as receiver:
        notifications = Notifications.parse(
            [f"hook={receiver.url}", f"lead={receiver.url}"],
            webhook_secret=secrets.token_hex(16),
            console_url="https://agents.example.com/console",
        )
        model = ScriptedModel([tool_call("pay", amount=12_000, to="ACME"), tool_results])
        plugin = SmythPlugin(model=model, notifications=notifications)
        worker_client = Client(client.service_client, namespace=client.namespace, plugins=[plugin])
        agents = AgentClient(client, task_queue=task_queue)
        async with Worker(worker_client, task_queue=task_queue, workflows=[Payer]):
            handle = await agents.start(
                Payer, AgentInput(prompt="Pay ACME"), id=workflow_id(SCENARIO)
            )
            await eventually(lambda: len(receiver.accepted) == 2, "both notifications")
            # Both activities completed, so the history holds their results.
            for _ in range(400):
                description = await client.get_workflow_handle(handle.id).describe()
                if not description.raw_description.pending_activities:
                    break
                await asyncio.sleep(0.05)
            await agents.approve(handle.id, by="lee")
            result = await agents.result(handle.id)
    if result.status != "completed":
        raise RuntimeError(f"unexpected outcome: {result.status}")
    return (await handle.fetch_history()).to_json()


async def main() -> None:
    configure_logging("ERROR")
    os.environ["SMYTH_PAYLOAD_STORAGE"] = "off"  # payloads inline: the store does not ship
    env = await start_dev_environment()
    try:
        HISTORIES.mkdir(parents=True, exist_ok=True)
        text = await record(env.client)
        path = HISTORIES / f"{SCENARIO}.json"
        path.write_text(text + "\n")
        print(f"wrote {path} ({len(text):,} bytes)")
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
    os._exit(0)  # temporalio/sdk-python#300 (see tests/helpers/record_histories.py)
