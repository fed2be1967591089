"""The per-step timing the side-by-side benches share: a clocked scripted model, one run.

Not imported by workflow code (``_common.py`` is, and must stay free of the testing
package's servers), so it may use ``smyth_temporal.testing``.
"""

from __future__ import annotations

import time

from bench._common import BENCH_STEPS, StepBench
from smyth_temporal import AgentClient, AgentInput
from smyth_temporal.models import ModelRequest, ModelResponse
from smyth_temporal.testing import ScriptedModel, reply, tool_call


class TimedModel:
    """``StepBench``'s script (an echo call a step, then an answer); notes each call's time.

    Args:
        tool_bytes: Characters of filler each echo call carries (0: none).
    """

    def __init__(self, tool_bytes: int = 0) -> None:
        filler = f" {'x' * tool_bytes}" if tool_bytes else ""
        steps = [tool_call("echo", text=f"step {n}{filler}") for n in range(1, BENCH_STEPS + 1)]
        self._model = ScriptedModel([*steps, reply("done")])
        self.calls: list[float] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.calls.append(time.perf_counter())
        return await self._model.complete(request)


async def one_run(
    agents: AgentClient, model: TimedModel, *, tenant: str = "default"
) -> list[float]:
    """One ``StepBench`` run; the time between consecutive model calls (one per step)."""
    model.calls.clear()
    handle = await agents.start(StepBench, AgentInput(prompt="go", tenant=tenant))
    result = await agents.result(handle.id)
    assert result.steps == BENCH_STEPS + 1, result
    return [b - a for a, b in zip(model.calls, model.calls[1:], strict=False)]
