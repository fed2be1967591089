"""A workflow that publishes more events than a run carries across continue-as-new.

``Chatterbox`` hosts an agent's ``EventLog`` (the agent's own stream code, its
truncation at handover included), publishes ``count`` events, continues as new once,
and finishes: readers from before the carried events must get a ``gap``.
"""

from __future__ import annotations

from dataclasses import dataclass

from temporalio import workflow
from temporalio.contrib.workflow_streams import WorkflowStreamState

from smyth_temporal.agent.events import EventLog
from smyth_temporal.types.events import ContinuedAsNew, RunFinished, RunStarted, StatusChanged


@dataclass
class ChatterInput:
    count: int
    stream: WorkflowStreamState | None = None
    generation: int = 1


@workflow.defn(name="tests.Chatterbox")
class Chatterbox:
    @workflow.init
    def __init__(self, input: ChatterInput) -> None:
        self._events = EventLog(input.stream, lambda: 1)

    @workflow.run
    async def run(self, input: ChatterInput) -> None:
        if input.generation == 1:
            for _ in range(input.count):
                self._events.publish(StatusChanged(status="thinking"))
            self._events.publish(ContinuedAsNew(generation=2))
            state = self._events.handover()
            await workflow.wait_condition(workflow.all_handlers_finished)
            workflow.continue_as_new(ChatterInput(input.count, state, 2))
        self._events.publish(RunStarted(agent="Chatterbox", generation=2))
        self._events.publish(RunFinished(status="completed", output="done"))
