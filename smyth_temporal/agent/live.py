"""A model turn's live text channel (``smyth.live``): streamed text, kept out of the run.

Workflow code. A reader following the turn starts this workflow (``types.live``), the
model activity publishes its text deltas to the stream it hosts, and whoever knows the
call is over closes it. Its history holds the delta batches, so the agent's history
holds none of them: a streamed turn costs the agent what an unstreamed one does.
"""

from __future__ import annotations

import contextlib

from temporalio import workflow
from temporalio.contrib.workflow_streams import WorkflowStream

from smyth_temporal.types.live import (
    LIVE_CLOSE_SIGNAL,
    LIVE_TIMEOUT,
    LIVE_WORKFLOW,
    LiveChannelInput,
    LiveTarget,
    live_workflow_id,
)

__all__ = ["LiveChannel", "live_target"]


def live_target(message_id: str) -> LiveTarget:
    """The live channel of the current agent's message ``message_id`` (workflow code)."""
    info = workflow.info()
    return LiveTarget(
        workflow_id=live_workflow_id(info.workflow_id, message_id), task_queue=info.task_queue
    )


@workflow.defn(name=LIVE_WORKFLOW)
class LiveChannel:
    """Hosts one message's text deltas until the model call closes it (or times out)."""

    @workflow.init
    def __init__(self, input: LiveChannelInput) -> None:
        # The stream registers its publish signal and poll handlers here, before the
        # first workflow task's signals (a start may come with the first batch).
        self._stream = WorkflowStream()
        self._closed = False

    @workflow.signal(name=LIVE_CLOSE_SIGNAL)
    def close(self) -> None:
        """The model call is over: no more text comes."""
        self._closed = True

    @workflow.run
    async def run(self, input: LiveChannelInput) -> None:
        """Wait for the close, then release the readers and end.

        Readers of an ended channel read what is left by query, so nothing published
        before the end is lost to them.
        """
        with contextlib.suppress(TimeoutError):  # a call that never closed it
            await workflow.wait_condition(lambda: self._closed, timeout=LIVE_TIMEOUT)
        self._stream.detach_pollers()
        await workflow.wait_condition(workflow.all_handlers_finished)
