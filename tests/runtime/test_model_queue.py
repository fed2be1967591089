"""Where model calls are dispatched: the agent's own queue until a limit is set.

On the agent's queue the server dispatches a model call eagerly (with the workflow
task's completion: 50 ms less per step); once ``smyth limits set`` puts a limit or a
weight on ``<queue>-models``, workers send model calls there, where it holds for the
whole fleet. A worker whose model calls belong to dedicated workers
(``serve_model_queue=False``) always sends them to the model queue.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from temporalio.api.enums.v1 import EventType
from temporalio.api.taskqueue.v1 import RateLimit, RateLimitConfig, TaskQueueConfig
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import Replayer, Worker

import smyth_temporal._model_queue as model_queue
from smyth_temporal import AgentClient, AgentInput, SmythPlugin
from smyth_temporal._model_queue import ModelQueueRoute, limits_configured, model_call_queue
from smyth_temporal.activities.model import ModelActivities
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from smyth_temporal.types.model import MODEL_ACTIVITY, model_task_queue
from tests.helpers.live_agents import Operator


def script() -> ScriptedModel:
    return ScriptedModel([tool_call("get_quote", symbol="ACME"), reply("Done.")] * 50)


async def model_call_queues(agents: AgentClient, workflow_id: str) -> list[str]:
    """The task queue of every model call the run scheduled, from its history."""
    history = await agents.client.get_workflow_handle(workflow_id).fetch_history()
    return [
        e.activity_task_scheduled_event_attributes.task_queue.name
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name == MODEL_ACTIVITY
    ]


async def one_run(agents: AgentClient) -> list[str]:
    """One run's model-call queues, after checking that its history replays."""
    handle = await agents.start(Operator, AgentInput(prompt="Go."))
    assert (await agents.result(handle.id)).status == "completed"
    # The queue is not part of the command's identity: a run replays whichever queue
    # its calls went to, on a worker that would choose the other one.
    history = await agents.client.get_workflow_handle(handle.id).fetch_history()
    await Replayer(workflows=[Operator], plugins=[SmythPlugin()]).replay_workflow(history)
    return await model_call_queues(agents, handle.id)


async def until_routed(agents: AgentClient, queue: str) -> list[str]:
    """Runs until one's model calls all went to ``queue`` (the worker saw the change)."""
    for _ in range(100):  # a bound on the retries, not a timing assertion
        queues = await one_run(agents)
        if set(queues) == {queue}:
            return queues
        await asyncio.sleep(0.05)
    raise AssertionError(f"model calls never went to {queue}")


async def test_model_calls_go_to_the_model_queue_only_while_a_limit_is_set(
    client: Client, agents: AgentClient, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Workers read the limits every 5 s; here often, so that a change shows quickly.
    monkeypatch.setattr(model_queue, "MODEL_LIMITS_REFRESH", timedelta(milliseconds=50))
    models = model_task_queue(task_queue)
    async with agent_worker(client, Operator, model=script(), task_queue=task_queue):
        assert await one_run(agents) == [task_queue, task_queue]  # no limit: eager
        await agents.limits.set(model_rps=50, task_queue=task_queue)
        assert await until_routed(agents, models) == [models, models]
        await agents.limits.clear(task_queue)
        await until_routed(agents, task_queue)
        # A tenant's weight alone is a config too: fairness needs the shared queue.
        await agents.limits.set(tenant_weights={"acme": 2}, task_queue=task_queue)
        await until_routed(agents, models)
        await agents.limits.clear(task_queue)


async def test_a_worker_started_under_a_limit_never_sends_a_model_call_around_it(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    # The worker reads the limits before it polls: its first run already honours them.
    await agents.limits.set(per_tenant_rps=50, task_queue=task_queue)
    async with agent_worker(client, Operator, model=script(), task_queue=task_queue):
        assert await one_run(agents) == [model_task_queue(task_queue)] * 2


async def test_dedicated_model_workers_get_the_model_calls_without_a_limit(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    plugin = SmythPlugin(model=ScriptedModel([]), serve_model_queue=False)
    agents_only = Client(client.service_client, namespace=client.namespace, plugins=[plugin])
    model_calls = ModelActivities(script()).complete
    async with (
        Worker(agents_only, task_queue=task_queue, workflows=[Operator]),
        Worker(client, task_queue=model_task_queue(task_queue), activities=[model_calls]),
    ):
        assert await one_run(agents) == [model_task_queue(task_queue)] * 2


def rate(rps: float | None) -> RateLimitConfig:
    if rps is None:
        return RateLimitConfig()
    return RateLimitConfig(rate_limit=RateLimit(requests_per_second=rps))


@given(
    queue_rps=st.none() | st.floats(0.1, 1000),
    tenant_rps=st.none() | st.floats(0.1, 1000),
    weights=st.dictionaries(st.text(min_size=1, max_size=8), st.floats(0.1, 10), max_size=3),
)
def test_any_limit_or_weight_sends_model_calls_to_the_model_queue(
    queue_rps: float | None, tenant_rps: float | None, weights: dict[str, float]
) -> None:
    config = TaskQueueConfig(
        queue_rate_limit=rate(queue_rps),
        fairness_keys_rate_limit_default=rate(tenant_rps),
        fairness_weight_overrides=weights,
    )
    limited = limits_configured(config)
    assert limited == (queue_rps is not None or tenant_rps is not None or bool(weights))
    models = model_task_queue("agents")
    chosen = model_call_queue(models, "agents", limited=limited, served=True)
    assert chosen == (models if limited else None)


def test_only_the_agents_own_model_calls_are_rerouted() -> None:
    models = model_task_queue("agents")
    assert model_call_queue(models, "agents", limited=False, served=False) == models
    # Calls an agent sends elsewhere on purpose stay where it sent them.
    assert model_call_queue(None, "agents", limited=False, served=True) is None
    assert model_call_queue("gpu", "agents", limited=False, served=True) == "gpu"
    other = model_task_queue("other")
    assert model_call_queue(other, "agents", limited=False, served=True) == other


class _Refusing:
    """A service whose ``DescribeTaskQueue`` fails with ``status`` (or another error)."""

    def __init__(self, status: RPCStatusCode | None) -> None:
        self.status = status

    async def describe_task_queue(self, *args: object, **kwargs: object) -> object:
        if self.status is None:
            raise RuntimeError("connection lost")  # what the core reports for a broken link
        raise RPCError("no", self.status, b"")


class _Client:
    namespace = "default"

    def __init__(self, status: RPCStatusCode | None) -> None:
        self.workflow_service = _Refusing(status)


async def test_a_worker_that_cannot_read_the_limits_keeps_honouring_them() -> None:
    route = ModelQueueRoute("agents", served=True)
    denied: Client = _Client(RPCStatusCode.PERMISSION_DENIED)  # type: ignore[assignment]
    await route.refresh(denied)
    assert route.queue_for(model_task_queue("agents")) == model_task_queue("agents")
    # A server that cannot hold limits has none: the agent's queue.
    old: Client = _Client(RPCStatusCode.UNIMPLEMENTED)  # type: ignore[assignment]
    await route.refresh(old)
    assert route.queue_for(model_task_queue("agents")) is None
    # Once known, a failed read keeps what was known, whatever the failure.
    await route.refresh(denied)
    lost: Client = _Client(None)  # type: ignore[assignment]
    await route.refresh(lost)
    assert route.queue_for(model_task_queue("agents")) is None
