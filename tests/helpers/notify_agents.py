"""``NotifyingTrader``: the ``Trader``, telling the channels its input names about each request.

It starts the notifications itself, from its ``call_tool`` hook, through the same
function approval policies use (``start_notifications``): the channel names come from
the input's ``metadata["notify"]``, so each test picks the channels its worker has.
"""

from __future__ import annotations

from temporalio import workflow

from smyth_temporal import AgentConfig, AgentInput, AgentResult, AgentWorkflow
from smyth_temporal.agent.notifications import start_notifications
from smyth_temporal.types import Message, ToolCall
from tests.helpers.notify_tools import pay
from tests.helpers.trading import TRADER_TOOLS


@workflow.defn
class NotifyingTrader(AgentWorkflow):
    config = AgentConfig(model="test-model", tools=TRADER_TOOLS, max_steps=6)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)

    async def call_tool(self, call: ToolCall) -> Message:
        request = self.request_approval(call)
        notified = self.data.setdefault("notified", [])
        if request is not None and request.status == "pending" and request.id not in notified:
            notified.append(request.id)
            start_notifications(
                request,
                self.input.metadata.get("notify", []),
                agent=workflow.info().workflow_type,
                roles=("approver", "finance"),
                publish=self.events.publish,
            )
        return await super().call_tool(call)


@workflow.defn
class Payer(AgentWorkflow):
    """One tool under an ``ApprovalPolicy`` that notifies ``hook``, then ``lead`` on escalation."""

    config = AgentConfig(model="test-model", tools=[pay], max_steps=3)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)
