"""``smyth rewind``: the same run back to a step, with the side effects it cannot undo."""

from __future__ import annotations

import asyncio
from pathlib import Path

from temporalio.client import Client

from smyth_temporal import AgentClient
from smyth_temporal.models import ModelRequest, ModelResponse
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from tests.helpers.cli_support import run_smyth
from tests.helpers.rewind_agents import Mailer

NEW_COURSE = "Do not mail anyone: just say what ACME trades at."


def mail(request: ModelRequest) -> ModelResponse:
    if any(m.content == NEW_COURSE for m in request.messages):
        return reply("ACME trades at 101.")
    return {
        1: tool_call("get_quote", symbol="ACME"),
        2: tool_call("send_email", to="ceo", text="ACME"),
    }.get(request.step) or reply("mailed")


async def test_smyth_rewind_goes_on_with_the_prompt_and_lists_the_side_effects_it_cannot_undo(
    client: Client, agents: AgentClient, task_queue: str, address: str, ledger: Path
) -> None:
    model = ScriptedModel([mail] * 6)
    env = {"TEMPORAL_ADDRESS": address, "SMYTH_TASK_QUEUE": task_queue}
    async with agent_worker(client, Mailer, model=model, task_queue=task_queue):
        handle = await agents.start(Mailer, "Mail the CEO about ACME")
        await agents.result(handle.id)
        args = ["rewind", handle.id, "--to-step", "1", "--prompt", NEW_COURSE]
        agent = "--agent=tests.helpers.rewind_agents:Mailer"
        outcome = await asyncio.to_thread(run_smyth, *args, agent, env=env)
        result = await agents.result(handle.id)
        state = await agents.state(handle.id)

    assert outcome.code == 0, outcome.err
    first, heading, email = outcome.out.splitlines()
    assert first.startswith(
        f"rewound {handle.id} to step 1: run {state.run_id} goes on from step 2"
    )
    assert heading == "side effects after step 1 that a rewind cannot undo:"
    assert email.startswith("  step 2  send_email  completed  key ")
    assert email.endswith("result: sent to ceo")
    assert (result.output, result.steps) == ("ACME trades at 101.", 2)
