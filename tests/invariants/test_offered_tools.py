"""A model turn asks the agent's ``tools`` hook once, whatever calls the model made.

``think`` asks the hook for the turn it takes (``Run.tools(turn, fresh=True)``); every
call of that turn finds its tool in the same list: the approvals asked first, the
batching of read-only calls, each call's lookup. Searched over turns of known, unknown
and malformed calls, read-only and side-effecting, past the per-turn cap, with and
without an interrupt, against the real ``ToolRunner`` and ``Approvals`` (a stand-in
agent and executor; no server: nothing here waits for Temporal).
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from smyth_temporal import AgentConfig, tool
from smyth_temporal.agent.approvals import Approvals
from smyth_temporal.agent.conversation import assign_call_ids
from smyth_temporal.agent.tooling import ToolRunner
from smyth_temporal.tools import Tool
from smyth_temporal.types import AgentInput, Interrupt, ToolCall
from tests.helpers.runs import bare_run


@tool
async def lookup(key: str) -> str:
    """Look something up."""
    return key


@tool(effect="side_effect")
async def note(text: str) -> str:
    """Write a note."""
    return text


TOOLS = [dataclasses.replace(t, executor="fake") for t in (lookup, note)]

CALLS = st.lists(
    st.tuples(
        st.sampled_from(["lookup", "note", "nope"]),
        st.sampled_from(['{"key": "k"}', '{"text": "t"}', "{", "", '{"key": 3}']),
    ),
    max_size=12,
)


async def execute(spec: Tool, call: ToolCall, arguments: dict[str, Any]) -> str:
    return f"ran {spec.name}"


@given(turns=st.lists(st.tuples(CALLS, st.booleans()), min_size=1, max_size=3))
async def test_each_turn_asks_for_its_tools_once(turns: list[tuple[list[Any], bool]]) -> None:
    run = bare_run(AgentConfig(model="m", tools=TOOLS), input=AgentInput(tenant="t"))
    approvals = Approvals(
        run, on_change=lambda: None, clock=lambda: datetime(2026, 11, 26, tzinfo=UTC)
    )
    runner = ToolRunner(
        run,
        approvals,
        executors={"fake": execute},
        workflow_id=lambda: "wf",
        first_run_id=lambda: "r",
        max_calls=6,  # turns of up to 12 calls: the cap's unrun answers are searched too
        patched=lambda _: True,
    )
    hooks: Any = run.hooks
    hooks.call = runner.call
    for number, (calls, interrupted) in enumerate(turns, start=1):
        run.tools(number, fresh=True)  # what think asks, for the turn it takes
        run.conversation.step = number  # the model answered: the turn is taken
        run.interrupts.pending = Interrupt(reason="stop") if interrupted else None
        made = [ToolCall(id="", name=name, arguments=arguments) for name, arguments in calls]
        results = await runner.act(assign_call_ids(made, number))

        assert hooks.asked == number  # once per turn, however many calls it made
        assert len(results) == len(made)  # every call is answered
