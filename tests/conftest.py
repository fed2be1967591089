"""Test environment: one real Temporal dev server per session, a task queue per test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from smyth_temporal import AgentClient
from smyth_temporal.testing import new_task_queue, start_dev_environment
from tests.agents import LEDGER_ENV


@pytest.fixture(scope="session")
async def env() -> AsyncIterator[WorkflowEnvironment]:
    environment = await start_dev_environment()
    try:
        yield environment
    finally:
        await environment.shutdown()


@pytest.fixture
def client(env: WorkflowEnvironment) -> Client:
    return env.client


@pytest.fixture
def task_queue() -> str:
    return new_task_queue()


@pytest.fixture
def ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh tool-execution ledger, named in the environment for in-process tools."""
    path = tmp_path / "ledger.jsonl"
    monkeypatch.setenv(LEDGER_ENV, str(path))
    return path


@pytest.fixture
def agents(client: Client, task_queue: str) -> AgentClient:
    return AgentClient(client, task_queue=task_queue)
