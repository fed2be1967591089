"""The A2A request handler over Temporal: the a2a-sdk's ``RequestHandler``, no task store.

The SDK's default handler keeps tasks in a ``TaskStore`` and runs an ``AgentExecutor``
in this process; a gateway that did so would lose its tasks on a restart and could not
run as several replicas. Here every method reads and acts on the run itself, through the
client acting for the caller's key (``AgentClient.acting_for``): ``SendMessage`` starts
a run (or finds the one the same ``messageId`` started, see ``task_id_for``) and waits
for its end or its first pending approval; ``SendStreamingMessage`` streams the run's
events as task updates; ``SubscribeToTask`` re-attaches to them (the task as it is, then
what follows); ``GetTask`` reads the run's state; ``ListTasks`` pages the caller's tasks
from Temporal's visibility (``_a2a_listing``); ``CancelTask`` interrupts the run. A
message in an ``input-required`` task carries a decision (``decision_of``). Push
notifications are not offered (the card says so; their methods answer
``PushNotificationNotSupportedError``): a client subscribes or polls instead.

Errors are A2A's: a run that is not the caller's (another tenant's, another agent's, or
none) is ``TaskNotFoundError``, whatever the reason, as the REST API answers 404.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any, NoReturn

from temporalio.client import WorkflowExecution, WorkflowExecutionStatus
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError

from smyth_temporal.clients import AgentClient
from smyth_temporal.exceptions import (
    AccessDeniedError,
    AgentFailedError,
    AgentNotFoundError,
    ClientError,
    InvalidDecisionError,
    InvalidInterruptError,
)
from smyth_temporal.gateway._a2a_listing import task_page
from smyth_temporal.gateway._a2a_tasks import (
    decision_of,
    ended_task,
    finished_task,
    listed_task,
    message_text,
    new_context_id,
    submitted_task,
    task_id_for,
    task_of,
)
from smyth_temporal.gateway._gateway import Gateway
from smyth_temporal.security import Principal
from smyth_temporal.types.agent import AgentInput, AgentResult
from smyth_temporal.types.approvals import ApprovalDecision
from smyth_temporal.types.events import (
    AgentEvent,
    ApprovalDecided,
    ApprovalRequested,
    MessageCompleted,
    RunFinished,
)

try:
    from a2a.server.context import ServerCallContext
    from a2a.server.events.event_queue import Event
    from a2a.server.request_handlers.request_handler import RequestHandler
    from a2a.types.a2a_pb2 import (
        AgentCard,
        CancelTaskRequest,
        DeleteTaskPushNotificationConfigRequest,
        GetExtendedAgentCardRequest,
        GetTaskPushNotificationConfigRequest,
        GetTaskRequest,
        ListTaskPushNotificationConfigsRequest,
        ListTaskPushNotificationConfigsResponse,
        ListTasksRequest,
        ListTasksResponse,
        Message,
        Part,
        Role,
        SendMessageRequest,
        SubscribeToTaskRequest,
        Task,
        TaskArtifactUpdateEvent,
        TaskPushNotificationConfig,
        TaskState,
        TaskStatus,
        TaskStatusUpdateEvent,
    )
    from a2a.utils.errors import (
        InternalError,
        InvalidParamsError,
        InvalidRequestError,
        PushNotificationNotSupportedError,
        TaskNotCancelableError,
        TaskNotFoundError,
        UnsupportedOperationError,
    )
except ImportError as exc:  # pragma: no cover - the a2a extra brings it
    raise ImportError(
        "the gateway's A2A endpoint needs a2a-sdk: pip install 'smyth-temporal[a2a]'"
    ) from exc

__all__ = ["AGENT_STATE", "CALLER_STATE", "TemporalTasks"]

CALLER_STATE = "smyth.caller"
"""Where the route puts the caller's ``Principal`` in the call context's state."""
AGENT_STATE = "smyth.agent"
"""Where the route puts the agent's name in the call context's state."""

_LIST_CONCURRENCY = 8
"""Tasks of one ``ListTasks`` page read at once (each is a state query a worker answers)."""

_FINAL = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
    }
)


@contextlib.contextmanager
def _a2a_errors(task_id: str) -> Iterator[None]:
    """The client's errors as A2A's (a run that is not the caller's: not found)."""
    try:
        yield
    except AgentNotFoundError:
        raise TaskNotFoundError(f"no task {task_id!r}") from None
    except AccessDeniedError as exc:  # the route checks roles first; this is the backstop
        raise InvalidRequestError(str(exc)) from None
    except InvalidDecisionError as exc:
        raise InvalidParamsError(str(exc)) from None
    except InvalidInterruptError as exc:
        raise TaskNotCancelableError(str(exc)) from None
    except ClientError as exc:
        raise InternalError(str(exc)) from None


@dataclass
class Delivered:
    """Where a message went.

    Its task (as known without asking the run), whether the message started it, the
    approval request it decided (and whether that still waits), and the check that a
    worker took the run it started (``Gateway.confirm_started``), not made yet:
    ``confirmed`` makes it.
    """

    task: Task
    started: bool = False
    decided: str | None = None
    waiting: bool = False
    """The request decided still waits (a vote of a quorum): the run cannot go on."""
    confirm: Callable[[], Awaitable[None]] | None = None

    async def confirmed(self) -> None:
        """Make the pickup check, once (``UnknownAgentError``: no worker has the agent)."""
        confirm, self.confirm = self.confirm, None
        if confirm is not None:
            await confirm()


class TemporalTasks(RequestHandler):
    """A2A's methods on agent runs, for the agent and caller the route names.

    Args:
        gateway: The gateway (its client, agents served and options).
    """

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway

    def _scope(self, context: ServerCallContext) -> tuple[AgentClient, str, Principal]:
        caller: Principal = context.state[CALLER_STATE]
        agent: str = context.state[AGENT_STATE]
        return self.gateway.acting_for(caller), agent, caller

    # -- messages --------------------------------------------------------------------

    async def on_message_send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Task | Message:
        """Start (or find, or answer) the task, and wait for its end or its next question."""
        client, agent, caller = self._scope(context)
        delivered = await self._deliver(client, agent, caller, params.message)
        history = (
            params.configuration.history_length
            if params.configuration.HasField("history_length")
            else None
        )
        if params.configuration.return_immediately or delivered.waiting:
            await delivered.confirmed()
            return (
                delivered.task
                if delivered.started
                else await self._task(client, agent, delivered.task.id, history_length=history)
            )
        result = await self._settle(client, delivered.task.id, delivered)
        if result is not None and delivered.started and history is None:
            # Just started and ended: the task is what was sent and the result, with
            # no state query (it would wait for a worker to replay the run).
            return finished_task(delivered.task, result)
        return await self._task(client, agent, delivered.task.id, history_length=history)

    async def _settle(
        self, client: AgentClient, task_id: str, delivered: Delivered | None = None
    ) -> AgentResult | None:
        """Wait for the run's result, or for it to wait for a decision (then ``None``).

        As ``reply_or_pending`` does for whole answers: following the run's events would
        cost the run a poll per read (an update, a workflow task) and the answer the
        time it takes. Instead, every ``pending_check`` seconds without the result, the
        run's state is asked: a pending approval there means the task waits for input.
        The first time, the pickup check of the run ``delivered`` started is made.
        """
        every = self.gateway.options.pending_check
        # A run this request started is the caller's by construction (its id is derived
        # from the key's tenant, and the client acting for the key started it): its
        # result is awaited without asking again whose it is (a describe, one more
        # serial call to the server, ~3-5 ms of a 80 ms task).
        waiter = self.gateway.agents if delivered is not None and delivered.started else client
        result = asyncio.ensure_future(waiter.result(task_id))
        try:
            while not result.done():
                await asyncio.wait({result}, timeout=every)
                if result.done():
                    break
                if delivered is not None:
                    await delivered.confirmed()
                if await self._waits_for_input(client, task_id, result, every):
                    return None
        finally:
            if not result.done():
                result.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await result
        with _a2a_errors(task_id), contextlib.suppress(AgentFailedError):
            return result.result()  # a failed run: its task says so (``_task``)
        return None

    @staticmethod
    async def _waits_for_input(
        client: AgentClient, task_id: str, result: asyncio.Future[AgentResult], every: float
    ) -> bool:
        """Whether the run waits for a decision, asked within ``every`` seconds.

        A state no worker gave by then (a worker restarting) or the result coming first
        is not an answer: the wait goes on, as the run does.
        """
        looked = asyncio.ensure_future(client.state(task_id, timeout=every))
        racing: set[asyncio.Future[Any]] = {result, looked}
        await asyncio.wait(racing, return_when=asyncio.FIRST_COMPLETED)
        if not looked.done():
            looked.cancel()
        try:
            state = await looked
        except (asyncio.CancelledError, ClientError):
            return False
        return bool(state.pending_approvals) and not result.done()

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        """The task, then its updates as the run goes: each answer, then its end."""
        client, agent, caller = self._scope(context)
        delivered = await self._deliver(client, agent, caller, params.message)
        await delivered.confirmed()
        task = delivered.task
        if not delivered.started:
            task = await self._task(client, agent, task.id, history_length=0)
        yield task
        if delivered.waiting:
            return  # input-required still: nothing follows until the other votes
        async for update in self._updates(
            client, agent, task, after_decision=delivered.decided, started=delivered.started
        ):
            yield update

    async def _updates(
        self,
        client: AgentClient,
        agent: str,
        task: Task,
        *,
        after_decision: str | None = None,
        started: bool = False,
        seen: int = 0,
    ) -> AsyncIterator[Event]:
        """The task's updates as its run goes: each answer, its artifacts, then its status.

        Ends when the run ends or waits for a decision (A2A closes a stream at
        ``input-required`` too). The answers of the first ``seen`` steps were shown
        already (in the task a subscriber got first): they are skipped.
        """
        task_id, context_id = task.id, task.context_id
        ended: RunFinished | None = None
        async for event in self._follow(client, task_id, after_decision=after_decision):
            message = event.message if isinstance(event, MessageCompleted) else None
            if (
                message is not None
                and message.role == "assistant"
                and message.content
                # A model step's message carries its step, across continue-as-new and
                # compaction, so what a task snapshot showed is told apart exactly.
                and (message.step or seen + 1) > seen
            ):
                update = TaskStatusUpdateEvent(task_id=task_id, context_id=context_id)
                update.status.CopyFrom(TaskStatus(state=TaskState.TASK_STATE_WORKING))
                update.status.message.CopyFrom(
                    _text_message(task_id, context_id, event.offset, message.content)
                )
                yield update
            if isinstance(event, RunFinished):
                ended = event
        final: Task | None = None
        if ended is not None and started:
            result = await self._settle(client, task_id)
            final = finished_task(task, result) if result is not None else None
        if final is None:
            final = await self._task(client, agent, task_id, history_length=0)
        for artifact in final.artifacts:
            yield TaskArtifactUpdateEvent(
                task_id=task_id, context_id=context_id, artifact=artifact, last_chunk=True
            )
        end = TaskStatusUpdateEvent(task_id=task_id, context_id=context_id)
        end.status.CopyFrom(final.status)
        yield end

    async def _deliver(
        self, client: AgentClient, agent: str, caller: Principal, message: Message
    ) -> Delivered:
        """The task ``message`` goes to, started if new (or the request it decided)."""
        if not message.message_id:
            raise InvalidParamsError("message.messageId is required")
        if message.task_id:
            decided, waiting = await self._decide(client, agent, message)
            return Delivered(Task(id=message.task_id), decided=decided, waiting=waiting)
        text = message_text(message)
        if not text.strip():
            raise InvalidParamsError("the message has no text part: send the task as text")
        task_id = task_id_for(caller.tenant, agent, message.message_id)
        served = await self.gateway.check_served(agent)
        if served is False:
            self.gateway.agent(agent)  # refused: no worker has it
        context_id = message.context_id or new_context_id()
        run = AgentInput(
            prompt=text, session_id=context_id, metadata={"a2a_message_id": message.message_id}
        )
        try:
            # The start is the deduplication: an id ever used (the same message again,
            # or twice at once) is refused by the server, with no lookup before it.
            await client.start(
                agent, run, id=task_id, id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE
            )
        except WorkflowAlreadyStartedError:
            return Delivered(Task(id=task_id))  # the same message again: the task it started
        # The pickup check watches the run's history until a worker took it: beside a
        # short run, it cost a whole answer a fifth of its time (2026-11-26, bench.a2a).
        # A result proves the pickup, so a whole answer makes the check only once the
        # result is late (``_settle``); the other answers make it before they go on.
        confirm = partial(self.gateway.confirm_started, task_id, agent) if served else None
        return Delivered(
            submitted_task(task_id, context_id, message), started=True, confirm=confirm
        )

    async def _decide(self, client: AgentClient, agent: str, message: Message) -> tuple[str, bool]:
        """Decide the request ``message`` answers; its id, and whether it still waits.

        A decision that a quorum policy counts as one vote of several leaves the
        request pending: the run does not go on until the other votes come.
        """
        task_id = message.task_id
        request_id, decision = decision_of(message)
        with _a2a_errors(task_id):
            state = await client.state(task_id, timeout=self.gateway.options.worker_timeout)
            if state.agent != agent:
                _not_found(task_id)
            if request_id is None:
                request_id = (await client.pending_request(task_id)).id
            outcome = await client.decide(
                task_id,
                ApprovalDecision(
                    request_id=request_id,
                    approved=decision.approved,
                    by="a2a",  # the client acting for the key records the key's name
                    comment=decision.comment,
                    arguments_sha256=decision.arguments_sha256,
                    arguments=decision.arguments,
                ),
                timeout=self.gateway.options.worker_timeout,
            )
        return request_id, outcome is not None and outcome.request.status == "pending"

    async def _follow(
        self, client: AgentClient, task_id: str, *, after_decision: str | None = None
    ) -> AsyncIterator[AgentEvent]:
        """The run's events until it ends or waits for a decision.

        After a decision, the events up to it are skipped (the caller saw them).
        """
        skipping = after_decision is not None
        with _a2a_errors(task_id):
            events = await client.open_events(task_id)
        try:
            async for event in events:
                if skipping:
                    if isinstance(event, ApprovalDecided) and event.request.id == after_decision:
                        skipping = False
                    continue
                yield event
                if isinstance(event, RunFinished):
                    return
                if isinstance(event, ApprovalRequested) and await self._waits(
                    client, task_id, event.request.id
                ):
                    return
        finally:
            aclose = getattr(events, "aclose", None)
            if aclose is not None:
                await aclose()

    async def _waits(self, client: AgentClient, task_id: str, request_id: str) -> bool:
        with _a2a_errors(task_id):
            state = await client.state(task_id, timeout=self.gateway.options.worker_timeout)
        return any(r.id == request_id for r in state.pending_approvals)

    # -- tasks -----------------------------------------------------------------------

    async def _task(
        self, client: AgentClient, agent: str, task_id: str, *, history_length: int | None = None
    ) -> Task:
        """The task as the run shows it now (its artifacts once it completed)."""
        task, _ = await self._read(client, agent, task_id, history_length=history_length)
        return task

    async def _read(
        self, client: AgentClient, agent: str, task_id: str, *, history_length: int | None = None
    ) -> tuple[Task, int]:
        """The task as the run shows it now, and the steps it shows (0: no state read)."""
        with _a2a_errors(task_id):
            status = await client.status(task_id)
            if status is None:
                _not_found(task_id)
            ended = ended_task(task_id, status, f"the run ended: {status.name.lower()}")
            if ended is not None:
                # Failed or terminated before the agent wrote its end: no state to read.
                return ended, 0
            state = await client.state(task_id, timeout=self.gateway.options.worker_timeout)
            if state.agent != agent:
                _not_found(task_id)
            result: AgentResult | None = None
            if status == WorkflowExecutionStatus.COMPLETED:
                with contextlib.suppress(AgentFailedError):
                    result = await client.result(task_id)
        return task_of(state, result, history_length=history_length), state.step

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        """The task: its state, history (``historyLength``) and artifacts."""
        client, agent, _ = self._scope(context)
        history = params.history_length if params.HasField("history_length") else None
        return await self._task(client, agent, params.id, history_length=history)

    async def on_cancel_task(
        self, params: CancelTaskRequest, context: ServerCallContext
    ) -> Task | None:
        """Interrupt the run (a pending approval is withdrawn); the task once it ended."""
        client, agent, _ = self._scope(context)
        task = await self._task(client, agent, params.id)
        if task.status.state in _FINAL:
            raise TaskNotCancelableError(f"task {params.id!r} has ended")
        with _a2a_errors(params.id):
            await client.interrupt(params.id, reason="canceled over A2A")
        async for _ in self._follow(client, params.id):
            pass
        return await self._task(client, agent, params.id)

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        """The task as it is now, then its updates until it ends or waits for input.

        A client that lost its stream (or never had one) re-attaches to the run: the
        answers the task already shows are not sent again. An ended task has nothing
        more to stream (A2A's ``UnsupportedOperationError``; ``GetTask`` reads it).
        """
        client, agent, _ = self._scope(context)
        task, seen = await self._read(client, agent, params.id)
        if task.status.state in _FINAL:
            state = TaskState.Name(task.status.state)
            raise UnsupportedOperationError(
                f"task {params.id!r} has ended ({state}): nothing to subscribe to; GetTask reads it"
            )
        yield task
        if task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            return  # the stream closes at input-required; a decision's stream goes on
        async for update in self._updates(client, agent, task, seen=seen):
            yield update

    async def on_list_tasks(
        self, params: ListTasksRequest, context: ServerCallContext
    ) -> ListTasksResponse:
        """The caller's tasks of this agent, newest first, a page at a time (``task_page``)."""
        client, agent, _ = self._scope(context)
        page = await task_page(client, agent, params)
        history = params.history_length if params.HasField("history_length") else None
        slots = asyncio.Semaphore(_LIST_CONCURRENCY)

        async def read(run: WorkflowExecution) -> Task | None:
            async with slots:
                try:
                    return await self._task(client, agent, run.id, history_length=history)
                except TaskNotFoundError:
                    return None  # gone since it was listed
                except InternalError as exc:
                    # No worker answered: the task as the listing shows it, not no list.
                    return listed_task(run.id, run.status, str(exc))

        tasks = [t for t in await asyncio.gather(*(read(r) for r in page.runs)) if t is not None]
        wanted = [
            task
            for task in tasks
            if (not params.context_id or task.context_id == params.context_id)
            and (not params.status or task.status.state == params.status)
        ]
        for task in wanted:
            if not params.include_artifacts:
                task.ClearField("artifacts")
        return ListTasksResponse(
            tasks=wanted,
            next_page_token=page.next_page_token,
            page_size=page.page_size,
            total_size=len(wanted),
        )

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        """Not offered: the public card is the whole card."""
        raise UnsupportedOperationError("no extended agent card")

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        """Push notifications are not offered."""
        _no_push()

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        """Push notifications are not offered."""
        _no_push()

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        """Push notifications are not offered."""
        _no_push()

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        """Push notifications are not offered."""
        _no_push()


def _text_message(task_id: str, context_id: str, offset: int, text: str) -> Message:
    return Message(
        message_id=f"{task_id}-{offset}",
        role=Role.ROLE_AGENT,
        task_id=task_id,
        context_id=context_id,
        parts=[Part(text=text)],
    )


def _not_found(task_id: str) -> NoReturn:
    raise TaskNotFoundError(f"no task {task_id!r}")


def _no_push() -> NoReturn:
    raise PushNotificationNotSupportedError("push notifications are not offered")
