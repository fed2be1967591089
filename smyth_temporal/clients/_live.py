"""Live agents: ``AgentClient``'s ``events`` and ``interrupt``.

The event stream is read through ``Feeds`` (one poll per run per process); an
interrupt is the agent's ``interrupt`` update, refused with ``InvalidInterruptError``
when nothing runs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from functools import cached_property

from temporalio.client import WorkflowUpdateFailedError

from smyth_temporal.clients._events import Feeds
from smyth_temporal.clients._runs import RunsClient, refusal
from smyth_temporal.exceptions import AgentNotFoundError, InvalidInterruptError
from smyth_temporal.types.agent import INTERRUPT_UPDATE, Interrupt, InterruptOutcome
from smyth_temporal.types.events import AgentEvent

__all__ = ["LiveClient"]


class LiveClient(RunsClient):
    """Watch agents as they work, and stop their current turn."""

    @cached_property
    def _feeds(self) -> Feeds:
        return Feeds(self.client)

    def events(self, workflow_id: str, *, after: int | None = None) -> AsyncIterator[AgentEvent]:
        """The agent's events as they happen, from the first (or after offset ``after``).

        Ends when the run ends (after continue-as-new it goes on with the next run).
        Every event has its stream ``offset``: pass the last one seen as ``after`` to
        resume after a disconnect. Readers of one run in one process share one poll.
        Streamed text comes from each turn's live channel, merged in before the turn's
        message; a ``text_delta`` has the offset of the event it follows, so resuming
        after one reads the message's text again, after a ``text_reset`` (0.6.0).

        ```python
        async for event in agents.events(workflow_id):
            if event.kind == "text_delta":
                print(event.text, end="")
        ```

        Raises:
            AgentNotFoundError: No run has that workflow id.
            ClientError: The run has no event stream (it began before 0.3.0).

        Added in 0.3.0.
        """
        if self.identity.principal is None:
            return self._feeds.events(workflow_id, after)
        return self._owned_events(workflow_id, after)

    async def _owned_events(self, workflow_id: str, after: int | None) -> AsyncIterator[AgentEvent]:
        await self.identity.owns(workflow_id)
        async for event in self._feeds.events(workflow_id, after):
            yield event

    async def interrupt(
        self, workflow_id: str, *, reason: str | None = None, by: str | None = None
    ) -> InterruptOutcome:
        """Stop the agent's current turn at its next safe point.

        The model call in flight is cancelled; tool calls already running finish (a
        side effect is never abandoned half-way) and the rest are not started; a
        pending approval is withdrawn. A task then ends with status ``interrupted``; a
        session waits for its next message.

        Raises:
            InvalidInterruptError: Nothing runs (the agent is idle or has finished).
            AgentNotFoundError: No run has that workflow id.

        Added in 0.3.0.
        """
        # Before the refusals below, which tell a finished run from an unknown one: a
        # run of another tenant must stay indistinguishable from an unknown one.
        await self.identity.owns(workflow_id, "operate")
        interrupt = Interrupt(reason=reason, by=self.identity.by(by))
        try:
            return await self.update(
                workflow_id, INTERRUPT_UPDATE, interrupt, result_type=InterruptOutcome
            )
        except WorkflowUpdateFailedError as exc:
            raise InvalidInterruptError(f"agent {workflow_id}: {refusal(exc)}") from exc
        except AgentNotFoundError as exc:
            if await self.status(workflow_id) is None:
                raise
            raise InvalidInterruptError(
                f"agent {workflow_id}: nothing to interrupt: the run has finished"
            ) from exc
