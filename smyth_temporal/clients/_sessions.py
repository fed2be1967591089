"""Persistent sessions: ``AgentClient``'s ``send`` and ``close_session``."""

from __future__ import annotations

from typing import Any

from temporalio.client import WithStartWorkflowOperation, WorkflowUpdateFailedError
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy

from smyth_temporal.clients._base import AgentRef, agent_name
from smyth_temporal.clients._runs import RunsClient, refusal
from smyth_temporal.exceptions import InvalidMessageError
from smyth_temporal.types.agent import AgentInput
from smyth_temporal.types.sessions import (
    CLOSE_SESSION_SIGNAL,
    SESSION_EVENT_SIGNAL,
    SESSION_MESSAGE_UPDATE,
    SessionMessage,
    SessionReply,
    session_workflow_id,
)

__all__ = ["SessionsClient"]


class SessionsClient(RunsClient):
    """Talk to agents' persistent sessions."""

    async def send(
        self,
        agent: AgentRef,
        session_id: str,
        text: str,
        *,
        tenant: str = "default",
        sender: str | None = None,
        wait: bool = True,
    ) -> SessionReply | None:
        """Send a message to a persistent session, starting the session if need be.

        One call (update-with-start): a stateless script or web handler can talk to a
        durable session. Callers racing to start the same session create it once;
        messages are answered one at a time, in the order they arrive.

        Args:
            agent: The agent class or its workflow type name (any registered agent
                whose run method calls ``run_agent``).
            session_id: Names the session (per agent and tenant).
            text: The message.
            tenant: Whose session it is.
            sender: Who sends it (kept in the session's history).
            wait: Wait for the reply (an update, default); ``False`` posts the message
                as an event (a signal) and returns at once.

        Returns:
            The agent's reply (``None`` when ``wait`` is false).

        Raises:
            InvalidMessageError: The session refused the message; the message says why.

        Added in 0.2.0.
        """
        name = agent_name(agent)
        workflow_id = session_workflow_id(name, tenant, session_id)
        message = SessionMessage(text=text, tenant=tenant, sender=sender)
        start = AgentInput(tenant=tenant, session_id=session_id, mode="session")
        options: dict[str, Any] = {
            "id": workflow_id,
            "task_queue": self.task_queue,
            "id_conflict_policy": WorkflowIDConflictPolicy.USE_EXISTING,
            "id_reuse_policy": WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        }
        if not wait:
            await self.client.start_workflow(
                name,
                start,
                start_signal=SESSION_EVENT_SIGNAL,
                start_signal_args=[message],
                **options,
            )
            return None

        async def deliver() -> SessionReply:
            operation: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
                name, start, **options
            )
            try:
                reply: SessionReply = await self.client.execute_update_with_start_workflow(
                    SESSION_MESSAGE_UPDATE,
                    message,
                    start_workflow_operation=operation,
                    result_type=SessionReply,
                )
            except BaseException:
                # temporalio also sets the failure on the operation's handle future,
                # which nobody awaits; read it, or asyncio reports it at exit.
                future = operation._workflow_handle
                if future.done() and not future.cancelled():
                    future.exception()
                raise
            return reply

        try:
            return await self._across_runs(workflow_id, deliver)
        except WorkflowUpdateFailedError as exc:
            raise InvalidMessageError(f"session {workflow_id}: {refusal(exc)}") from exc

    async def close_session(
        self, agent: AgentRef, session_id: str, *, tenant: str = "default"
    ) -> None:
        """End a session once the messages already sent to it are answered.

        Added in 0.2.0.
        """
        workflow_id = session_workflow_id(agent_name(agent), tenant, session_id)
        await self.signal(workflow_id, CLOSE_SESSION_SIGNAL)
