"""A2A's pure rules: task ids from messages, states from statuses, roles from bodies.

- the same (tenant, agent, messageId) always names the same task, and two different
  ones never do (another tenant cannot reach a task by sending the same messageId);
- every agent status is a task state, and the statuses a run ends with are final ones;
- a body that the dispatcher would parse as a message into a task (a decision) needs
  the approve permission, however it spells the task id.
"""

from __future__ import annotations

import json
import typing
from typing import Any

from a2a.types.a2a_pb2 import SendMessageRequest, TaskState
from google.protobuf.json_format import ParseDict
from hypothesis import given
from hypothesis import strategies as st

from smyth_temporal.gateway._a2a import _permission
from smyth_temporal.gateway._a2a_tasks import TASK_ID_PREFIX, state_of, task_id_for
from smyth_temporal.types.agent import AgentStatus

tenants = st.from_regex(r"[a-z][a-z0-9-]{0,30}", fullmatch=True)
agents = st.from_regex(r"[A-Z][A-Za-z0-9_]{0,30}", fullmatch=True)
message_ids = st.text(min_size=1, max_size=200)

FINAL = {
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_CANCELED,
}
ENDS = {"completed", "failed", "max_steps", "invalid_output", "over_budget", "interrupted"}


@given(tenants, agents, message_ids, tenants, agents, message_ids)
def test_a_task_id_names_one_message_of_one_tenant(
    tenant: str, agent: str, message: str, tenant2: str, agent2: str, message2: str
) -> None:
    one = task_id_for(tenant, agent, message)
    assert one == task_id_for(tenant, agent, message)
    assert one.startswith(f"{TASK_ID_PREFIX}{agent}-") and one.isascii()
    if (tenant, agent, message) != (tenant2, agent2, message2):
        assert one != task_id_for(tenant2, agent2, message2)


def test_every_status_is_a_state_and_every_end_is_final() -> None:
    for status in typing.get_args(AgentStatus):
        state = state_of(status)
        assert state != TaskState.TASK_STATE_UNSPECIFIED
        assert (state in FINAL) == (status in ENDS), status
    assert state_of("awaiting_approval") == TaskState.TASK_STATE_INPUT_REQUIRED


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


@given(
    method=st.sampled_from(["SendMessage", "SendStreamingMessage"]),
    spelling=st.sampled_from(["taskId", "task_id"]),
    task_id=st.text(min_size=1, max_size=40),
    extra=st.dictionaries(st.sampled_from(["messageId", "contextId", "role"]), st.text(max_size=8)),
    noise=st.dictionaries(st.text(max_size=8), json_values, max_size=3),
)
def test_a_message_into_a_task_needs_approve_however_it_is_spelled(
    method: str, spelling: str, task_id: str, extra: dict[str, str], noise: dict[str, Any]
) -> None:
    message: dict[str, Any] = {**extra, spelling: task_id}
    if "role" in message:
        message["role"] = "ROLE_USER"
    params = {**noise, "message": message}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    parsed = ParseDict({"message": message}, SendMessageRequest(), ignore_unknown_fields=True)
    assert parsed.message.task_id == task_id  # what the dispatcher would hand over
    assert _permission(body.encode()) == "approve"
