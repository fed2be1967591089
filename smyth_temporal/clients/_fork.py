"""Fork an agent run at a step: a new run that starts from the original's state there.

Where the state comes from: the run's own history, replayed. The history of the run of
the chain that took step N is downloaded (decoded through the client's data converter,
so encrypted payloads work), and replayed with temporalio's ``Replayer`` against the
agent's class, outside the sandbox, with an interceptor that watches the commands the
agent issues. When the agent schedules the model turn of step N+1, it has finished
step N (the tool results are in the conversation): the interceptor takes
``Lifecycle.checkpoint()`` there, exactly the state continue-as-new would carry, and
ends the replay. What came after step N but before that turn is the original's, so the
state is taken before the first of it: an input arriving once step N is done, an input
that arrived while step N ran joining the conversation, a compaction's summary call. A
run that ended (or waits) right after step N is read when the replay is done. No model
is called: the replay reads the recorded results.

The fork then starts as a new workflow execution with that checkpoint in its input,
like the next run of a chain after continue-as-new, and records its parent (workflow
id, run id, step) in ``AgentInput.fork_of``, in its memo (``FORK_MEMO``) and in the
``SmythForkOf`` search attribute (the parent's workflow id).

A step taken in an earlier run of a chain (the run continued as new since) is found by
walking the chain back through each run's ``continued_execution_run_id``; a step that
a run started at is its input's checkpoint itself, with no replay.

Added in 0.9.0.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import structlog
from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle, WorkflowHistory
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.converter import DataConverter
from temporalio.runtime import LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import (
    ExecuteWorkflowInput,
    HandleSignalInput,
    HandleUpdateInput,
    Interceptor,
    Replayer,
    StartActivityInput,
    UnsandboxedWorkflowRunner,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowOutboundInterceptor,
)

from smyth_temporal._names import workflow_type_name
from smyth_temporal.agent.workflow import AgentWorkflow
from smyth_temporal.clients._base import agent_name
from smyth_temporal.clients._nondeterminism import describe_replay_failure
from smyth_temporal.exceptions import AgentNotFoundError, ForkError, UnknownAgentError
from smyth_temporal.types.agent import (
    INTERRUPT_UPDATE,
    AgentCheckpoint,
    AgentInput,
    AgentResult,
    ForkOrigin,
)
from smyth_temporal.types.messages import Message
from smyth_temporal.types.model import MODEL_ACTIVITY, ModelRequest
from smyth_temporal.types.rewind import REWIND_SIGNAL, RewindNotice
from smyth_temporal.types.sessions import SESSION_EVENT_SIGNAL, SESSION_MESSAGE_UPDATE
from smyth_temporal.types.visibility import FORK_MEMO, FORK_OF_ATTRIBUTE

__all__ = ["ForkPoint", "fork_point", "start_fork"]

log = structlog.get_logger("smyth_temporal.fork")


_RUNTIME: list[Runtime] = []


def _quiet_runtime() -> Runtime:
    # Every fork's replay ends in a "failure" (_Stop) that Core would log as a warning.
    if not _RUNTIME:
        quiet = TelemetryFilter(core_level="ERROR", other_level="ERROR")
        _RUNTIME.append(Runtime(telemetry=TelemetryConfig(logging=LoggingConfig(filter=quiet))))
    return _RUNTIME[0]


@dataclass(frozen=True)
class ForkPoint:
    """The state of a run right after one of its steps.

    Added in 0.9.0.
    """

    agent: str
    """The agent's workflow type."""
    input: AgentInput
    """The input of the run of the chain that took the step."""
    origin: ForkOrigin
    """The run and step."""
    checkpoint: AgentCheckpoint
    """The state right after the step."""


_UPDATE_COMPLETED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED

_INPUTS = {SESSION_MESSAGE_UPDATE, SESSION_EVENT_SIGNAL, INTERRUPT_UPDATE, REWIND_SIGNAL}
"""The signals and updates that add to the conversation after a step (see ``before_input``):
a rewind's notice too (its prompt, what it left to reconcile), which a run rewound to the
step took after it."""


class _Stop(Exception):
    """Ends a replay once the state is taken (the replay then reports a failure)."""


def _inline(_context: object, _payload: Payload) -> None:
    """Store no payload: every command of a replay stays inline (and is dropped)."""
    return None


def _replay_converter(converter: DataConverter) -> DataConverter:
    """``converter`` that still reads stored payloads but writes none.

    A replay's commands never reach the server, yet with a payload store every large one
    would be written to it: half the time of a 200-step replay (1.1 s to 0.55 s).
    """
    storage = converter.external_storage
    if storage is None:
        return converter
    inline = dataclasses.replace(storage, driver_selector=_inline)
    return dataclasses.replace(converter, external_storage=inline)


class _QuietStop(logging.Filter):
    """Drops temporalio's "Failed activation" warning for the replay ``_Stop`` ends."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], _Stop))


_ACTIVATIONS = logging.getLogger("temporalio.worker._workflow_instance")
_ACTIVATIONS.addFilter(_QuietStop())


class _Capture(Interceptor):
    """Takes the agent's checkpoint when it starts the model turn after ``step``."""

    def __init__(self, step: int) -> None:
        self.step = step
        self.checkpoint: AgentCheckpoint | None = None
        self.agent: AgentWorkflow | None = None
        self.running: dict[str, str] = {}
        """The session message updates being answered now, by update id: their names."""
        self.in_checkpoint: dict[str, str] = {}
        """The session message updates that were being answered when the state was taken."""
        self.before_input: AgentCheckpoint | None = None
        """The state right after ``step``, taken when the first input after it arrived
        (a session message, an interrupt): the turn after it starts with that input in
        the conversation, which belongs to the original, not to the step."""
        self.early_input = False
        self.early_notice: tuple[RewindNotice, RewindNotice | None] | None = None
        """A rewind's notice that arrived before ``step`` was finished, and the
        ``Run.rewind`` it replaced."""
        """An input arrived before ``step`` was finished (it joins the conversation later)."""

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor]:
        capture = self

        class Outbound(WorkflowOutboundInterceptor):
            def start_activity(self, input: StartActivityInput) -> workflow.ActivityHandle[Any]:
                request = input.args[0] if input.args else None
                if (
                    input.activity == MODEL_ACTIVITY
                    and isinstance(request, ModelRequest)
                    and request.purpose == "turn"
                    and request.step == capture.step + 1
                ):
                    capture.checkpoint = capture.before_input or capture.take()
                    raise _Stop
                if input.activity == MODEL_ACTIVITY and isinstance(request, ModelRequest):
                    # A compaction right before turn N+1 rewrites the conversation the
                    # step left: the fork compacts again if it needs to.
                    capture.changes()
                return super().start_activity(input)

        class Inbound(WorkflowInboundInterceptor):
            def init(self, outbound: WorkflowOutboundInterceptor) -> None:
                super().init(Outbound(outbound))

            async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
                instance = workflow.instance()
                if isinstance(instance, AgentWorkflow):
                    capture.watch(instance)
                return await super().execute_workflow(input)

            async def handle_signal(self, input: HandleSignalInput) -> None:
                notice = input.args[0] if input.args else None
                if input.signal == REWIND_SIGNAL and isinstance(notice, RewindNotice):
                    capture.notice_arrives(notice)
                elif input.signal in _INPUTS:
                    capture.input_arrives()
                return await super().handle_signal(input)

            async def handle_update_handler(self, input: HandleUpdateInput) -> Any:
                if input.update in _INPUTS:
                    capture.input_arrives()
                if input.update != SESSION_MESSAGE_UPDATE:
                    return await super().handle_update_handler(input)
                capture.running[input.id] = input.update
                try:
                    return await super().handle_update_handler(input)
                finally:
                    capture.running.pop(input.id, None)

        return Inbound

    def watch(self, agent: AgentWorkflow) -> None:
        """Replay ``agent``, seeing the user messages added to its conversation.

        An input that arrived while ``step`` still ran (a session message queued or
        steering, an interrupt) joins the conversation only once the step is done, as a
        user message: the state is kept right before the first one.
        """
        self.agent = agent
        conversation = agent.conversation
        add = conversation.add

        def add_seen(*messages: Message, message_id: str | None = None) -> None:
            if self.early_input and any(m.role == "user" for m in messages):
                self.changes()
            add(*messages, message_id=message_id)

        setattr(conversation, "add", add_seen)  # noqa: B010 (a method, shadowed)

    def input_arrives(self) -> None:
        """Keep the state now if it is the first input since ``step`` was finished.

        One that arrives before (while the step runs) is seen when it joins the
        conversation (``watch``).
        """
        if self._finished():
            self.changes()
        else:
            self.early_input = True

    def notice_arrives(self, notice: RewindNotice) -> None:
        """A rewind's notice: an input too, but one the run takes in its handler.

        The handler replaces ``Run.rewind`` at once, and the prompt joins right before
        the next turn, without a ``Conversation.add``: a notice arriving before the
        step is done (in the reset's task, with the step's last results) is undone
        from the state taken later (``take``).
        """
        if notice.to_step != self.step:
            return  # the rewind went back to another step: a change like any other
        if self._finished():
            self.changes()
        elif self.agent is not None and self.early_notice is None:
            self.early_notice = (notice, self.agent.lifecycle.checkpoint().rewind)

    def changes(self) -> None:
        """Keep the state now if ``step`` is finished and nothing changed it since."""
        if self.before_input is None and self._finished():
            self.before_input = self.take()

    def _finished(self) -> bool:
        """Whether the agent is right after ``step``: every call answered, none pending."""
        agent = self.agent
        if agent is None:
            return False
        conversation = agent.conversation
        if conversation.step != self.step or conversation.pending or agent.approvals.pending:
            return False
        answered = {m.tool_call_id for m in conversation.messages if m.role == "tool"}
        for message in reversed(conversation.messages):
            if message.role == "assistant" and message.step == self.step:
                return all(call.id in answered for call in message.tool_calls)
        return self.step == 0  # before the first turn; else the step's answer is not found

    def take(self) -> AgentCheckpoint:
        """The agent's checkpoint now, minus what belongs to the steps after ``step``."""
        agent = self.agent
        if agent is None:
            raise ForkError("the run is not an agent's (no AgentWorkflow was replayed)")
        checkpoint = agent.lifecycle.checkpoint()
        self.in_checkpoint = dict(self.running)
        # The turn being started recorded its versions already.
        versions = [v for v in checkpoint.versions if v.step <= self.step]
        update: dict[str, Any] = {"versions": versions, "generation": 1}
        if self.early_notice is not None:
            notice, update["rewind"] = self.early_notice
            update["messages"] = _without_prompt(checkpoint.messages, notice.prompt)
        return checkpoint.model_copy(update=update)


def _without_prompt(messages: list[Message], prompt: str | None) -> list[Message]:
    """``messages`` without a rewind's ``prompt``, added among the trailing user messages."""
    at = len(messages)
    while prompt and at > 0 and messages[at - 1].role == "user":
        at -= 1
        if messages[at].content == prompt:
            return messages[:at] + messages[at + 1 :]
    return messages


def agent_class(name: str) -> type[AgentWorkflow]:
    """The imported ``AgentWorkflow`` subclass whose workflow type is ``name``.

    Raises:
        UnknownAgentError: No imported class has that name.
    """
    pending: list[type[AgentWorkflow]] = [AgentWorkflow]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if cls is not AgentWorkflow and workflow_type_name(cls) == name:
            return cls
    raise UnknownAgentError(
        f"agent {name!r} is not imported here: pass its class (agent=...) or import its "
        "module (smyth fork --agent module:Class)"
    )


async def _history(client: Client, workflow_id: str, run_id: str | None) -> WorkflowHistory:
    handle = client.get_workflow_handle(workflow_id, run_id=run_id)
    try:
        return await handle.fetch_history()
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            raise AgentNotFoundError(f"no agent run {workflow_id!r}") from exc
        raise


async def _started(client: Client, history: WorkflowHistory) -> tuple[str, AgentInput, str]:
    """The run's workflow type, input, and the run it continued from (``""``: none)."""
    attributes = history.events[0].workflow_execution_started_event_attributes
    payloads = list(attributes.input.payloads)
    if not payloads:
        raise ForkError(f"run {history.run_id} of {history.workflow_id!r} has no agent input")
    (value,) = await client.data_converter.decode(payloads, [AgentInput])
    if not isinstance(value, AgentInput):
        raise ForkError(f"run {history.run_id} of {history.workflow_id!r} has no agent input")
    return attributes.workflow_type.name, value, attributes.continued_execution_run_id


async def fork_point(
    client: Client,
    workflow_id: str,
    step: int,
    *,
    agent: type[AgentWorkflow] | None = None,
) -> ForkPoint:
    """The state of ``workflow_id`` right after ``step``, from its history.

    Args:
        client: A client of the run's namespace (its data converter decodes the history).
        workflow_id: The run (its chain: every run continued as new under this id).
        step: The step; 0 is the start, before the first model turn.
        agent: The agent's class (default: the imported class of the run's type).

    Raises:
        AgentNotFoundError: No run has that workflow id.
        ForkError: The run has not taken that step, or is in the middle of it.
        UnknownAgentError: The agent's class is not known here.
    """
    if step < 0:
        raise ForkError(f"--at-step must be 0 or more, not {step}")
    run_id: str | None = None
    while True:
        history = await _history(client, workflow_id, run_id)
        name, input, previous = await _started(client, history)
        start = input.checkpoint.step if input.checkpoint is not None else 0
        if step >= start or not previous:
            break
        run_id = previous  # the step was taken in an earlier run of the chain
    origin = ForkOrigin(
        workflow_id=workflow_id, run_id=history.run_id, step=step, parent=input.fork_of
    )
    if input.checkpoint is not None and step == start:
        checkpoint = input.checkpoint.model_copy(update={"stream": None, "generation": 1})
        return ForkPoint(name, input, origin, checkpoint)
    checkpoint = await _replay(client, history, agent or agent_class(name), step)
    return ForkPoint(name, input, origin, checkpoint)


async def _replay(
    client: Client, history: WorkflowHistory, agent: type[AgentWorkflow], step: int
) -> AgentCheckpoint:
    capture = _Capture(step)
    replayer = Replayer(
        workflows=[agent],
        namespace=client.namespace,
        data_converter=_replay_converter(client.data_converter),
        interceptors=[capture],
        # Outside the sandbox: the interceptor hands the state out of the workflow.
        workflow_runner=UnsandboxedWorkflowRunner(),
        runtime=_quiet_runtime(),
    )
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    if capture.checkpoint is not None:
        _refuse_pending_updates(history, step, capture.in_checkpoint)
        return capture.checkpoint
    replayed = capture.agent
    if replayed is None:
        raise ForkError(f"{history.workflow_id!r} is not an agent run of {agent_name(agent)}")
    if result.replay_failure is not None:
        # The code no longer takes the recorded steps: its state would not be the run's.
        reason = describe_replay_failure(result.replay_failure, history)
        raise ForkError(
            f"the history of {history.workflow_id!r} does not replay with this code of "
            f"{agent_name(agent)}: {reason}"
        )
    conversation = replayed.conversation
    if conversation.step < step:
        raise ForkError(
            f"{history.workflow_id!r} has taken {conversation.step} steps; it cannot be "
            f"forked at step {step}"
        )
    if conversation.pending or replayed.approvals.pending:
        raise ForkError(
            f"step {step} of {history.workflow_id!r} has not finished (tool calls or "
            "approvals pending); fork at an earlier step"
        )
    # The run ended (or waits) right after the step: its state as the replay left it,
    # or as it was when an input came after the step.
    checkpoint = capture.before_input or capture.take()
    _refuse_pending_updates(history, step, capture.in_checkpoint)
    return checkpoint


def _refuse_pending_updates(history: WorkflowHistory, step: int, running: dict[str, str]) -> None:
    """Refuse a state that holds an update whose caller still waits on the original.

    Such an update (a session message being answered, say) was accepted before the
    state was taken and has not completed: the fork would carry its message but owe
    the answer to nobody, while the original still answers it.

    Raises:
        ForkError: An update handler running in the state has not completed.
    """
    completed = {
        event.workflow_execution_update_completed_event_attributes.meta.update_id
        for event in history.events
        if event.event_type == _UPDATE_COMPLETED
    }
    pending = sorted((name, id) for id, name in running.items() if id not in completed)
    if pending:
        name, id = pending[0]
        raise ForkError(
            f"right after step {step}, {history.workflow_id!r} holds update {name!r} "
            f"(id {id}) whose caller still waits for the original to answer it; fork at "
            "an earlier step, or once it is answered"
        )


async def start_fork(
    client: Client,
    point: ForkPoint,
    input: AgentInput,
    *,
    id: str | None,
    task_queue: str,
    prompt: str | None,
    start_tagged: Callable[
        [Callable[[TypedSearchAttributes], Awaitable[WorkflowHandle[Any, AgentResult]]]],
        Awaitable[WorkflowHandle[Any, AgentResult]],
    ],
) -> WorkflowHandle[Any, AgentResult]:
    """Start the fork of ``point`` with ``input`` (tenant and starter already settled).

    ``prompt`` joins the conversation as a user message before the fork's first turn.
    """
    checkpoint = point.checkpoint
    if prompt:
        messages = [*checkpoint.messages, Message.user(prompt)]
        checkpoint = checkpoint.model_copy(update={"messages": messages})
    input = input.model_copy(update={"checkpoint": checkpoint, "fork_of": point.origin})
    workflow_id = id or f"{point.origin.workflow_id}-fork-{uuid.uuid4().hex[:8]}"
    origin = point.origin
    memo = {FORK_MEMO: origin.model_dump(mode="json")}

    def start(tags: TypedSearchAttributes) -> Awaitable[WorkflowHandle[Any, AgentResult]]:
        return client.start_workflow(
            point.agent,
            input,
            id=workflow_id,
            task_queue=task_queue,
            result_type=AgentResult,
            memo=memo,
            search_attributes=tags,
        )

    async def start_with_parent(
        tags: TypedSearchAttributes,
    ) -> WorkflowHandle[Any, AgentResult]:
        pair = SearchAttributePair(FORK_OF_ATTRIBUTE, origin.workflow_id)
        try:
            return await start(TypedSearchAttributes([*tags.search_attributes, pair]))
        except Exception as exc:  # a namespace set up before forks: start without it
            text = exc.message if isinstance(exc, RPCError) else str(exc)
            if FORK_OF_ATTRIBUTE.name not in text or "not defined" not in text:
                raise
            log.warning("fork.attribute_missing", attribute=FORK_OF_ATTRIBUTE.name)
            return await start(tags)

    handle = await start_tagged(start_with_parent)
    log.info(
        "fork.started",
        workflow_id=workflow_id,
        parent=origin.workflow_id,
        parent_run_id=origin.run_id,
        step=origin.step,
        messages=len(checkpoint.messages),
    )
    return handle
