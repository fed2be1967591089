"""Time from an approval request to its webhook being received, beside a plain workflow.

From the repository root::

    .venv/bin/python -m bench.notifications [--rounds 20] [--json PATH]

One dev server, one worker in this process, a webhook receiver on loopback.

- smyth: ``NotifyBench`` asks for approval of its one tool, whose ``ApprovalPolicy``
  notifies ``hook``: the request starts the ``smyth.notify.approval`` activity, which
  posts the signed webhook. Latency: the receiver's clock at arrival less the request's
  ``requested_at`` (workflow time: the start of the workflow task that made it).
- baseline: ``PlainNotify``, a hand-written workflow that, on a signal (a later
  workflow task, as the agent's request is: the first one also builds the workflow),
  starts one activity posting a signed webhook of the same kind. Latency: arrival less
  ``workflow.now()`` of the workflow task that started the activity.

Runs alternate (one of each per round, after two untimed rounds), one at a time, and
each is terminated once its webhook arrived. Prints p50 and p95 of each and the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import json
import os
import secrets
import threading
import time
import uuid
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
from temporalio import activity
from temporalio.client import Client
from temporalio.worker import Worker

from bench._notify_agents import PLAIN_NOTIFY_ACTIVITY, NotifyBench, PlainNotify
from bench._results import percentile_rows, write_json
from smyth_temporal import AgentClient, AgentInput, SmythPlugin, configure_logging
from smyth_temporal.notifications import Notifications
from smyth_temporal.testing import ScriptedModel, start_dev_environment, tool_call

SECRET = secrets.token_hex(32)


class Receiver:
    """A webhook endpoint on loopback that notes when each body arrived."""

    def __init__(self) -> None:
        self.arrivals: dict[str, tuple[float, dict[str, Any]]] = {}
        self.changed = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                arrived = time.time()
                data = json.loads(body)
                with receiver.changed:
                    receiver.arrivals[data["workflow_id"]] = (arrived, data)
                    receiver.changed.notify_all()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    async def arrival(self, workflow_id: str) -> tuple[float, dict[str, Any]]:
        for _ in range(6000):
            found = self.arrivals.get(workflow_id)
            if found is not None:
                return found
            await asyncio.sleep(0.002)
        raise TimeoutError(f"no webhook for {workflow_id}")


def make_plain_notify(url: str) -> Any:
    client = httpx.AsyncClient()

    @activity.defn(name=PLAIN_NOTIFY_ACTIVITY)
    async def plain_notify(body: dict[str, Any]) -> None:
        raw = json.dumps(body, separators=(",", ":")).encode()
        signature = "sha256=" + hmac.new(SECRET.encode(), raw, hashlib.sha256).hexdigest()
        response = await client.post(
            url,
            content=raw,
            headers={"Content-Type": "application/json", "X-Smyth-Signature": signature},
        )
        response.raise_for_status()

    return plain_notify


async def smyth_round(agents: AgentClient, receiver: Receiver, started: list[Any]) -> float:
    handle = await agents.start(NotifyBench, AgentInput(prompt="move 1"))
    started.append(handle)
    arrived, body = await receiver.arrival(handle.id)
    return arrived - datetime.fromisoformat(body["request"]["requested_at"]).timestamp()


async def plain_round(
    client: Client, task_queue: str, receiver: Receiver, started: list[Any]
) -> float:
    handle = await client.start_workflow(
        PlainNotify.run, id=f"plain-{uuid.uuid4().hex[:10]}", task_queue=task_queue
    )
    started.append(handle)
    await handle.signal(PlainNotify.request, "transfer")
    arrived, body = await receiver.arrival(handle.id)
    return arrived - datetime.fromisoformat(body["requested_at"]).timestamp()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    configure_logging("warning")
    receiver = Receiver()
    notifications = Notifications.parse([f"hook={receiver.url}"], webhook_secret=SECRET)
    model = ScriptedModel([tool_call("transfer", amount=1)])
    env = await start_dev_environment()
    async with env:
        task_queue = f"bench-notify-{uuid.uuid4().hex[:6]}"
        plugin = SmythPlugin(model=model, notifications=notifications, payload_storage=None)
        worker_client = Client(
            env.client.service_client, namespace=env.client.namespace, plugins=[plugin]
        )
        agents = AgentClient(env.client, task_queue=task_queue)
        smyth: list[float] = []
        plain: list[float] = []
        started: list[Any] = []
        async with Worker(
            worker_client,
            task_queue=task_queue,
            workflows=[NotifyBench, PlainNotify],
            activities=[make_plain_notify(receiver.url)],
        ):
            for round_ in range(args.rounds + 2):
                one = await smyth_round(agents, receiver, started)
                other = await plain_round(env.client, task_queue, receiver, started)
                if round_ >= 2:
                    smyth.append(one)
                    plain.append(other)
            # Ended only now: each run waits, as a run waiting for a decision does; and
            # once its notification's activity has completed.
            for handle in started:
                for _ in range(500):
                    description = await handle.describe()
                    if not description.raw_description.pending_activities:
                        break
                    await asyncio.sleep(0.01)
            await asyncio.gather(*(handle.terminate("bench") for handle in started))
    receiver.server.shutdown()
    rows = percentile_rows(
        "approval request to webhook received",
        smyth,
        plain,
        "baseline: a plain workflow starting one activity that posts the webhook",
    )
    if args.json is not None:
        write_json(args.json, "notifications", rows, {"smyth_s": smyth, "baseline_s": plain})


if __name__ == "__main__":
    asyncio.run(main())
    os._exit(0)  # temporalio/sdk-python#300: the interpreter may abort in its teardown
