"""Recorded histories replay against today's workflow code.

Each file in ``tests/histories/`` is the history of a finished run (regenerate with
``python -m tests.helpers.record_histories``). Replaying it re-runs the workflow code against
the recorded events: if the code now makes different decisions (another activity, a
timer, calls in another grouping), Temporal raises a nondeterminism error, and this
test fails, just as a worker would fail running agents that were in flight when the
change shipped.

The second half proves the net catches something: modified agents registered under
the real names must fail to replay.

One blind spot to know about: replay compares the *kind* and order of commands, not
their arguments. Calling the same tool with other arguments, or two calls of one tool
in swapped order, replays "fine" and silently hands each call the other's result
(``test_replay_does_not_compare_arguments`` pins this).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from temporalio import workflow
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer
from temporalio.workflow import NondeterminismError

from smyth_temporal import AgentInput, AgentResult, Message, SmythPlugin, Tool, ToolCall
from smyth_temporal.agent.live import LiveChannel
from tests.helpers.agents import Analyst, Rater, Summarizer
from tests.helpers.budget_agents import AskingSpender
from tests.helpers.context_agents import Concierge, Digest, Relay
from tests.helpers.fallback_agents import ClaudeCompactingWithFallback
from tests.helpers.mcp_agents import Clock
from tests.helpers.memory_agents import Researcher
from tests.helpers.policy_agents import Treasurer
from tests.helpers.reconcile_agents import Payer, Postman
from tests.helpers.trader import Trader

# The workflows below are defined here, so the sandbox re-imports this module; the
# recorder's worker-side imports (the Qdrant Edge store) are passed through as is.
with workflow.unsafe.imports_passed_through():
    from tests.helpers.record_histories import HISTORIES, SCENARIOS, workflow_id

RECORDED = sorted(HISTORIES.glob("*.json"))


def load(path: Path) -> WorkflowHistory:
    return WorkflowHistory.from_json(workflow_id(path.stem), path.read_text())


def replayer(*agents: type) -> Replayer:
    # SmythPlugin gives the replayer what workers get: the pydantic data converter and
    # the sandbox passthrough of smyth_temporal/pydantic.
    return Replayer(workflows=list(agents), plugins=[SmythPlugin()])


def test_every_scenario_is_recorded() -> None:
    assert sorted(p.stem for p in RECORDED) == sorted(SCENARIOS)


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.stem)
async def test_history_replays(path: Path) -> None:
    # A history that stops early would replay trivially: make sure it is a whole run.
    events = json.loads(path.read_text())["events"]
    assert events[-1]["eventType"] == "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED"

    agents = (
        Analyst,
        Summarizer,
        Digest,
        Relay,
        Concierge,
        Rater,
        Clock,
        AskingSpender,
        LiveChannel,
        Trader,
        Treasurer,
        Researcher,
        ClaudeCompactingWithFallback,
        Postman,
        Payer,
    )
    result = await replayer(*agents).replay_workflow(load(path))
    assert result.replay_failure is None


# -- deliberately incompatible variants -------------------------------------------------


@workflow.defn(name="Analyst")
class SequentialAnalyst(Analyst):
    """Runs read-only calls one after another instead of together."""

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)

    async def act(self, calls: Sequence[ToolCall]) -> list[Message]:
        results = [await self.call_tool(call) for call in calls]
        self.conversation.messages.extend(results)
        return results


@workflow.defn(name="Analyst")
class ThrottledAnalyst(Analyst):
    """Waits a moment before every model turn (a timer where history has an activity)."""

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)

    async def think(self, *, tools: Sequence[Tool] | None = None) -> Message:
        await asyncio.sleep(0.1)  # a durable timer inside a workflow
        return await super().think(tools=tools)


@workflow.defn(name="Summarizer")
class HastySummarizer(Summarizer):
    """Summarizes without running the tool calls of the first turn."""

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        self.begin(input)
        await self.think()
        summary = await self.think(tools=[])
        return self.finish(f"SUMMARY: {summary.content}")


@workflow.defn(name="Digest")
class UncompactedDigest(Digest):
    """The same agent with compaction turned off: its history has summaries it skips."""

    config = dataclasses.replace(Digest.config, context_budget=None)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn(name="Rater")
class StrictRater(Rater):
    """Takes no correction: the first answer that does not fit ends the run."""

    config = dataclasses.replace(Rater.config, output_retries=0)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn(name="Clock")
class SequentialClock(Clock):
    """Lists its MCP tools, then asks the time server one question after the other."""

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)

    async def act(self, calls: Sequence[ToolCall]) -> list[Message]:
        results = [await self.call_tool(call) for call in calls]
        self.conversation.add(*results)
        return results


@workflow.defn(name="Trader")
class QuietTrader(Trader):
    """Publishes its approvals to visibility only when they change (not twice as it parks:
    the change this session measured and took back)."""

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        publish, last = self.approvals.publish, []

        def quietly() -> None:
            pending = [r.id for r in self.approvals.pending]
            published = (pending, "awaiting_approval" if pending else self.conversation.status)
            if last != [published]:
                last[:] = [published]
                publish()

        self.approvals.publish = quietly  # type: ignore[method-assign]
        return await self.run_agent(input)


@pytest.mark.parametrize(
    ("agent", "scenario"),
    [
        (QuietTrader, "trader_approved"),
        (SequentialClock, "clock_mcp"),
        (StrictRater, "rater_typed_output"),
        (UncompactedDigest, "digest_compacted"),
        (SequentialAnalyst, "analyst_concurrent_reads"),
        (ThrottledAnalyst, "analyst_multi_tool"),
        (HastySummarizer, "summarizer_custom"),
    ],
    ids=lambda v: v if isinstance(v, str) else v.__name__,
)
async def test_changed_loop_fails_replay(agent: type, scenario: str) -> None:
    with pytest.raises(NondeterminismError):
        await replayer(agent).replay_workflow(load(HISTORIES / f"{scenario}.json"))


@workflow.defn(name="Analyst")
class SwappingAnalyst(Analyst):
    """Schedules each group of read-only calls in reverse order."""

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)

    async def _run_concurrently(self, calls: Sequence[ToolCall]) -> list[Message]:
        results = await asyncio.gather(*(self.call_tool(call) for call in reversed(calls)))
        return list(reversed(results))


async def test_replay_does_not_compare_arguments() -> None:
    """Not a wish, a fact of Temporal to design around: the first turn of this history
    has two ``get_quote`` calls; swapping them passes replay although each call would
    now receive the other's recorded price. Keep the order of calls stable."""
    history = load(HISTORIES / "analyst_multi_tool.json")
    result = await replayer(SwappingAnalyst).replay_workflow(history)
    assert result.replay_failure is None
