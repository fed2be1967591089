"""One run, one state: MCP tasks and A2A tasks tell every agent status the same way.

Both protocols have the same five states (working, input required, completed, failed,
cancelled); a client following a run through either must read the same one. The
domain is finite, so every agent status is checked, not a sample.
"""

from __future__ import annotations

from typing import get_args

import pytest
from a2a.types.a2a_pb2 import TaskState

from smyth_temporal.gateway._a2a_tasks import state_of
from smyth_temporal.mcp_server._tasks import task_status
from smyth_temporal.types.agent import AgentStatus

A2A_NAMES = {
    TaskState.TASK_STATE_WORKING: "working",
    TaskState.TASK_STATE_INPUT_REQUIRED: "input_required",
    TaskState.TASK_STATE_COMPLETED: "completed",
    TaskState.TASK_STATE_FAILED: "failed",
    TaskState.TASK_STATE_CANCELED: "cancelled",
}


@pytest.mark.parametrize("status", get_args(AgentStatus))
def test_mcp_and_a2a_tell_the_same_task_state_of_every_agent_status(status: str) -> None:
    assert task_status(status) == A2A_NAMES[state_of(status)]  # type: ignore[arg-type]


def test_a_pending_approval_is_input_required_until_the_run_ended() -> None:
    for status in get_args(AgentStatus):
        ended = task_status(status) in ("completed", "failed", "cancelled")
        expected = task_status(status) if ended else "input_required"
        assert task_status(status, pending_approvals=1) == expected, status
