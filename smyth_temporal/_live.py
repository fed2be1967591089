"""Starting and closing a turn's live channel (``types.live``), for whoever needs to.

Readers start a channel when they follow a turn (``AgentClient.events``): a turn nobody
watches has none, and its model call's text goes nowhere. Whoever knows the turn is over
closes it: the model activity when its call ends for good, a reader when the turn's
message is in. Both are idempotent.
"""

from __future__ import annotations

import contextlib

from temporalio.client import Client
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from smyth_temporal.types.live import LIVE_CLOSE_SIGNAL, LIVE_WORKFLOW, LiveChannelInput, LiveTarget

__all__ = ["close_channel", "start_channel"]


async def start_channel(client: Client, target: LiveTarget, input: LiveChannelInput) -> None:
    """Start the channel unless it exists; once closed, it is never started again.

    A reader that comes late must read the closed channel's text, not an empty new one.
    """
    # Already started and closed: its text is still there to read.
    with contextlib.suppress(WorkflowAlreadyStartedError):
        await client.start_workflow(
            LIVE_WORKFLOW,
            input,
            id=target.workflow_id,
            task_queue=target.task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
        )


async def close_channel(client: Client, workflow_id: str) -> bool:
    """Tell the channel no more text comes; ``False`` when it is not open (or never was)."""
    try:
        await client.get_workflow_handle(workflow_id).signal(LIVE_CLOSE_SIGNAL)
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            return False
        raise
    return True
