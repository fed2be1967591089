"""Time from the last quorum decision to the tool starting, beside a plain workflow.

From the repository root::

    .venv/bin/python -m bench.approval_policy [--rounds 20] [--json PATH]

One dev server, one worker in this process (so the client's and the tool's clocks are
the same).

- smyth: ``QuorumBench`` asks for approval of its one tool under
  ``ApprovalPolicy(quorum=2)``; ``alice`` approves (counted, still pending), then the
  clock starts and ``bob``'s approval is sent (``AgentClient.approve``: an update the
  run validates, counts and answers); it stops when the tool function starts.
- baseline: ``PlainQuorum``, a hand-written workflow that takes approvals as an update,
  counts distinct approvers and starts one activity at the second; timed the same way.

Runs alternate (one of each per round, after two untimed rounds), one at a time.
Prints p50 and p95 of each and the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
import uuid
from pathlib import Path

from temporalio import activity
from temporalio.client import Client
from temporalio.worker import Worker

from bench._policy_agents import PLAIN_RELEASE_ACTIVITY, STARTS, PlainQuorum, QuorumBench
from bench._results import percentile_rows, write_json
from smyth_temporal import AgentClient, AgentInput, SmythPlugin, configure_logging
from smyth_temporal.testing import ScriptedModel, reply, start_dev_environment, tool_call


@activity.defn(name=PLAIN_RELEASE_ACTIVITY)
async def plain_release(amount: int) -> str:
    STARTS[activity.info().workflow_id or ""] = time.time()
    return f"released {amount}"


async def started(workflow_id: str) -> float:
    for _ in range(15_000):
        found = STARTS.get(workflow_id)
        if found is not None:
            return found
        await asyncio.sleep(0.001)
    raise TimeoutError(f"the tool of {workflow_id} never started")


async def smyth_round(agents: AgentClient) -> float:
    handle = await agents.start(QuorumBench, AgentInput(prompt="release 1"))
    while not (state := await agents.state(handle.id)).pending_approvals:
        await asyncio.sleep(0.005)
    request = state.pending_approvals[0]
    await agents.approve(handle.id, request.id, by="alice")
    sent = time.time()
    await agents.approve(handle.id, request.id, by="bob")
    began = await started(handle.id)
    await agents.result(handle.id)
    return began - sent


async def plain_round(client: Client, task_queue: str) -> float:
    handle = await client.start_workflow(
        PlainQuorum.run, 1, id=f"plain-{uuid.uuid4().hex[:10]}", task_queue=task_queue
    )
    await handle.execute_update(PlainQuorum.approve, "alice")
    sent = time.time()
    await handle.execute_update(PlainQuorum.approve, "bob")
    began = await started(handle.id)
    await handle.result()
    return began - sent


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    configure_logging("warning")
    model = ScriptedModel([tool_call("release", amount=1), reply("released")])
    env = await start_dev_environment()
    async with env:
        task_queue = f"bench-quorum-{uuid.uuid4().hex[:6]}"
        plugin = SmythPlugin(model=model, payload_storage=None)
        worker_client = Client(
            env.client.service_client, namespace=env.client.namespace, plugins=[plugin]
        )
        agents = AgentClient(env.client, task_queue=task_queue)
        smyth: list[float] = []
        plain: list[float] = []
        async with Worker(
            worker_client,
            task_queue=task_queue,
            workflows=[QuorumBench, PlainQuorum],
            activities=[plain_release],
        ):
            for round_ in range(args.rounds + 2):
                one = await smyth_round(agents)
                other = await plain_round(env.client, task_queue)
                if round_ >= 2:
                    smyth.append(one)
                    plain.append(other)
    rows = percentile_rows(
        "last quorum decision to the tool starting",
        smyth,
        plain,
        "baseline: a plain workflow counting approvals from an update, then one activity",
    )
    if args.json is not None:
        write_json(args.json, "approval_policy", rows, {"smyth_s": smyth, "baseline_s": plain})


if __name__ == "__main__":
    asyncio.run(main())
    os._exit(0)  # temporalio/sdk-python#300: the interpreter may abort in its teardown
