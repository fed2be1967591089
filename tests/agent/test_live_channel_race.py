"""A live channel's end raced by a late signal: readers still get every delta.

The channel (``smyth.live``) completes in the workflow task that takes its close: that
task also answers the readers' waiting polls with the last batch. A signal that comes
while the task runs (a second close: the model call and the reader both close it) makes
the server refuse the completion (``UNHANDLED_COMMAND``), and the polls the task
answered fail with "unexpected workflow task failure" though the channel lives on. A
reader that stopped there lost the message's end without a word (issue 23 item 18).

The tests order it on a real server: with no worker running, the last batch, the
close and the reader's next poll wait for one workflow task; the worker that then
takes it holds the activation until one more close is in.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from structlog.testing import capture_logs
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import UpdateWorkflowExecutionLifecycleStage
from temporalio.api.update.v1 import UpdateRef, WaitPolicy
from temporalio.api.workflowservice.v1 import PollWorkflowExecutionUpdateRequest
from temporalio.bridge.proto.workflow_activation import WorkflowActivation
from temporalio.bridge.proto.workflow_completion import WorkflowActivationCompletion
from temporalio.client import Client, Interceptor, OutboundInterceptor, StartWorkflowUpdateInput
from temporalio.contrib.workflow_streams import WorkflowStreamClient
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import (
    UnsandboxedWorkflowRunner,
    Worker,
    WorkflowInstance,
    WorkflowInstanceDetails,
    WorkflowRunner,
)

from smyth_temporal._live import close_channel
from smyth_temporal.activities._stream import DeltaPublisher
from smyth_temporal.agent.live import LiveChannel
from smyth_temporal.clients import _events
from smyth_temporal.types import (
    AgentEvent,
    MessageCompleted,
    TextAssembler,
    TextDelta,
    TextReset,
    TurnFinished,
)
from smyth_temporal.types.events import parse_event
from smyth_temporal.types.live import (
    LIVE_CLOSE_SIGNAL,
    LiveChannelInput,
    LiveTarget,
    live_workflow_id,
)
from smyth_temporal.types.messages import Message

HELD = 1.5
"""The longest the worker holds an activation (the test releases it within a few
signals; the worker's deadlock detection would fail a task held 2 s)."""


class Gate:
    """Holds the first activation ``matches`` picks until the test opens it."""

    def __init__(self, matches: Callable[[WorkflowActivation], bool]) -> None:
        self.matches = matches
        self.entered = threading.Event()
        self.opened = threading.Event()

    def hold(self, activation: WorkflowActivation) -> None:
        if not self.entered.is_set() and self.matches(activation):
            self.entered.set()
            self.opened.wait(HELD)

    async def wait_entered(self) -> None:
        assert await asyncio.to_thread(self.entered.wait, HELD), "the activation never came"


class _Held(WorkflowInstance):
    def __init__(self, inner: WorkflowInstance, gates: list[Gate]) -> None:
        self._inner = inner
        self._gates = gates

    def activate(self, act: WorkflowActivation) -> WorkflowActivationCompletion:
        for gate in self._gates:
            gate.hold(act)  # on the worker's activation thread, not its event loop
        return self._inner.activate(act)

    def get_serialization_context(self, command_info: Any) -> Any:
        return self._inner.get_serialization_context(command_info)

    def get_external_store_context(self, command_info: Any) -> Any:
        return self._inner.get_external_store_context(command_info)

    def get_info(self) -> Any:
        return self._inner.get_info()

    def get_thread_id(self) -> int | None:
        return self._inner.get_thread_id()


class HeldRunner(WorkflowRunner):
    """Runs workflows unsandboxed, holding the activations its gates pick."""

    def __init__(self, *gates: Gate) -> None:
        self._inner = UnsandboxedWorkflowRunner()
        self._gates = list(gates)

    def prepare_workflow(self, defn: Any) -> None:
        self._inner.prepare_workflow(defn)

    def create_instance(self, det: WorkflowInstanceDetails) -> WorkflowInstance:
        return _Held(self._inner.create_instance(det), self._gates)


def takes_close_and_poll(activation: WorkflowActivation) -> bool:
    """Whether the activation brings the channel's close and a reader's poll together."""
    closes = any(
        job.HasField("signal_workflow") and job.signal_workflow.signal_name == LIVE_CLOSE_SIGNAL
        for job in activation.jobs
    )
    return closes and any(job.HasField("do_update") for job in activation.jobs)


MESSAGE_ID = "run-1/2"
FIRST, LAST = "ACME trades at 101.5; nothing ", "to do."


class HeldPolls(Interceptor, OutboundInterceptor):
    """Holds the reader's polls after the first until the test lets one go."""

    def __init__(self) -> None:
        self.go = asyncio.Event()
        self.polls = 0
        self.last_id = ""

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        self.next = next
        return self

    async def start_workflow_update(self, input: StartWorkflowUpdateInput) -> Any:
        self.polls += 1
        if self.polls > 1:
            await self.go.wait()
            input.update_id = self.last_id = input.update_id or str(uuid.uuid4())
        return await self.next.start_workflow_update(input)

    async def admitted(self, client: Client, workflow_id: str) -> None:
        """Wait until the server holds the poll let go (no worker has taken it yet)."""
        while not self.last_id:
            await asyncio.sleep(0.01)
        ref = UpdateRef(
            workflow_execution=WorkflowExecution(workflow_id=workflow_id), update_id=self.last_id
        )
        request = PollWorkflowExecutionUpdateRequest(
            namespace=client.namespace,
            update_ref=ref,
            wait_policy=WaitPolicy(
                lifecycle_stage=UpdateWorkflowExecutionLifecycleStage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_ADMITTED
            ),
        )
        while True:
            try:
                await client.workflow_service.poll_workflow_execution_update(request)
                return
            except RPCError as exc:
                if exc.status != RPCStatusCode.NOT_FOUND:
                    raise
            await asyncio.sleep(0.02)


def reader_client(client: Client, polls: HeldPolls) -> Client:
    config = client.config()
    config["interceptors"] = [*config["interceptors"], polls]
    return Client(**config)


async def race_the_close(
    client: Client, task_queue: str, *, message: bool = False
) -> list[AgentEvent]:
    """Stream FIRST, then LAST and the close into a workflow task a late close fails.

    Returns what a feed's follower of the channel handed on when the turn ended: by
    its message (``message``; the follower reads the rest at once), or otherwise (an
    interrupt, say: it reads the channel to its end).
    """
    target = LiveTarget(
        workflow_id=live_workflow_id(f"agent-{task_queue}", MESSAGE_ID), task_queue=task_queue
    )
    events: list[AgentEvent] = []
    first_read = asyncio.Event()

    def add(data: object) -> None:
        events.append(parse_event(data))
        first_read.set()

    polls = HeldPolls()
    follower = _events._LiveChannel(
        reader_client(client, polls),
        target,
        LiveChannelInput(agent_workflow_id=f"agent-{task_queue}", message_id=MESSAGE_ID),
        add,
    )
    deltas = DeltaPublisher(
        WorkflowStreamClient.create(client, target.workflow_id),
        message_id=MESSAGE_ID,
        step=2,
        attempt=1,
    )
    async with Worker(client, task_queue=task_queue, workflows=[LiveChannel]):
        deltas.add(FIRST)  # the reader starts the channel; the batch goes once it is there
        await deltas.flush()
        while deltas.unread:
            await asyncio.sleep(0.05)
            await deltas.flush()
        await asyncio.wait_for(first_read.wait(), 30)

    # No worker: the last batch, the close and the reader's next poll wait together,
    # for one workflow task, as they do when the reader polls just as the call ends.
    deltas.add(LAST)
    await deltas.flush()
    await close_channel(client, target.workflow_id)
    polls.go.set()
    await polls.admitted(client, target.workflow_id)

    # That task ends the channel; a second close (the reader's, say) comes meanwhile.
    close = Gate(takes_close_and_poll)
    said = Message(role="assistant", content=FIRST + LAST, step=2)
    end: AgentEvent = (
        MessageCompleted(message=said, message_id=MESSAGE_ID, step=2)
        if message
        else TurnFinished(message_id=MESSAGE_ID, step=2)
    )
    async with Worker(
        client, task_queue=task_queue, workflows=[LiveChannel], workflow_runner=HeldRunner(close)
    ):
        await close.wait_entered()
        await close_channel(client, target.workflow_id)
        close.opened.set()
        await follower.finish(end)
    history = await client.get_workflow_handle(target.workflow_id).fetch_history()
    failed = [e for e in history.events if e.HasField("workflow_task_failed_event_attributes")]
    assert failed, "the race did not happen: no workflow task of the channel failed"
    return events


def text(events: list[AgentEvent]) -> str:
    assembler = TextAssembler()
    for event in events:
        assembler.add(event)
    return assembler.text(MESSAGE_ID)


async def test_a_reader_gets_the_last_batch_when_a_late_close_fails_the_channels_end(
    client: Client, task_queue: str
) -> None:
    with capture_logs() as logs:
        events = await race_the_close(client, task_queue)
    assert text(events) == FIRST + LAST
    # Read on from where it was: every delta once, no reset needed.
    assert [e.text for e in events if isinstance(e, TextDelta)] == [FIRST, LAST]
    assert not [e for e in events if isinstance(e, TextReset)]
    assert "events.live_retried" in [log["event"] for log in logs]


async def test_a_message_reads_the_channels_rest_at_once_without_waiting_for_its_end(
    client: Client, task_queue: str
) -> None:
    # The message is in, so every batch is in the channel: one read takes the rest,
    # and the poll the late close fails is not waited for (nor read again).
    with capture_logs() as logs:
        events = await race_the_close(client, task_queue, message=True)
    assert [e.text for e in events if isinstance(e, TextDelta)] == [FIRST, LAST]
    assert not [e for e in events if isinstance(e, TextReset)]
    assert "events.live_retried" not in [log["event"] for log in logs]


async def test_a_reader_that_loses_the_channel_gets_the_whole_message_after_a_reset(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_events, "_LIVE_RETRIES", 0)  # the read is lost for good

    async def unread(self: _events._LiveChannel) -> bool:
        return False  # and the rest cannot be read at once either (no worker answers)

    monkeypatch.setattr(_events._LiveChannel, "_drained", unread)
    with capture_logs() as logs:
        events = await race_the_close(client, task_queue, message=True)
    # Never cut short in silence: the text so far is void, then the whole message.
    assert [e.kind for e in events] == ["text_delta", "text_reset", "text_delta"]
    assert text(events) == FIRST + LAST
    assert "events.live_retold" in [log["event"] for log in logs]


async def test_a_batch_the_model_call_could_not_send_is_told_again_after_a_reset(
    client: Client, task_queue: str
) -> None:
    # The channel is read to its end, but the model call's last batch never reached it
    # (its flush failed: the publisher logs that and goes on, deltas being a view).
    target = LiveTarget(
        workflow_id=live_workflow_id(f"agent-{task_queue}", MESSAGE_ID), task_queue=task_queue
    )
    events: list[AgentEvent] = []
    read = asyncio.Event()

    def add(data: object) -> None:
        events.append(parse_event(data))
        read.set()

    follower = _events._LiveChannel(
        client,
        target,
        LiveChannelInput(agent_workflow_id=f"agent-{task_queue}", message_id=MESSAGE_ID),
        add,
    )
    deltas = DeltaPublisher(
        WorkflowStreamClient.create(client, target.workflow_id),
        message_id=MESSAGE_ID,
        step=2,
        attempt=1,
    )
    message = Message(role="assistant", content=FIRST + LAST, step=2)
    async with Worker(client, task_queue=task_queue, workflows=[LiveChannel]):
        deltas.add(FIRST)
        await deltas.flush()
        while deltas.unread:
            await asyncio.sleep(0.05)
            await deltas.flush()
        await asyncio.wait_for(read.wait(), 30)
        with capture_logs() as logs:
            await follower.finish(MessageCompleted(message=message, message_id=MESSAGE_ID, step=2))
    assert [e.kind for e in events] == ["text_delta", "text_reset", "text_delta"]
    assert text(events) == FIRST + LAST
    assert [log["read"] for log in logs if log["event"] == "events.live_retold"] == [True]
