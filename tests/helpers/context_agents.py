"""Agents with a small context budget, for the compaction and continue-as-new tests."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow

from smyth_temporal import AgentConfig, AgentInput, AgentResult, AgentWorkflow, tool

REPORT_CHARS = 2_000


def report_text(day: int) -> str:
    """A long, distinct tool output: ``REPORT_CHARS`` characters naming its day."""
    head = f"Report for day {day}: marker-{day:03d} closing price {100 + day}.50. "
    return (head + "filler " * REPORT_CHARS)[:REPORT_CHARS]


@tool(effect="read_only")
async def daily_report(day: int) -> str:
    """The market report of a day.

    Args:
        day: The day number.
    """
    return report_text(day)


@workflow.defn
class Digest(AgentWorkflow):
    """Reads many long reports in one task: its prompt outgrows a 1,500-token budget."""

    config = AgentConfig(
        model="test-model",
        instructions="You digest market reports.",
        tools=[daily_report],
        memory_namespace="digest",
        memory_recall_k=0,
        memory_episodes=False,
        context_budget=1_500,
        max_steps=30,
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class Relay(AgentWorkflow):
    """Continues as new after every two steps; no compaction, no memory."""

    config = AgentConfig(
        model="test-model",
        tools=[daily_report],
        context_budget=None,
        continue_as_new_after_steps=2,
        max_steps=40,
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class Napper(AgentWorkflow):
    """Sleeps a simulated day between checks, continuing as new after each."""

    config = AgentConfig(
        model="test-model",
        tools=[daily_report],
        context_budget=None,
        continue_as_new_after_steps=1,
        search_attributes=False,
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        self.begin(input)
        days = int(input.metadata.get("days", 3))
        while self.data.get("day", 0) < days:
            await self.sleep(timedelta(days=1))
            self.data["day"] = self.data.get("day", 0) + 1
            await self.respond(f"Day {self.data['day']}: check the report.")
            self.continue_as_new_if_needed()
        return self.finish(f"checked {self.data['day']} days", status="completed")


@tool(effect="side_effect", requires_approval=True)
async def place_order(symbol: str, quantity: int) -> str:
    """Place an order (approval required).

    Args:
        symbol: The ticker.
        quantity: Shares.
    """
    return f"ordered {quantity} {symbol}"


HOPS = 6


@workflow.defn
class Switchboard(AgentWorkflow):
    """Asks for an approval, then continues as new ``HOPS`` times while it is pending.

    Pings (a signal) and echoes (an update) are recorded in ``data``, which every run
    carries into the next, so the test can check none was lost at a switch.
    """

    config = AgentConfig(model="test-model", tools=[place_order], context_budget=None)

    @workflow.signal
    def ping(self, number: int) -> None:
        self.data.setdefault("pings", []).append(number)

    @workflow.signal
    def release(self) -> None:
        self.data["released"] = True

    @workflow.update
    def echo(self, number: int) -> int:
        self.data.setdefault("echoes", []).append(number)
        return number

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        if not self.begin(input):
            reply = await self.think()
            for call in reply.tool_calls:
                self.request_approval(call)
        if self.lifecycle.generation < HOPS:
            await workflow.sleep(timedelta(milliseconds=150))
            self.continue_as_new()
        # The last run waits for the test to stop sending before it finishes.
        await workflow.wait_condition(lambda: bool(self.data.get("released")))
        assistant = next(m for m in reversed(self.conversation.messages) if m.tool_calls)
        await self.act(assistant.tool_calls)
        answer = await self.think()
        return self.finish(answer.content or "")


@tool(effect="read_only")
async def check_price(symbol: str) -> str:
    """The latest price of a stock.

    Args:
        symbol: The ticker.
    """
    return f"{symbol} trades at 101.25 with volume {len(symbol) * 1000}; " + "tick " * 60


APPROVAL_CYCLE = 100
"""The cycle in which the monitor asks to place an order (and waits for a person)."""


@workflow.defn
class HourlyMonitor(AgentWorkflow):
    """Wakes every hour, checks the market, writes a daily note; runs for weeks."""

    config = AgentConfig(
        model="test-model",
        instructions="You watch ACME every hour and act on large moves.",
        tools=[check_price, place_order],
        memory_namespace="monitor",
        memory_recall_k=0,
        memory_tools=False,
        memory_episodes=False,
        context_budget=3_000,
        continue_as_new_after_steps=int(__import__("os").environ.get("SMYTH_TEST_CAN", "250")),
        search_attributes=False,
        max_steps=4,
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        self.begin(input)
        cycles = int(input.metadata["cycles"])
        while self.data.get("cycle", 0) < cycles:
            await self.sleep(timedelta(hours=1), reason="next hourly check")
            cycle = self.data["cycle"] = self.data.get("cycle", 0) + 1
            answer = await self.respond(f"Cycle {cycle}: check ACME.")
            if cycle % 24 == 0:
                await self.remember(f"Day {cycle // 24}: {answer.content}", kind="daily")
            self.continue_as_new_if_needed()
        return self.finish(f"{cycles} cycles; last: {self.conversation.last_text()}")


@workflow.defn
class Concierge(AgentWorkflow):
    """An ordinary agent: ``run_agent`` serves both tasks and sessions."""

    config = AgentConfig(
        model="test-model",
        instructions="You are a concierge.",
        tools=[daily_report],
        search_attributes=False,
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)
