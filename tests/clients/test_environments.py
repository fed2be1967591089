"""Environments: staging and production on one server, the same agent class, no crossing."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from smyth_temporal import AgentClient, AgentInput, AgentNotFoundError, SmythPlugin
from smyth_temporal.devserver import dev_server_command, register_search_attributes
from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.settings import Settings, current_environment
from smyth_temporal.testing import (
    ScriptedModel,
    agent_worker,
    reply,
    start_dev_environment,
    tool_call,
)
from tests.helpers.memory_agents import Researcher

ENVIRONMENTS = ("staging", "production")


def test_the_environment_picks_the_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SMYTH_ENV", "TEMPORAL_PROFILE", "TEMPORAL_NAMESPACE"):
        monkeypatch.delenv(name, raising=False)
    assert current_environment() is None and Settings.load().namespace == "default"
    monkeypatch.setenv("SMYTH_ENV", "staging")
    settings = Settings.load()
    assert (settings.environment, settings.namespace) == ("staging", "smyth-staging")
    # A namespace named explicitly (flag or TEMPORAL_NAMESPACE) wins over the default.
    assert Settings.load(namespace="ops").namespace == "ops"
    monkeypatch.setenv("TEMPORAL_NAMESPACE", "team-staging")
    assert Settings.load().namespace == "team-staging"
    # A temporal.toml profile names the environment when SMYTH_ENV does not.
    assert current_environment({"TEMPORAL_PROFILE": "prod"}) == "prod"
    assert current_environment({"TEMPORAL_PROFILE": "default"}) is None
    for bad in ("Prod", "a b", "x" * 40, "../up"):
        with pytest.raises(ConfigurationError, match="lowercase letters"):
            current_environment({"SMYTH_ENV": bad})


def test_smyth_dev_creates_every_environment_namespace(tmp_path: Path) -> None:
    command = dev_server_command(
        port=7233,
        ui_port=8233,
        db_path=tmp_path / "db",
        namespace="smyth-staging",
        extra_namespaces=["smyth-production", "smyth-staging"],
    )
    created = [command[i + 1] for i, arg in enumerate(command) if arg == "--namespace"]
    assert created == ["smyth-staging", "smyth-production"]


@pytest.fixture(scope="module")
async def shared_server() -> AsyncIterator[WorkflowEnvironment]:
    extra = [arg for name in ENVIRONMENTS for arg in ("--namespace", f"smyth-{name}")]
    environment = await start_dev_environment(extra_args=extra)
    try:
        yield environment
    finally:
        await environment.shutdown()


async def test_staging_and_production_never_cross(
    shared_server: WorkflowEnvironment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the default stores, per environment, under .smyth/
    for name in ("SMYTH_PAYLOAD_PATH", "SMYTH_MEMORY_PATH", "TEMPORAL_NAMESPACE", "QDRANT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SMYTH_PAYLOAD_THRESHOLD", "0")  # every payload to the store
    address = str(shared_server.client.service_client.config.target_host)
    sides: dict[str, tuple[AgentClient, ScriptedModel]] = {}
    async with contextlib.AsyncExitStack() as stack:
        for name in ENVIRONMENTS:
            monkeypatch.setenv("SMYTH_ENV", name)
            settings = Settings.load(address=address, task_queue="agents")  # one queue name
            client = await Client.connect(
                address, namespace=settings.namespace, plugins=[SmythPlugin()]
            )
            await register_search_attributes(client)
            model = ScriptedModel(
                [tool_call("remember", text=f"the {name} launch plan", kind="fact"), reply(name)]
            )
            # The same agent class, the same task queue name, one server.
            await stack.enter_async_context(
                agent_worker(client, Researcher, model=model, task_queue="agents")
            )
            sides[name] = (AgentClient(client, task_queue="agents"), model)

        ids = {}
        for name, (agents, _) in sides.items():
            handle = await agents.start(Researcher, AgentInput(prompt="Plan.", tenant="t1"))
            assert (await agents.result(handle.id)).output == name
            ids[name] = handle.id

        staging, production = sides["staging"][0], sides["production"][0]
        # Each run was served by its own environment's worker and model only.
        assert all(len(model.requests) == 2 for _, model in sides.values())
        # Neither environment can see the other's runs...
        with pytest.raises(AgentNotFoundError):
            await production.state(ids["staging"])
        with pytest.raises(AgentNotFoundError):
            await staging.state(ids["production"])
        # ...nor its memories, even for the same tenant and memory namespace.
        for agents, name in ((staging, "staging"), (production, "production")):
            hits = await agents.memory.search(
                "launch plan", tenant="t1", namespace="research", kinds=["fact"]
            )
            assert [h.record.text for h in hits] == [f"the {name} launch plan"]

    # Stored payloads and embedded memory sit in each environment's own directory.
    for name in ENVIRONMENTS:
        assert any((tmp_path / ".smyth" / "payloads" / name).rglob("*")), name
        assert (tmp_path / ".smyth" / "memory" / name).is_dir()
    assert {p.name for p in (tmp_path / ".smyth" / "payloads").iterdir()} == set(ENVIRONMENTS)
