"""``AgentClient.rewind``: the same run back to a step, through Temporal's reset.

Real dev server, real Qdrant Edge on disk; only the model is scripted.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType, WorkflowTaskFailedCause
from temporalio.client import Client

from smyth_temporal import (
    AgentClient,
    AgentInput,
)
from smyth_temporal.memory import EdgeStore, HashEmbedder, MemoryManager
from smyth_temporal.models import ModelRequest, ModelResponse
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from smyth_temporal.types.rewind import REWIND_SIGNAL
from tests.helpers.rewind_agents import Rewindable

FACT_1 = "ACME reports earnings on May 3"
FACT_3 = "ACME's CFO resigned"
NEW_COURSE = "Never mind the CFO: what do we already know about ACME?"
RECALL_ALL = tool_call("recall", query="ACME earnings CFO", k=20)


def said(request: ModelRequest, text: str) -> bool:
    return any(m.content == text for m in request.messages)


def turn(request: ModelRequest) -> ModelResponse:
    """The original remembers at steps 1 and 3 and e-mails at 4; rewound with the new
    course, it recalls at step 3 and answers what it recalled.
    """
    if said(request, NEW_COURSE):
        if request.step == 3:
            return RECALL_ALL
        return reply([m.content or "" for m in request.messages if m.role == "tool"][-1])
    return {
        1: tool_call("remember", text=FACT_1, kind="fact"),
        2: tool_call("get_quote", symbol="ACME"),
        3: tool_call("remember", text=FACT_3, kind="fact"),
        4: tool_call("send_email", to="ceo", text="CFO news"),
    }.get(request.step) or reply("ACME noted.")


@pytest.fixture
async def memory(tmp_path: Path) -> AsyncIterator[MemoryManager]:
    manager = MemoryManager(EdgeStore(tmp_path / "memory"), HashEmbedder(64))
    yield manager
    await manager.close()


async def test_a_rewind_to_step_2_forgets_step_3s_memory_keeps_step_1s_and_completes(
    client: Client, agents: AgentClient, task_queue: str, memory: MemoryManager, ledger: Path
) -> None:
    model = ScriptedModel([turn] * 12)
    async with agent_worker(client, Rewindable, model=model, task_queue=task_queue, memory=memory):
        handle = await agents.start(Rewindable, AgentInput(prompt="Learn about ACME", tenant="t1"))
        original = await agents.result(handle.id)
        assert (original.output, original.steps) == ("ACME noted.", 5)
        before = await agents.memory.list_memories(tenant="t1", namespace="research")
        assert {r.text for r in before} == {FACT_1, FACT_3}

        started = time.perf_counter()
        rewound = await agents.rewind(handle.id, to_step=2, prompt=NEW_COURSE)
        seconds = time.perf_counter() - started
        result = await agents.result(handle.id)
        after = await agents.memory.list_memories(tenant="t1", namespace="research")
        history = await client.get_workflow_handle(handle.id).fetch_history()
        description = await client.get_workflow_handle(handle.id).describe()
    print(f"rewind to step 2 of 5: {seconds * 1000:.0f} ms")

    # The same workflow id goes on in a new run, from step 3, with the new course.
    assert rewound.workflow_id == handle.id and rewound.to_step == 2
    assert rewound.abandoned_run_id == handle.result_run_id != rewound.run_id
    assert description.run_id == rewound.run_id
    assert FACT_1 in result.output and FACT_3 not in result.output
    assert result.steps == 4
    rewound_requests = [r for r in model.requests if said(r, NEW_COURSE)]
    assert [r.step for r in rewound_requests] == [3, 4]  # no model call for steps 1-2
    assert len(model.requests) == 5 + 2
    first = rewound_requests[0]
    assert [m.role for m in first.messages][-3:] == ["assistant", "tool", "user"]
    # Memory: step 1's fact is there, step 3's is gone.
    assert {r.text for r in after} == {FACT_1}
    # The e-mail of step 4 cannot be undone: listed, with its result and key.
    [email] = rewound.side_effects
    assert (email.tool, email.step, email.outcome, email.result) == (
        "send_email",
        4,
        "completed",
        "sent to ceo",
    )
    assert email.idempotency_key.endswith("/4/" + email.call_id)
    # History shows the reset: the task it took over failed with cause RESET_WORKFLOW
    # (naming the abandoned run), then the notice; describe names the reset too.
    [reset] = [
        e.workflow_task_failed_event_attributes
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
    ]
    assert reset.cause == WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW
    assert (reset.base_run_id, reset.new_run_id) == (rewound.abandoned_run_id, rewound.run_id)
    signals = [
        e.workflow_execution_signaled_event_attributes.signal_name
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
    ]
    assert signals == [REWIND_SIGNAL]
    assert description.raw_description.workflow_extended_info.HasField("last_reset_time")
