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

from temporalio.client import Client

from smyth_temporal.activities.recorded import turns_of
from smyth_temporal.models import ModelProvider
from smyth_temporal.types.model import ModelRequest, ModelResponse, turn_key

__all__ = ["ReplayModel"]


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
            for request, response in await turns_of(client, history):
                recorded.setdefault(request.step, (request, response))
            started = history.events[0].workflow_execution_started_event_attributes
            if not started.continued_execution_run_id:
                return cls(recorded, model)
            run_id = started.continued_execution_run_id

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """The recorded response while the requests match; ``model``'s answer after."""
        record = self.recorded.get(request.step)
        if (
            self.diverged_at is None
            and record is not None
            and turn_key(record[0]) == turn_key(request)
        ):
            self.replayed += 1
            return record[1]
        if self.diverged_at is None:
            self.diverged_at = request.step
        self.called += 1
        return await self.model.complete(request)
