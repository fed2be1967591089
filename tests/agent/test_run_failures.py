"""Failures raised in workflow code end the run with their message (real dev server).

``SmythPlugin`` lists ``UserError`` and ``RunError`` as workflow failure types: without
that, an exception in workflow code fails the workflow *task*, which Temporal retries
forever while the run hangs.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from temporalio import workflow
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import ApplicationError

from smyth_temporal import AgentConfig, AgentInput, AgentResult, AgentWorkflow, UserError

with workflow.unsafe.imports_passed_through():
    from smyth_temporal.testing import ScriptedModel, agent_worker, reply


@workflow.defn
class Forgetful(AgentWorkflow):
    """Recalls from a memory it does not have: a developer's mistake."""

    config = AgentConfig(model="test-model")

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        self.begin(input)
        await self.recall("anything")
        return self.finish("unreachable")


@workflow.defn
class Misconfigured(AgentWorkflow):
    """Raises a UserError of its own in workflow code."""

    config = AgentConfig(model="test-model")

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        raise UserError(f"no such mode {input.metadata['mode']!r}")


@pytest.mark.parametrize(
    ("agent", "message"),
    [
        (Forgetful, "the agent has no memory: set AgentConfig.memory_namespace"),
        (Misconfigured, "no such mode 'turbo'"),
    ],
)
async def test_a_user_error_in_workflow_code_fails_the_run(
    client: Client, task_queue: str, agent: type, message: str
) -> None:
    model = ScriptedModel([reply("-")])
    async with agent_worker(client, agent, model=model, task_queue=task_queue):
        handle = await client.start_workflow(
            agent.run,  # type: ignore[attr-defined]
            AgentInput(prompt="go", metadata={"mode": "turbo"}),
            id=f"{agent.__name__}-{uuid.uuid4()}",
            task_queue=task_queue,
            # Without the failure types the task would be retried forever; this bound
            # turns such a regression into a failed assertion instead of a hung test.
            execution_timeout=timedelta(minutes=2),
        )
        with pytest.raises(WorkflowFailureError) as failure:
            await handle.result()
    cause = failure.value.cause
    assert isinstance(cause, ApplicationError)
    assert (cause.type, cause.message) == ("UserError", message)
