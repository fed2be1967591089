"""The run's event stream: what the agent publishes for watchers as it works.

Workflow code. ``EventLog`` hosts the run's ``temporalio.contrib.workflow_streams``
stream (its publish signal, poll update and queries) and publishes ``AgentEvent``s to
it. Publishing appends to the stream's in-memory log and writes nothing to history, so
it changes no command of the run, and replay rebuilds the same log. The stream's state
rides the checkpoint across continue-as-new, so offsets keep counting in the next run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta

from temporalio import workflow
from temporalio.contrib.workflow_streams import WorkflowStream, WorkflowStreamState

from smyth_temporal.types.agent import AgentInput
from smyth_temporal.types.events import EVENTS_TOPIC, AgentEvent, RunStarted

__all__ = ["CARRIED_EVENTS", "EventLog", "carried_stream"]

CARRIED_EVENTS = 1_000
"""Events carried into the next run at continue-as-new; a subscriber further behind
starts again from the oldest one carried."""

_PUBLISHER_TTL = timedelta(minutes=15)
"""How long an activity's publisher dedup state survives continue-as-new: longer than
any model activity's retry of one flush, as the stream's ``get_state`` requires."""


def carried_stream(run_args: Sequence[object]) -> WorkflowStreamState | None:
    """The stream state in a run's input, when the previous run carried one."""
    input = run_args[0] if run_args else None
    if isinstance(input, AgentInput) and input.checkpoint is not None:
        return input.checkpoint.stream
    return None


class EventLog:
    """Publishes the agent's events to its run's stream.

    Must be constructed from the workflow's ``__init__`` (the stream registers its
    handlers there, before any signal or update of the first workflow task).

    Args:
        prior: The stream state the previous run carried (``None`` on a fresh start).
        step: The agent's current step, stamped on every event.

    Added in 0.3.0.
    """

    def __init__(self, prior: WorkflowStreamState | None, step: Callable[[], int]) -> None:
        self._stream = WorkflowStream(prior_state=prior)
        self._topic = self._stream.topic(EVENTS_TOPIC)
        self._step = step
        self._turns = 0
        self.message_id: str | None = None
        """The id of the latest model turn's message."""

    def publish(self, event: AgentEvent) -> None:
        """Append ``event`` to the stream, stamped with this run and the current step."""
        update: dict[str, object] = {"run_id": workflow.info().run_id}
        if not event.step:
            update["step"] = self._step()
        self._topic.publish(event.model_copy(update=update))

    def run_started(self, input: AgentInput) -> None:
        """Publish that this run began (fresh, or resumed from a checkpoint)."""
        generation = input.checkpoint.generation if input.checkpoint else 1
        agent = workflow.info().workflow_type
        self.publish(RunStarted(agent=agent, mode=input.mode, generation=generation))

    def next_message_id(self) -> str:
        """A fresh id for the next model turn's message (unique across runs)."""
        self._turns += 1
        self.message_id = f"{workflow.info().run_id}/{self._turns}"
        return self.message_id

    def release_subscribers(self) -> None:
        """Answer waiting subscribers now and refuse new polls until the next run.

        A subscriber's poll is an update handler that waits for events; continue-as-new
        waits for every handler to finish, so it releases them first. Subscribers retry
        and follow the chain to the next run (the stream's own continue-as-new protocol).
        """
        self._stream.detach_pollers()

    def handover(self) -> WorkflowStreamState:
        """The stream state the next run carries on from (its most recent events)."""
        self.release_subscribers()
        state = self._stream.get_state(publisher_ttl=_PUBLISHER_TTL)
        if len(state.log) <= CARRIED_EVENTS:
            return state
        self._stream.truncate(state.base_offset + len(state.log) - CARRIED_EVENTS)
        return self._stream.get_state(publisher_ttl=_PUBLISHER_TTL)
