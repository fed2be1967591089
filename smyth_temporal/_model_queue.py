"""Where a worker's agents send their model calls: their own task queue until limits are set.

An activity on the workflow's own task queue is dispatched eagerly: the server hands it
back with the workflow task's completion, and the worker runs it at once. One on
another queue waits to be matched to a poller. Measured (``bench.step_latency``, one
dev server, interleaved): a step took 150 ms with the model call on ``<queue>-models``
against 100 ms on the agent's queue and 100 ms for a hand-written temporalio loop; the
model activity took 37 ms from scheduled to completed instead of 5.5 ms.

So an agent worker (``SmythPlugin``) watches the task-queue config of its model queue
(what ``smyth limits set`` writes) and, while no limit or weight is set there, an
outbound workflow interceptor sends model calls to the agent's own queue. Once a limit
or a tenant weight is set, calls go to ``<queue>-models``, where the server's rate
limit and fairness hold for the whole fleet. Workers read the config when they start
and every ``MODEL_LIMITS_REFRESH`` after that; a change reaches every worker within
that time.

Deterministic enough for workflow code: the task queue is not part of an activity
command's identity when a history is replayed (runs recorded before model calls had
their own queue replay unchanged, and so do runs recorded either way here), nothing in
the run reads it, and the interceptor only reads a flag this process holds.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import structlog
import temporalio.worker
from temporalio import workflow
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue, TaskQueueConfig
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from smyth_temporal.types.model import MODEL_ACTIVITY, model_task_queue

__all__ = [
    "MODEL_LIMITS_REFRESH",
    "ModelQueueInterceptor",
    "ModelQueueRoute",
    "limits_configured",
    "model_call_queue",
    "read_model_queue_config",
]

log = structlog.get_logger("smyth_temporal.worker")

MODEL_LIMITS_REFRESH = timedelta(seconds=5)
"""How often an agent worker reads its model queue's limits (one ``DescribeTaskQueue``)."""

_READ_TIMEOUT = timedelta(seconds=5)


def limits_configured(config: TaskQueueConfig) -> bool:
    """Whether a model queue's config limits or weighs anything (``smyth limits set``)."""
    rates = (config.queue_rate_limit, config.fairness_keys_rate_limit_default)
    return any(rate.HasField("rate_limit") for rate in rates) or bool(
        config.fairness_weight_overrides
    )


def model_call_queue(
    scheduled: str | None, agent_queue: str, *, limited: bool, served: bool
) -> str | None:
    """The task queue a model call scheduled for ``scheduled`` goes to.

    Args:
        scheduled: The queue the agent asked for (``None``: its own).
        agent_queue: The agent's (the workflow's) task queue.
        limited: The model queue has a limit or a weight set (or nobody knows).
        served: This worker polls the model queue itself (``serve_model_queue``); if
            not, model calls belong to dedicated workers, whatever the limits.

    Returns:
        ``None`` (the agent's own queue, eagerly dispatched) or the queue asked for.
    """
    if scheduled != model_task_queue(agent_queue) or limited or not served:
        return scheduled
    return None


async def read_model_queue_config(client: Client, task_queue: str) -> TaskQueueConfig:
    """The config the server holds for ``task_queue``'s activities (its limits, weights)."""
    response = await client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=client.namespace,
            task_queue=TaskQueue(name=task_queue),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
            report_config=True,
        ),
        timeout=_READ_TIMEOUT,
    )
    return response.config


class ModelQueueRoute:
    """What one agent worker knows of its model queue's limits.

    ``limited`` starts true (calls go where the limits would hold) until the config
    has been read; a failed read keeps what was known.
    """

    def __init__(self, agent_queue: str, *, served: bool) -> None:
        self.agent_queue = agent_queue
        self.served = served
        self.limited = True
        self._settled = False

    def queue_for(self, scheduled: str | None) -> str | None:
        """The queue for a model call the agent scheduled for ``scheduled``."""
        return model_call_queue(
            scheduled, self.agent_queue, limited=self.limited, served=self.served
        )

    async def refresh(self, client: Client) -> None:
        """Read the model queue's config once; log when the answer changes."""
        queue = model_task_queue(self.agent_queue)
        try:
            limited = limits_configured(await read_model_queue_config(client, queue))
        except RPCError as exc:
            if exc.status != RPCStatusCode.UNIMPLEMENTED:
                log.warning("model_queue.unread", task_queue=queue, error=exc.message)
                return
            limited = False  # this server cannot hold limits: there are none
        except Exception as exc:  # a watcher that dies would leave the route stale
            log.warning("model_queue.unread", task_queue=queue, error=repr(exc))
            return
        if limited != self.limited or not self._settled:
            log.info("model_queue.routed", task_queue=queue, limited=limited)
        self.limited, self._settled = limited, True

    async def watch(self, client: Client) -> None:
        """Refresh every ``MODEL_LIMITS_REFRESH``, until cancelled."""
        while True:
            await asyncio.sleep(MODEL_LIMITS_REFRESH.total_seconds())
            await self.refresh(client)


class ModelQueueInterceptor(temporalio.worker.Interceptor):
    """Sends agents' model calls to the queue ``route`` chooses (see the module).

    Added in 0.8.0.
    """

    def __init__(self, route: ModelQueueRoute) -> None:
        self.route = route
        self._inbound = _inbound_class(route)

    def workflow_interceptor_class(
        self, input: temporalio.worker.WorkflowInterceptorClassInput
    ) -> type[temporalio.worker.WorkflowInboundInterceptor]:
        """The same class for every run: it only wraps the outbound side."""
        return self._inbound


def _inbound_class(route: ModelQueueRoute) -> type[temporalio.worker.WorkflowInboundInterceptor]:
    class _Inbound(temporalio.worker.WorkflowInboundInterceptor):
        def init(self, outbound: temporalio.worker.WorkflowOutboundInterceptor) -> None:
            super().init(_Outbound(outbound, route))

    return _Inbound


class _Outbound(temporalio.worker.WorkflowOutboundInterceptor):
    def __init__(
        self, next: temporalio.worker.WorkflowOutboundInterceptor, route: ModelQueueRoute
    ) -> None:
        super().__init__(next)
        self._route = route

    def start_activity(
        self, input: temporalio.worker.StartActivityInput
    ) -> workflow.ActivityHandle[Any]:
        if input.activity == MODEL_ACTIVITY and input.task_queue is not None:
            input.task_queue = self._route.queue_for(input.task_queue)
        return super().start_activity(input)
