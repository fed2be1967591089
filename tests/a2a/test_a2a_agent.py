"""``a2a_agent``: a remote A2A agent (on another gateway) as a tool, across crashes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.helpers import get_artifact_text
from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest, TaskState
from fastapi import Request, Response
from temporalio.client import Client

from smyth_temporal import AgentClient
from smyth_temporal.a2a import a2a_agent, a2a_message_id
from smyth_temporal.exceptions import ToolDefinitionError
from smyth_temporal.gateway import create_app
from smyth_temporal.testing import ScriptedModel, agent_worker, new_task_queue, reply
from tests.helpers.a2a_agents import Caller
from tests.helpers.a2a_remote import KEY_SECRET, REMOTE_PORT
from tests.helpers.a2a_worker import caller_model
from tests.helpers.gateway_support import FAST, Keys, bearer, flag, make_keys, serving, until
from tests.helpers.live_agents import GatedModel, Operator
from tests.helpers.worker_process import WorkerProcess, start_until_ready

QUOTE = "ACME trades at 42."
TIMEOUT = 60


@pytest.fixture
def keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Keys:
    made = make_keys(tmp_path / "keys.json")
    # The caller's workers read the remote gateway's key as a secret (from the
    # environment); the remote desk belongs to the other tenant, another organisation.
    monkeypatch.setenv(KEY_SECRET, made.other)
    return made


@dataclass
class Remote:
    """The remote gateway: its agents' task queue and the A2A posts it received."""

    queue: str
    posts: list[str] = field(default_factory=list)


@asynccontextmanager
async def remote_gateway(client: Client, keys: Keys) -> AsyncIterator[Remote]:
    """``Operator`` served over A2A at ``REMOTE_PORT`` (where ``Caller``'s tool points)."""
    remote = Remote(new_task_queue("smyth-a2a-remote"))
    app = create_app(
        AgentClient(client, task_queue=remote.queue), [Operator], keys=keys.store, options=FAST
    )

    @app.middleware("http")
    async def count(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        if request.method == "POST":
            remote.posts.append(request.url.path)
        return await call_next(request)

    async with serving(app, port=REMOTE_PORT):
        yield remote


async def remote_runs(client: Client, queue: str) -> list[str]:
    query = f"WorkflowType = 'Operator' AND TaskQueue = '{queue}' AND WorkflowId STARTS_WITH 'a2a-'"
    return [run.id async for run in client.list_workflows(query)]


async def test_an_agent_on_one_gateway_asks_an_agent_on_another_over_a2a(
    client: Client, keys: Keys
) -> None:
    caller_queue = new_task_queue("smyth-a2a-caller")
    remote_model = ScriptedModel([reply(QUOTE)])
    near = create_app(AgentClient(client, task_queue=caller_queue), [Caller], keys=keys.store)
    async with (
        remote_gateway(client, keys) as remote,
        serving(near) as near_url,
        httpx.AsyncClient(headers=bearer(keys.by_role["operator"]), timeout=TIMEOUT) as http,
        agent_worker(client, Operator, model=remote_model, task_queue=remote.queue),
        agent_worker(client, Caller, model=caller_model(), task_queue=caller_queue),
    ):
        config = ClientConfig(httpx_client=http, streaming=False)
        a2a = await create_client(f"{near_url}/a2a/Caller", client_config=config)
        message = Message(message_id="ask-1", role=Role.ROLE_USER, parts=[Part(text="ACME?")])
        async with asyncio.timeout(TIMEOUT):
            [response] = [r async for r in a2a.send_message(SendMessageRequest(message=message))]
        runs = await remote_runs(client, remote.queue)

    task = response.task
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert get_artifact_text(task.artifacts[0]) == f"The remote desk says: {QUOTE}"
    assert remote.posts == ["/a2a/Operator"] and len(runs) == 1
    # The remote agent was asked what the caller's model wrote in its tool call.
    [question] = [m.content for m in remote_model.requests[0].messages if m.role == "user"]
    assert question == "Quote ACME."


async def test_a_remote_agent_as_a_tool_survives_a_sigkill_of_the_caller_without_a_second_message(
    client: Client, keys: Keys, tmp_path: Path
) -> None:
    caller_queue = new_task_queue("smyth-a2a-caller")
    # The remote agent thinks until released: the caller's worker dies while it does.
    remote_model = GatedModel([reply(QUOTE)], held={1})
    address = client.service_client.config.target_host
    workers: list[WorkerProcess] = []

    async def spawn() -> WorkerProcess:
        args = ["--address", address, "--task-queue", caller_queue]
        log = tmp_path / f"caller-{len(workers)}.log"
        worker = await start_until_ready("tests.helpers.a2a_worker", args, log=log, timeout=60)
        workers.append(worker)
        return worker

    async with (
        remote_gateway(client, keys) as remote,
        agent_worker(client, Operator, model=remote_model, task_queue=remote.queue),
    ):
        try:
            first = await spawn()
            agents = AgentClient(client, task_queue=caller_queue)
            handle = await agents.start(Caller, "What does the remote desk say about ACME?")
            await until(flag(lambda: 1 in remote_model.waiting), "the remote agent thinking", 30)
            first.kill()  # SIGKILL, mid-call: the tool activity's attempt dies with it
            await spawn()
            # The retried attempt re-sent the same message before the remote answered.
            await until(flag(lambda: len(remote.posts) == 2), "the retried call", 30)
            remote_model.release.set()
            async with asyncio.timeout(TIMEOUT):
                result = await agents.result(handle.id)
            runs = await remote_runs(client, remote.queue)
        finally:
            for worker in workers:
                await worker.stop()

    assert result.output == f"The remote desk says: {QUOTE}"
    # Two posts of one message (the same messageId), one remote task, one model call.
    assert remote.posts == ["/a2a/Operator", "/a2a/Operator"]
    assert len(runs) == 1 and remote_model.calls == 1


def test_a_calls_message_id_is_the_same_for_every_attempt_and_differs_between_calls() -> None:
    one = a2a_message_id("wf-1", "wf-1/call-1")
    assert one == a2a_message_id("wf-1", "wf-1/call-1")
    assert one != a2a_message_id("wf-1", "wf-1/call-2") != a2a_message_id("wf-2", "wf-1/call-1")
    assert "wf-1" not in one  # nothing of the caller's ids is disclosed


def test_a2a_agent_refuses_what_cannot_work() -> None:
    with pytest.raises(ToolDefinitionError, match="http"):
        a2a_agent("ftp://x", name="x", description="x")
    with pytest.raises(ToolDefinitionError, match="name"):
        a2a_agent("https://x", name="two words", description="x")
    made = a2a_agent("https://x", name="desk", description="A desk.", key_secret="DESK_KEY")
    assert (made.name, made.effect, made.local, made.secrets) == (
        "desk",
        "side_effect",
        False,
        ("DESK_KEY",),
    )
    assert list(made.schema()["function"]["parameters"]["properties"]) == ["message"]
