"""``ReplayModel``: answer model turns from a recorded run while the conversation matches.

Evaluating a changed tool or prompt against a recorded run should cost only the turns
that differ. ``ReplayModel.from_history`` reads every model turn a run (its whole chain)
recorded, request and response, from its history. Asked for a turn, it answers with
the recorded response as long as the request is the one recorded for that step (the
same model, messages and tools); from the first request that differs it asks the model
it wraps, for that turn and every later one (the conversation has left the record).

Added in 0.9.0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from smyth_temporal.models import ModelProvider
from smyth_temporal.types.model import MODEL_ACTIVITY, ModelRequest, ModelResponse

__all__ = ["ReplayModel"]

_SCHEDULED = EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
_COMPLETED = EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED


def _turn(request: ModelRequest) -> dict[str, Any]:
    """What decides a model's answer: the model, the messages, the tools, the settings."""
    return request.model_dump(
        mode="json", include={"model", "messages", "tools", "settings", "output"}
    )


class ReplayModel:
    """A model provider that replays a run's recorded turns, then asks ``model``.

    ```python
    model = await ReplayModel.from_history(client, "Analyst-3f9a", OpenAIProvider())
    async with agent_worker(client, Analyst, model=model, task_queue=queue):
        ...
    print(model.replayed, model.called)  # turns answered from the record, turns paid for
    ```

    Args:
        recorded: The recorded turns by step: the request and the response.
        model: Answers the turns from the first one that differs from the record.

    Added in 0.9.0.
    """

    def __init__(
        self,
        recorded: Mapping[int, tuple[ModelRequest, ModelResponse]],
        model: ModelProvider,
    ) -> None:
        self.recorded = dict(recorded)
        self.model = model
        self.replayed = 0
        """Turns answered from the record."""
        self.called = 0
        """Turns ``model`` answered."""
        self.diverged_at: int | None = None
        """The first step whose request differed from the record (``None``: none yet)."""

    @classmethod
    async def from_history(
        cls, client: Client, workflow_id: str, model: ModelProvider
    ) -> ReplayModel:
        """The turns recorded by every run of ``workflow_id``'s chain (decoded by ``client``)."""
        recorded: dict[int, tuple[ModelRequest, ModelResponse]] = {}
        run_id: str | None = None
        while True:
            history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
            requests: dict[int, ModelRequest] = {}
            for event in history.events:
                if event.event_type == _SCHEDULED:
                    scheduled = event.activity_task_scheduled_event_attributes
                    if scheduled.activity_type.name == MODEL_ACTIVITY:
                        payloads = list(scheduled.input.payloads)
                        [request] = await client.data_converter.decode(payloads, [ModelRequest])
                        if request.purpose == "turn":
                            requests[event.event_id] = request
                elif event.event_type == _COMPLETED:
                    completed = event.activity_task_completed_event_attributes
                    request = requests.get(completed.scheduled_event_id)
                    if request is not None:
                        payloads = list(completed.result.payloads)
                        [response] = await client.data_converter.decode(payloads, [ModelResponse])
                        recorded.setdefault(request.step, (request, response))
            started = history.events[0].workflow_execution_started_event_attributes
            if not started.continued_execution_run_id:
                return cls(recorded, model)
            run_id = started.continued_execution_run_id

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """The recorded response while the requests match; ``model``'s answer after."""
        record = self.recorded.get(request.step)
        if self.diverged_at is None and record is not None and _turn(record[0]) == _turn(request):
            self.replayed += 1
            return record[1]
        if self.diverged_at is None:
            self.diverged_at = request.step
        self.called += 1
        return await self.model.complete(request)
