"""Live agents: ``AgentClient``'s ``events`` and ``interrupt``.

The event stream is read through ``Feeds`` (one poll per run per process); an
interrupt is the agent's ``interrupt`` update, refused with ``InvalidInterruptError``
when nothing runs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from functools import cached_property
from typing import Self

from temporalio.client import WorkflowUpdateFailedError

from smyth_temporal.clients._events import Feeds
from smyth_temporal.clients._runs import RunsClient, refusal
from smyth_temporal.exceptions import AgentNotFoundError, InvalidInterruptError
from smyth_temporal.security import Principal
from smyth_temporal.types.agent import INTERRUPT_UPDATE, Interrupt, InterruptOutcome
from smyth_temporal.types.events import AgentEvent

__all__ = ["LiveClient"]


class LiveClient(RunsClient):
    """Watch agents as they work, and stop their current turn."""

    @cached_property
    def _feeds(self) -> Feeds:
        return Feeds(self.client)

    def acting_for(self, principal: Principal | None) -> Self:
        view = super().acting_for(principal)
        # One poll per run per process, whoever reads: views share the readers.
        view._feeds = self._feeds
        return view

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
        async for event in await self.open_events(workflow_id, after=after):
            yield event

    async def open_events(
        self, workflow_id: str, *, after: int | None = None
    ) -> AsyncIterator[AgentEvent]:
        """``events``, with the caller's access checked before it returns.

        For interfaces that answer a refusal (another tenant's run: not found) before
        their response begins, not as the stream's first error.

        Raises:
            AgentNotFoundError: The run is another tenant's (with a principal).

        Added in 0.9.0.
        """
        await self.identity.owns(workflow_id)
        return self._feeds.events(workflow_id, after)

    def checked_events(
        self, workflow_id: str, *, after: int | None = None
    ) -> AsyncIterator[AgentEvent]:
        """``events`` of a run whose ownership the caller has just checked (``status``).

        Internal: for readers that made the check themselves, not another one.
        """
        return self._feeds.events(workflow_id, after)

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
        interrupt = Interrupt(reason=reason, by=self.identity.by(by))
        try:
            return await self._update_checked(
                workflow_id, "operate", INTERRUPT_UPDATE, interrupt, InterruptOutcome
            )
        except WorkflowUpdateFailedError as exc:
            raise InvalidInterruptError(f"agent {workflow_id}: {refusal(exc)}") from exc
        except AgentNotFoundError as exc:
            # ``status`` sees only the caller's runs: another tenant's finished run
            # stays indistinguishable from an unknown one.
            if await self.status(workflow_id) is None:
                raise
            raise InvalidInterruptError(
                f"agent {workflow_id}: nothing to interrupt: the run has finished"
            ) from exc
