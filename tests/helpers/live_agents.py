"""An agent and a model for the interrupt and double-texting tests.

``GatedModel`` holds chosen model turns until the test releases them (or an interrupt
cancels them), so a test can act while the agent is thinking.
"""

from __future__ import annotations

import asyncio

from temporalio import workflow

from smyth_temporal import AgentConfig, AgentInput, AgentResult, AgentWorkflow, tool
from tests.helpers.agents import get_quote, record, slow_lookup
from tests.helpers.trading import sell

with workflow.unsafe.imports_passed_through():
    from smyth_temporal.models import ModelRequest, ModelResponse, TextSink
    from smyth_temporal.testing import ScriptedModel, ScriptStep


@tool(effect="side_effect")
async def slow_transfer(amount: int, seconds: float = 1.0) -> str:
    """Move money slowly (a side effect that must not be abandoned half-way)."""
    record("slow_transfer.start", amount=amount)
    await asyncio.sleep(seconds)
    record("slow_transfer.end", amount=amount)
    return f"transferred {amount}"


@workflow.defn
class Operator(AgentWorkflow):
    """Runs tasks and sessions with quick, slow and approval-gated tools."""

    config = AgentConfig(
        model="test-model",
        instructions="You operate the desk.",
        tools=[get_quote, slow_lookup, slow_transfer, sell],
        max_steps=10,
        search_attributes=False,
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


class GatedModel:
    """A scripted model whose ``held`` calls wait for ``release`` (or cancellation).

    Calls are counted from 1 in the order they arrive, not by step: a turn cut short by
    an interrupt is asked again at the same step, and that second call must not wait.
    """

    def __init__(self, steps: list[ScriptStep], *, held: set[int]) -> None:
        self.script = ScriptedModel(steps)
        self.held = held
        self.release = asyncio.Event()
        self.waiting: set[int] = set()
        self.cancelled: list[int] = []
        self.calls = 0

    @property
    def requests(self) -> list[ModelRequest]:
        return self.script.requests

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        call = self.calls
        if call in self.held:
            self.waiting.add(call)
            try:
                await self.release.wait()
            except asyncio.CancelledError:
                self.cancelled.append(call)
                raise
            finally:
                self.waiting.discard(call)
        return await self.script.complete(request)


class HalfWritten(ScriptedModel):
    """Streams each answer's first word, then holds the rest until ``release``."""

    def __init__(self, steps: list[ScriptStep]) -> None:
        super().__init__(steps)
        self.release = asyncio.Event()
        self.written = asyncio.Event()
        """Set once the first word is handed over."""

    async def stream(self, request: ModelRequest, on_text: TextSink) -> ModelResponse:
        response = await self.complete(request)
        first, _, rest = (response.message.content or "").partition(" ")
        on_text(f"{first} ")
        self.written.set()
        await self.release.wait()
        on_text(rest)
        return response
