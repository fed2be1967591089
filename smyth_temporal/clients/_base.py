"""What the clients share: connecting, agent names, RPC errors, workers and pickups.

``AgentClient``, ``MemoryClient`` and ``ScheduleClient`` each take a connected Temporal
client and a task queue from here; none imports another, so there are no cycles.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from temporalio.api.enums.v1 import EventType, TaskQueueType
from temporalio.api.failure.v1 import Failure
from temporalio.api.taskqueue.v1 import PollerInfo, TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client, Plugin, WorkflowHandle
from temporalio.service import RPCError, RPCStatusCode

from smyth_temporal._names import workflow_type_name
from smyth_temporal._text import one_line
from smyth_temporal.agent.workflow import AgentWorkflow
from smyth_temporal.exceptions import ClientError, ServerUnavailableError, UnknownAgentError
from smyth_temporal.settings import Settings

__all__ = [
    "PICKUP_TIMEOUT",
    "AgentRef",
    "Pickup",
    "agent_name",
    "connect_client",
    "count_pollers",
    "is_unregistered",
    "last_activity_failure",
    "one_line",
    "pollers",
    "resolve_settings",
    "rpc_error",
    "terminate_quietly",
    "watch_pickup",
]

AgentRef = type[AgentWorkflow] | str
"""An agent class, or its workflow type name (what a worker registered)."""

PICKUP_TIMEOUT = 5.0
"""Seconds to watch a new run's history for a worker to take it.

The first workflow task of a run normally completes in tens of milliseconds; within
this time a task failed because the type is not registered means no worker serves it.
"""

# Messages Temporal SDKs put in the failure of a workflow task for a type the worker
# does not have: Python ("is not registered"), Go ("unable to find workflow type"),
# Java and others ("unknown workflow type").
_UNREGISTERED_MARKERS = (
    "is not registered",
    "unable to find workflow type",
    "unknown workflow type",
)

_CLOSED_EVENTS = frozenset(
    {
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
    }
)

_FAILURE_WIDTH = 300


def agent_name(agent: AgentRef) -> str:
    """The workflow type name of an agent class (or the name itself).

    Raises:
        UnknownAgentError: The class is not a ``@workflow.defn`` agent.

    Added in 0.1.0.
    """
    if isinstance(agent, str):
        return agent
    name = workflow_type_name(agent)
    if name is None:
        raise UnknownAgentError(f"{agent.__qualname__} is not decorated with @workflow.defn")
    return name


def resolve_settings(
    target: str | Settings | None,
    *,
    namespace: str | None = None,
    task_queue: str | None = None,
    tls: bool | None = None,
    api_key: str | None = None,
) -> Settings:
    """The settings for a ``target``: ``Settings`` as given, or an address.

    An address (``"localhost:7233"``) is read like ``smyth --address``: what is not
    given comes from the environment (``TEMPORAL_NAMESPACE``, the ``temporal.toml``
    profile, ``SMYTH_TASK_QUEUE``), and ``tls``/``api_key`` override the profile's.

    Raises:
        ConfigurationError: The address (or another setting) is invalid.
    """
    if isinstance(target, Settings):
        settings = target
        if namespace is not None or task_queue is not None:
            settings = settings.model_copy(
                update={
                    "namespace": namespace or settings.namespace,
                    "task_queue": task_queue or settings.task_queue,
                }
            )
    else:
        settings = Settings.load(address=target, namespace=namespace, task_queue=task_queue)
    explicit = {"tls": tls, "api_key": api_key}
    overrides = {key: value for key, value in explicit.items() if value is not None}
    if overrides:
        settings = settings.model_copy(update={"connect": {**settings.connect, **overrides}})
    return settings


async def connect_client(settings: Settings, *, plugins: Sequence[Plugin] = ()) -> Client:
    """Connect a Temporal client, turning "nothing there" into a clear error.

    Raises:
        ServerUnavailableError: Nothing answers at ``settings.address``.
    """
    try:
        return await Client.connect(
            settings.address,
            namespace=settings.namespace,
            plugins=list(plugins),
            **settings.connect,
        )
    except RuntimeError as exc:  # the core SDK reports a refused connection this way
        raise ServerUnavailableError(
            f"no Temporal server answers at {settings.address} ({exc}); "
            "start one with `smyth dev` or set TEMPORAL_ADDRESS"
        ) from exc


def rpc_error(exc: RPCError, *, not_found: ClientError) -> Exception:
    """The client error for a refused call: ``not_found``, an unavailable server, or ``exc``.

    Args:
        exc: What the server answered.
        not_found: The error for NOT_FOUND, which means something else to each client
            (an agent run, a schedule).
    """
    if exc.status == RPCStatusCode.NOT_FOUND:
        return not_found
    if exc.status == RPCStatusCode.UNAVAILABLE:
        return ServerUnavailableError(f"the Temporal server is unavailable: {exc.message}")
    return exc


async def pollers(
    client: Client,
    task_queue: str,
    kind: TaskQueueType.ValueType = TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
) -> Sequence[PollerInfo]:
    """The workers that polled ``task_queue`` for tasks of ``kind`` recently.

    Added in 0.3.0.
    """
    response = await client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=client.namespace,
            task_queue=TaskQueue(name=task_queue),
            task_queue_type=kind,
        )
    )
    return response.pollers


async def count_pollers(client: Client, task_queue: str) -> int | None:
    """Workers polling ``task_queue`` for workflow tasks, or ``None`` when the server cannot tell.

    The time-skipping test server does not implement ``DescribeTaskQueue``; callers then
    find out from what happens to the work they hand over.
    """
    try:
        return len(await pollers(client, task_queue))
    except RPCError as exc:
        if exc.status != RPCStatusCode.UNIMPLEMENTED:
            raise
        return None


def is_unregistered(message: str) -> bool:
    """Whether a workflow task failed because the worker lacks the workflow type."""
    return any(marker in message.lower() for marker in _UNREGISTERED_MARKERS)


@dataclass
class Pickup:
    """What ``watch_pickup`` saw of a new run's first workflow task."""

    taken: bool = False
    """A worker completed a workflow task of the run (or the run ended)."""
    failures: list[str] = field(default_factory=list)
    """Messages of the workflow tasks that failed meanwhile, oldest first."""

    @property
    def unregistered(self) -> bool:
        """A worker failed a task because it does not have the workflow type."""
        return any(is_unregistered(f) for f in self.failures)


async def watch_pickup(
    handle: WorkflowHandle[Any, Any],
    *,
    timeout: float,
    final_if_unregistered: bool = True,
    first_failure: bool = False,
    on_failure: Callable[[str], None] | None = None,
) -> Pickup:
    """Watch a new run's history until a worker has handled its first workflow task.

    A worker that polls the queue but lacks the workflow type fails the task, and
    Temporal would retry it forever; this tells that apart from a slow worker.

    Args:
        handle: The run.
        timeout: Seconds to watch; the pickup is not ``taken`` when they pass.
        final_if_unregistered: Stop at the first "not registered" failure (when no
            other worker could take the retried task).
        first_failure: Stop at the first failed task, whatever its message.
        on_failure: Called with the message of each failed workflow task.

    Returns:
        Whether a worker took the run, and the failures seen.
    """
    pickup = Pickup()
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout):
            async for event in handle.fetch_history_events(wait_new_event=True):
                if (
                    event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
                    or event.event_type in _CLOSED_EVENTS
                ):
                    pickup.taken = True
                    return pickup
                if event.event_type != EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
                    continue
                failure = event.workflow_task_failed_event_attributes.failure
                message = await failure_message(handle, failure)
                pickup.failures.append(one_line(message, _FAILURE_WIDTH))
                if on_failure is not None:
                    on_failure(pickup.failures[-1])
                if first_failure or (final_if_unregistered and is_unregistered(message)):
                    return pickup
            pickup.taken = True  # the history ended: the run is closed
    return pickup


async def failure_message(handle: WorkflowHandle[Any, Any], failure: Failure) -> str:
    """A failure's message as its worker wrote it.

    With an encryption codec the message travels encoded (history says only "Encoded
    failure"); the client's data converter decodes it, as the Temporal UI needs a codec
    server to.
    """
    if not failure.HasField("encoded_attributes"):
        return failure.message
    try:
        decoded = await handle._data_converter.decode_failure(failure)
    except Exception:  # a key this client lacks: say what history says
        return failure.message
    return str(decoded)


async def last_activity_failure(handle: WorkflowHandle[Any, Any]) -> str | None:
    """The last failure of the run's pending activity, if it has been retrying."""
    try:
        description = await handle.describe()
    except RPCError:
        return None
    for activity in description.raw_description.pending_activities:
        if activity.HasField("last_failure"):
            message = await failure_message(handle, activity.last_failure)
            return one_line(message, _FAILURE_WIDTH)
    return None


async def terminate_quietly(handle: WorkflowHandle[Any, Any], reason: str) -> None:
    """Terminate a run, ignoring that it may have ended meanwhile."""
    with contextlib.suppress(RPCError):
        await handle.terminate(reason=reason)
