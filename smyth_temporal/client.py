"""``AgentClient``: start agents, look at them, wait for them."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import Any, TypeVar

from pydantic import BaseModel
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import (
    Client,
    Plugin,
    WithStartWorkflowOperation,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.service import RPCError, RPCStatusCode

from smyth_temporal._memory_client import MemoryClient
from smyth_temporal._names import workflow_type_name
from smyth_temporal._schedules import ScheduleClient
from smyth_temporal.agent.workflow import AgentWorkflow
from smyth_temporal.exceptions import (
    AgentFailedError,
    AgentNotFoundError,
    InvalidDecisionError,
    InvalidMessageError,
    ServerUnavailableError,
    UnknownAgentError,
)
from smyth_temporal.plugin import SmythPlugin
from smyth_temporal.settings import Settings
from smyth_temporal.types.agent import AgentInput, AgentResult, AgentState
from smyth_temporal.types.approvals import (
    APPROVAL_SIGNAL,
    APPROVAL_UPDATE,
    ApprovalDecision,
    ApprovalOutcome,
    ApprovalRequest,
)
from smyth_temporal.types.sessions import (
    CLOSE_SESSION_SIGNAL,
    SESSION_EVENT_SIGNAL,
    SESSION_MESSAGE_UPDATE,
    SessionMessage,
    SessionReply,
    session_workflow_id,
)
from smyth_temporal.types.visibility import PENDING_APPROVALS_ATTRIBUTE, PENDING_APPROVALS_MEMO

__all__ = ["AgentClient", "AgentRef", "PendingApproval", "agent_name"]

AgentRef = type[AgentWorkflow] | str
"""An agent class, or its workflow type name (what a worker registered)."""

STATE_QUERY = "state"


class PendingApproval(BaseModel):
    """An approval request waiting for a decision, with the agent run it belongs to.

    Added in 0.1.0.
    """

    agent: str
    """The agent's workflow type name."""
    workflow_id: str
    """The agent's workflow id."""
    tenant: str
    """Whose agent it is."""
    request: ApprovalRequest
    """The request."""


def agent_name(agent: AgentRef) -> str:
    """The workflow type name of an agent class (or the name itself).

    Raises:
        UnknownAgentError: The class is not a ``@workflow.defn`` agent.
    """
    if isinstance(agent, str):
        return agent
    name = workflow_type_name(agent)
    if name is None:
        raise UnknownAgentError(f"{agent.__qualname__} is not decorated with @workflow.defn")
    return name


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

    @property
    def memory(self) -> MemoryClient:
        """Search, list, forget and undo runs in long-term memory."""
        return MemoryClient(self)

    @property
    def schedules(self) -> ScheduleClient:
        """Create, list, pause, resume, trigger and delete periodic agent runs.

        Added in 0.2.0.
        """
        return ScheduleClient(self.client, task_queue=self.task_queue)

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
        return await self._across_runs(
            workflow_id, lambda: handle.query(STATE_QUERY, result_type=AgentState)
        )

    async def signal(self, workflow_id: str, signal: str, arg: Any = None) -> None:
        """Send a signal to an agent's current run (retried across continue-as-new).

        Raises:
            AgentNotFoundError: No run has that workflow id, or it has ended.

        Added in 0.2.0.
        """
        handle = self.client.get_workflow_handle(workflow_id)
        await self._across_runs(workflow_id, lambda: handle.signal(signal, arg))

    async def update(
        self, workflow_id: str, update: str, arg: Any = None, *, result_type: type[_T]
    ) -> _T:
        """Send an update to an agent's current run and return its answer.

        An update that reaches a run as it continues as new is sent again to the next
        run, so agents that switch runs every so often answer like any other.

        Raises:
            AgentNotFoundError: No run has that workflow id, or it has ended.
            temporalio.client.WorkflowUpdateFailedError: The agent refused the update.

        Added in 0.2.0.
        """
        handle = self.client.get_workflow_handle(workflow_id)
        return await self._across_runs(
            workflow_id, lambda: handle.execute_update(update, arg, result_type=result_type)
        )

    async def send(
        self,
        agent: AgentRef,
        session_id: str,
        text: str,
        *,
        tenant: str = "default",
        sender: str | None = None,
        wait: bool = True,
    ) -> SessionReply | None:
        """Send a message to a persistent session, starting the session if need be.

        One call (update-with-start): a stateless script or web handler can talk to a
        durable session. Callers racing to start the same session create it once;
        messages are answered one at a time, in the order they arrive.

        Args:
            agent: The agent class or its workflow type name (any registered agent
                whose run method calls ``run_agent``).
            session_id: Names the session (per agent and tenant).
            text: The message.
            tenant: Whose session it is.
            sender: Who sends it (kept in the session's history).
            wait: Wait for the reply (an update, default); ``False`` posts the message
                as an event (a signal) and returns at once.

        Returns:
            The agent's reply (``None`` when ``wait`` is false).

        Raises:
            InvalidMessageError: The session refused the message; the message says why.

        Added in 0.2.0.
        """
        name = agent_name(agent)
        workflow_id = session_workflow_id(name, tenant, session_id)
        message = SessionMessage(text=text, tenant=tenant, sender=sender)
        start = AgentInput(tenant=tenant, session_id=session_id, mode="session")
        if not wait:
            await self.client.start_workflow(
                name,
                start,
                id=workflow_id,
                task_queue=self.task_queue,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
                start_signal=SESSION_EVENT_SIGNAL,
                start_signal_args=[message],
            )
            return None

        async def deliver() -> SessionReply:
            operation: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
                name,
                start,
                id=workflow_id,
                task_queue=self.task_queue,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
            )
            try:
                reply: SessionReply = await self.client.execute_update_with_start_workflow(
                    SESSION_MESSAGE_UPDATE,
                    message,
                    start_workflow_operation=operation,
                    result_type=SessionReply,
                )
            except BaseException:
                # temporalio also sets the failure on the operation's handle future,
                # which nobody awaits; read it, or asyncio reports it at exit.
                future = operation._workflow_handle
                if future.done() and not future.cancelled():
                    future.exception()
                raise
            return reply

        try:
            return await self._across_runs(workflow_id, deliver)
        except WorkflowUpdateFailedError as exc:
            raise InvalidMessageError(f"session {workflow_id}: {_refusal(exc)}") from exc

    async def close_session(
        self, agent: AgentRef, session_id: str, *, tenant: str = "default"
    ) -> None:
        """End a session once the messages already sent to it are answered.

        Added in 0.2.0.
        """
        workflow_id = session_workflow_id(agent_name(agent), tenant, session_id)
        await self.signal(workflow_id, CLOSE_SESSION_SIGNAL)

    async def _across_runs(self, workflow_id: str, call: Callable[[], Awaitable[_T]]) -> _T:
        # The server routes a call by workflow id to the run current when it arrives;
        # one that lands as that run continues as new fails with "already completed"
        # although the agent lives on in the next run: send it again, there.
        for _ in range(_SWITCH_RETRIES):
            try:
                return await call()
            except RPCError as exc:
                if not _reached_a_closed_run(exc) or not await self._has_running_run(workflow_id):
                    raise _translate(exc, workflow_id) from exc
            await asyncio.sleep(_SWITCH_RETRY_DELAY)
        raise AgentNotFoundError(f"agent {workflow_id} kept switching runs; try again")

    async def _has_running_run(self, workflow_id: str) -> bool:
        try:
            description = await self.client.get_workflow_handle(workflow_id).describe()
        except RPCError:
            return False
        # Just after the switch the id may still resolve to the run that continued.
        return description.status in (
            WorkflowExecutionStatus.RUNNING,
            WorkflowExecutionStatus.CONTINUED_AS_NEW,
        )

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

    async def decide(
        self, workflow_id: str, decision: ApprovalDecision, *, wait: bool = True
    ) -> ApprovalOutcome | None:
        """Send an approval decision to an agent.

        Args:
            workflow_id: The agent's workflow id.
            decision: The decision.
            wait: Send it as an update and wait for the agent to accept it (default);
                ``False`` sends a signal and returns at once (an invalid decision is
                then only logged by the agent).

        Returns:
            The decided request (``None`` when ``wait`` is false).

        Raises:
            InvalidDecisionError: The agent refused the decision; the message says why.
            AgentNotFoundError: No run has that workflow id.
        """
        if not wait:
            await self.signal(workflow_id, APPROVAL_SIGNAL, decision)
            return None
        try:
            return await self.update(
                workflow_id, APPROVAL_UPDATE, decision, result_type=ApprovalOutcome
            )
        except WorkflowUpdateFailedError as exc:
            raise InvalidDecisionError(_refusal(exc)) from exc

    async def approve(
        self,
        workflow_id: str,
        request_id: str | None = None,
        *,
        by: str,
        comment: str | None = None,
        arguments: dict[str, Any] | None = None,
        arguments_sha256: str | None = None,
        wait: bool = True,
    ) -> ApprovalOutcome | None:
        """Approve a pending request (the only one, when ``request_id`` is left out).

        ``arguments`` replaces the model's arguments (validated by the agent);
        ``arguments_sha256`` pins the arguments the approver saw. See ``decide``.
        """
        return await self.decide(
            workflow_id,
            ApprovalDecision(
                request_id=request_id,
                approved=True,
                by=by,
                comment=comment,
                arguments=arguments,
                arguments_sha256=arguments_sha256,
            ),
            wait=wait,
        )

    async def reject(
        self,
        workflow_id: str,
        request_id: str | None = None,
        *,
        by: str,
        comment: str | None = None,
        wait: bool = True,
    ) -> ApprovalOutcome | None:
        """Reject a pending request; the model is told who rejected it and why. See ``decide``."""
        return await self.decide(
            workflow_id,
            ApprovalDecision(request_id=request_id, approved=False, by=by, comment=comment),
            wait=wait,
        )

    async def pending_approvals(self, *, tenant: str | None = None) -> list[PendingApproval]:
        """Every pending approval request of every running agent, oldest first.

        Found through the ``SmythPendingApprovals`` search attribute and read from the
        runs' memos, so no workflow id needs to be known and no worker needs to run.

        Args:
            tenant: Only this tenant's agents.
        """
        query = f"{PENDING_APPROVALS_ATTRIBUTE.name} > 0 AND ExecutionStatus = 'Running'"
        found: list[PendingApproval] = []
        async for execution in self.client.list_workflows(query):
            published = (await execution.memo()).get(PENDING_APPROVALS_MEMO) or {}
            owner = str(published.get("tenant", "default"))
            if tenant is not None and owner != tenant:
                continue
            found += [
                PendingApproval(
                    agent=execution.workflow_type,
                    workflow_id=execution.id,
                    tenant=owner,
                    request=ApprovalRequest.model_validate(request),
                )
                for request in published.get("requests", [])
            ]
        return sorted(found, key=lambda p: p.request.requested_at)

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


_T = TypeVar("_T")

_SWITCH_RETRIES = 50
_SWITCH_RETRY_DELAY = 0.05


def _refusal(exc: WorkflowUpdateFailedError) -> str:
    """Why an agent refused an update (its validator's or handler's message)."""
    return exc.cause.message if hasattr(exc.cause, "message") else str(exc.cause)


def _reached_a_closed_run(exc: RPCError) -> bool:
    return exc.status == RPCStatusCode.NOT_FOUND and "already completed" in exc.message


def _translate(exc: RPCError, workflow_id: str) -> Exception:
    if _reached_a_closed_run(exc):
        return AgentNotFoundError(f"agent {workflow_id!r} has finished: it takes no more messages")
    if exc.status == RPCStatusCode.NOT_FOUND:
        return AgentNotFoundError(f"no agent run with workflow id {workflow_id!r}")
    if exc.status == RPCStatusCode.UNAVAILABLE:
        return ServerUnavailableError(f"the Temporal server is unavailable: {exc.message}")
    return exc
