"""A worker serving ``Caller`` (its tool: a remote A2A agent) in a process of its own.

Run from the repository root::

    .venv/bin/python -m tests.helpers.a2a_worker --address 127.0.0.1:7233 --task-queue Q

Its model asks the remote desk once, then answers with what the desk said. It prints
``READY`` once the server sees it polling, and runs until it is killed.
"""

from __future__ import annotations

import argparse
import asyncio
import uuid

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.client import Client

from smyth_temporal import configure_logging
from smyth_temporal.clients import pollers
from smyth_temporal.models import ModelRequest, ModelResponse
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from tests.helpers.a2a_agents import Caller

READY = "READY"


def relay(request: ModelRequest) -> ModelResponse:
    """The answer: what the remote desk said (the last tool result)."""
    said = [m.content for m in request.messages if m.role == "tool"]
    return reply(f"The remote desk says: {said[-1] if said else 'nothing'}")


def caller_model() -> ScriptedModel:
    """Ask the remote desk for a quote, then relay its answer."""
    return ScriptedModel([tool_call("remote_desk", message="Quote ACME."), relay])


async def _polling(client: Client, task_queue: str, identity: str) -> None:
    kinds = (TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY)
    while True:
        seen = [
            any(p.identity == identity for p in await pollers(client, task_queue, k)) for k in kinds
        ]
        if all(seen):
            return
        await asyncio.sleep(0.05)


async def serve(address: str, task_queue: str) -> None:
    client = await Client.connect(address)
    identity = f"a2a-worker-{uuid.uuid4().hex[:8]}"
    async with agent_worker(
        client, Caller, model=caller_model(), task_queue=task_queue, identity=identity
    ):
        await _polling(client, task_queue, identity)
        print(READY, flush=True)
        await asyncio.Event().wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--address", required=True)
    parser.add_argument("--task-queue", required=True)
    args = parser.parse_args()
    configure_logging("WARNING")  # on stderr: stdout carries only READY
    asyncio.run(serve(args.address, args.task_queue))


if __name__ == "__main__":
    main()
