"""``smyth state`` of a forked run."""

from __future__ import annotations

from smyth_temporal.cli._output import format_state
from smyth_temporal.types.agent import AgentState, ForkOrigin


def test_smyth_state_names_the_run_a_fork_was_forked_from() -> None:
    state = AgentState(
        agent="Analyst",
        workflow_id="fork-1",
        run_id="r",
        status="completed",
        step=5,
        max_steps=8,
        tenant="default",
        fork_of=ForkOrigin(workflow_id="Analyst-1", run_id="r0", step=2),
    )
    assert "forked   from Analyst-1 after step 2" in format_state(state).splitlines()
