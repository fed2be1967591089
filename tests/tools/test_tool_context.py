"""``serving_tool_call``: the public way to set what ``tool_context()`` returns.

The tool activity used to set the tools package's private context variable itself
(``activities/tools.py`` imported ``tools._context._current``); it now goes through this
context manager, which a test can use too, to call a tool function without a worker.
"""

from __future__ import annotations

import pytest

from smyth_temporal import ToolContext, UserError, tool, tool_context
from smyth_temporal.tools import serving_tool_call


def _context(call_id: str) -> ToolContext:
    return ToolContext(
        tool_name="lookup",
        call_id=call_id,
        idempotency_key=f"wf-1/{call_id}",
        agent="Analyst",
        workflow_id="wf-1",
        run_id="run-1",
        step=1,
        tenant="acme",
        attempt=1,
    )


@tool
async def lookup(symbol: str) -> str:
    """Say which call looked a symbol up.

    Args:
        symbol: The symbol.
    """
    return f"{symbol} for {tool_context().call_id}"


@tool
def blocking_lookup(symbol: str) -> str:
    """The same, as a plain function (it runs in a thread).

    Args:
        symbol: The symbol.
    """
    return f"{symbol} for {tool_context().call_id}"


async def test_a_tool_function_reads_the_call_it_is_served_in() -> None:
    with serving_tool_call(_context("c-1")) as served:
        assert tool_context() is served
        assert await lookup(symbol="ACME") == "ACME for c-1"
        assert await blocking_lookup(symbol="ACME") == "ACME for c-1"
        with serving_tool_call(_context("c-2")):
            assert tool_context().call_id == "c-2"
        assert tool_context().call_id == "c-1"
    with pytest.raises(UserError, match="only available inside a tool"):
        tool_context()


def test_a_failing_call_leaves_no_context_behind() -> None:
    with pytest.raises(RuntimeError), serving_tool_call(_context("c-1")):
        raise RuntimeError("the tool failed")
    with pytest.raises(UserError):
        tool_context()
