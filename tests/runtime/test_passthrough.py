"""Workers share the modules of their agents' tools and types between sandboxed runs."""

from __future__ import annotations

import datetime

from temporalio.client import Client
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from smyth_temporal import AgentWorkflow, SmythPlugin, Tool, tool
from smyth_temporal._passthrough import shared_modules
from smyth_temporal.testing import ScriptedModel, agent_worker
from tests.helpers import tool_identity, trading
from tests.helpers.agents import Analyst, Rater
from tests.helpers.tool_identity import ModuleIdentity
from tests.helpers.trader import Trader


@tool
async def days_until(day: datetime.date, orders: list[trading.Order] | None = None) -> int:
    """Days from today to a date."""
    return 0


def tools_of(*agents: type[AgentWorkflow]) -> list[Tool]:
    return [t for agent in agents for t in agent.config.tools]


def test_the_modules_of_tools_and_their_types_are_shared() -> None:
    # Analyst's tools, Trader's Order and Rater's output type all live in tests.helpers.trading.
    agents = [Analyst, Trader, Rater]
    assert shared_modules(agents, tools_of(*agents)) == ["tests.helpers.trading"]


def test_argument_types_are_found_inside_generics_and_the_stdlib_is_left_alone() -> None:
    # Order is found inside list[...] | None; datetime is temporalio's to pass through;
    # this module, where the tool is defined, imports workflows (Analyst...): per run.
    assert shared_modules([], [days_until]) == ["tests.helpers.trading"]


def test_a_module_that_defines_or_imports_a_workflow_stays_per_run() -> None:
    # Trader's tools live beside it (per run); buy's Order comes from tests.helpers.trading.
    assert shared_modules([Trader], Trader.config.tools) == ["tests.helpers.trading"]
    assert "tests.helpers.tool_identity" not in shared_modules(
        [ModuleIdentity], [tool_identity.size_order]
    )


def test_passthrough_modules_are_added_to_the_sandbox() -> None:
    plugin = SmythPlugin(
        model=ScriptedModel([]),
        payload_storage=None,
        passthrough_modules=["tests.helpers.cli_models"],
    )
    config = plugin.configure_worker({"task_queue": "q", "workflows": [Analyst]})
    runner = config["workflow_runner"]
    assert isinstance(runner, SandboxedWorkflowRunner)
    shared = runner.restrictions.passthrough_modules
    assert {"tests.helpers.cli_models", "tests.helpers.trading", "smyth_temporal.agent"} <= shared
    assert "tests.helpers.agents" not in shared


async def test_a_sandboxed_run_uses_the_workers_copy_of_a_shared_module(
    client: Client, task_queue: str
) -> None:
    """Each run imports the agent's module afresh, but not the module of its tools' types."""
    async with agent_worker(client, ModuleIdentity, model=ScriptedModel([]), task_queue=task_queue):
        seen = [
            await client.execute_workflow(
                ModuleIdentity.run, id=f"module-identity-{n}-{task_queue}", task_queue=task_queue
            )
            for n in range(2)
        ]
    for order, agent in seen:
        assert order == id(trading.Order)  # not built again for the run
        assert agent != id(ModuleIdentity)  # the workflow's own module is the run's
