"""``AgentClient``: start agents, look at them, wait for them."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import (
    Client,
    Plugin,
    WorkflowFailureError,
    WorkflowHandle,
)
from temporalio.common import WorkflowIDReusePolicy
from temporalio.service import RPCError, RPCStatusCode

from smyth_temporal.agent.types import AgentInput, AgentResult, AgentState
from smyth_temporal.agent.workflow import AgentWorkflow
from smyth_temporal.exceptions import (
    AgentFailedError,
    AgentNotFoundError,
    ServerUnavailableError,
    UnknownAgentError,
)
from smyth_temporal.plugin import SmythPlugin
from smyth_temporal.settings import Settings

__all__ = ["AgentClient", "AgentRef", "agent_name"]

AgentRef = type[AgentWorkflow] | str
"""An agent class, or its workflow type name (what a worker registered)."""

STATE_QUERY = "state"


def agent_name(agent: AgentRef) -> str:
    """The workflow type name of an agent class (or the name itself).

    Raises:
        UnknownAgentError: The class is not a ``@workflow.defn`` agent.
    """
    if isinstance(agent, str):
        return agent
    defn = getattr(agent, "__temporal_workflow_definition", None)
    if defn is None or not defn.name:
        raise UnknownAgentError(f"{agent.__qualname__} is not decorated with @workflow.defn")
    return str(defn.name)


class AgentClient:
    """Starts agents, queries their state and awaits their results.

    ```python
    agents = await AgentClient.connect()
    handle = await agents.start(MarketAnalyst, AgentInput(prompt="How is ACME doing?"))
    result = await agents.result(handle.id)
    ```

    Added in 0.1.0.
    """

    def __init__(self, client: Client, *, task_queue: str | None = None) -> None:
        """Wrap a Temporal client that has ``SmythPlugin`` (or the pydantic converter).

        Args:
            client: The connected Temporal client.
            task_queue: Where agents are started (default: ``Settings.load()``'s).
        """
        self.client = client
        self.task_queue = task_queue or Settings.load().task_queue

    @classmethod
    async def connect(
        cls,
        settings: Settings | None = None,
        *,
        plugins: Sequence[Plugin] = (),
    ) -> AgentClient:
        """Connect to Temporal as ``settings`` say (default: from the environment).

        Raises:
            ServerUnavailableError: Nothing answers at the address.
        """
        settings = settings or Settings.load()
        client = await connect_client(settings, plugins=[SmythPlugin(), *plugins])
        return cls(client, task_queue=settings.task_queue)

    async def start(
        self,
        agent: AgentRef,
        input: AgentInput | str,
        *,
        id: str | None = None,
        task_queue: str | None = None,
        execution_timeout: timedelta | None = None,
    ) -> WorkflowHandle[Any, AgentResult]:
        """Start an agent run.

        Args:
            agent: The agent class or its workflow type name.
            input: The task (a plain string becomes ``AgentInput(prompt=...)``).
            id: The workflow id (default: ``<agent>-<random>``). Starting a second
                run with the id of a running one fails.
            task_queue: Override the client's task queue.
            execution_timeout: Bound the whole run (default: none, agents may run for weeks).

        Returns:
            The Temporal workflow handle.
        """
        name = agent_name(agent)
        if isinstance(input, str):
            input = AgentInput(prompt=input)
        workflow_id = id or f"{name}-{uuid.uuid4().hex[:12]}"
        return await self.client.start_workflow(
            name,
            input,
            id=workflow_id,
            task_queue=task_queue or self.task_queue,
            result_type=AgentResult,
            execution_timeout=execution_timeout,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        )

    async def run(self, agent: AgentRef, input: AgentInput | str, **options: Any) -> AgentResult:
        """Start an agent run and wait for its result (see ``start`` for the options)."""
        handle = await self.start(agent, input, **options)
        return await self.result(handle.id)

    async def state(self, workflow_id: str) -> AgentState:
        """The agent's ``AgentState`` (works on finished runs too).

        Raises:
            AgentNotFoundError: No run has that workflow id.
        """
        handle = self.client.get_workflow_handle(workflow_id)
        try:
            state: AgentState = await handle.query(STATE_QUERY, result_type=AgentState)
        except RPCError as exc:
            raise _translate(exc, workflow_id) from exc
        return state

    async def result(self, workflow_id: str) -> AgentResult:
        """Wait for the run to end and return its result.

        Raises:
            AgentNotFoundError: No run has that workflow id.
            AgentFailedError: The run failed, was terminated, cancelled or timed out.
        """
        handle = self.client.get_workflow_handle(workflow_id, result_type=AgentResult)
        try:
            result: AgentResult = await handle.result()
        except WorkflowFailureError as exc:
            raise AgentFailedError(f"agent {workflow_id} failed: {exc.cause or exc}") from exc
        except RPCError as exc:
            raise _translate(exc, workflow_id) from exc
        return result

    async def workers_polling(self, task_queue: str | None = None) -> int:
        """How many workers poll the agents' task queue for workflow tasks right now."""
        response = await self.client.workflow_service.describe_task_queue(
            DescribeTaskQueueRequest(
                namespace=self.client.namespace,
                task_queue=TaskQueue(name=task_queue or self.task_queue),
                task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
            )
        )
        return len(response.pollers)


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


def _translate(exc: RPCError, workflow_id: str) -> Exception:
    if exc.status == RPCStatusCode.NOT_FOUND:
        return AgentNotFoundError(f"no agent run with workflow id {workflow_id!r}")
    if exc.status == RPCStatusCode.UNAVAILABLE:
        return ServerUnavailableError(f"the Temporal server is unavailable: {exc.message}")
    return exc
