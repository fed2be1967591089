"""The run context: one ``Run`` for every component, the agent's hooks asked as documented.

``AgentWorkflow.__init__`` builds one ``Run`` and hands it to each component (no
callbacks); the ``tools`` hook is asked once per model turn; the building blocks that
forward to a component (``recall``, ``remember``, ``delegate``) keep its typed
keyword parameters, and ``AgentHooks`` (what components call) matches the agent.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from smyth_temporal import AgentClient, AgentInput, AgentWorkflow
from smyth_temporal.agent.delegation import Delegation
from smyth_temporal.agent.memory import AgentMemory
from smyth_temporal.agent.run import AgentHooks
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from tests.helpers.run_agents import CountingAnalyst


async def test_the_tools_hook_is_asked_once_per_turn(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    # Two calls in one turn, a read-only one and a side effect (two batches), then the
    # answer: before the run context, each call looked its tool up four times.
    order = {"symbol": "ACME", "quantity": 1}
    model = ScriptedModel(
        [
            [tool_call("get_quote", symbol="ACME"), tool_call("place_order", order=order)],
            reply("bought"),
        ]
    )
    async with agent_worker(client, CountingAnalyst, model=model, task_queue=task_queue):
        handle = await agents.start(CountingAnalyst, AgentInput(prompt="Buy ACME"))
        result = await agents.result(handle.id)
        state = await agents.state(handle.id)

    assert (result.status, result.output, result.usage.tool_calls) == ("completed", "bought", 2)
    assert state.data["asked_at"] == [0, 1]  # once before each of the two turns


@pytest.mark.parametrize(
    ("block", "forwards_to"),
    [
        (AgentWorkflow.recall, AgentMemory.recall),
        (AgentWorkflow.remember, AgentMemory.remember),
        (AgentWorkflow.delegate, Delegation.run),
    ],
    ids=lambda f: f.__qualname__,
)
def test_building_blocks_keep_the_typed_parameters_of_what_they_forward_to(
    block: Any, forwards_to: Any
) -> None:
    ours = inspect.signature(block).parameters.values()
    assert all(p.kind is not p.VAR_KEYWORD for p in ours), "no **options: typed keywords"
    theirs = inspect.signature(forwards_to).parameters.values()
    assert [(p.name, p.kind, p.default) for p in ours] == [
        (p.name, p.kind, p.default) for p in theirs
    ]


HOOKS = [name for name in dir(AgentHooks) if not name.startswith("_") and name != "data"]


@pytest.mark.parametrize("name", HOOKS)
def test_the_hooks_protocol_matches_the_agent(name: str) -> None:
    # Components call these through run.hooks: the protocol must say what the agent has.
    ours, theirs = getattr(AgentWorkflow, name), getattr(AgentHooks, name)
    if isinstance(theirs, property):
        assert isinstance(ours, property)
        return
    shape = [(p.name, p.kind, p.default) for p in inspect.signature(ours).parameters.values()]
    promised = inspect.signature(theirs).parameters.values()
    assert shape == [(p.name, p.kind, p.default) for p in promised]


def test_the_facade_wires_its_components_with_the_run_not_callbacks() -> None:
    source = textwrap.dedent(inspect.getsource(AgentWorkflow.__init__))
    body = ast.parse(source)
    assert not [n for n in ast.walk(body) if isinstance(n, ast.Lambda)]
    built = {
        n.func.id: n
        for n in ast.walk(body)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id[0].isupper()
    }
    components = {"MCPTools", "Approvals", "Inbox", "AgentMemory", "Compactor", "Loop"}
    components |= {"RunBounds", "Delegation", "ToolRunner", "Lifecycle"}
    assert components <= set(built)
    for name in components:  # each takes the run first
        first = built[name].args[0]
        assert isinstance(first, ast.Name) and first.id == "run", name
