"""An agent whose tool is a remote A2A agent (``Operator`` on another gateway)."""

from __future__ import annotations

from temporalio import workflow

from smyth_temporal import AgentConfig, AgentInput, AgentResult, AgentWorkflow
from smyth_temporal.a2a import a2a_agent

with workflow.unsafe.imports_passed_through():
    from tests.helpers.a2a_remote import KEY_SECRET, REMOTE_URL

remote_desk = a2a_agent(
    REMOTE_URL,
    name="remote_desk",
    description="The trading desk of another organisation: ask it for quotes.",
    key_secret=KEY_SECRET,
)


@workflow.defn
class Caller(AgentWorkflow):
    """Answers by asking the remote desk."""

    config = AgentConfig(
        model="test-model",
        instructions="Ask the remote desk.",
        tools=[remote_desk],
        max_steps=5,
        search_attributes=False,
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)
