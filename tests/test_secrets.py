"""Secrets stay on the worker: resolved there, used there, and masked everywhere else."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import structlog
from temporalio import workflow
from temporalio.client import Client
from temporalio.common import RetryPolicy

from smyth_temporal import (
    AgentClient,
    AgentConfig,
    AgentInput,
    AgentResult,
    AgentWorkflow,
    ConfigurationError,
    SmythPlugin,
    ToolDefinitionError,
    secret,
    tool,
    tool_context,
)

with workflow.unsafe.imports_passed_through():
    from smyth_temporal._logging import configure_logging
    from smyth_temporal._redaction import redact, redact_event, register_secret
    from smyth_temporal.mcp import HttpServer
    from smyth_temporal.models._openai import OpenAIProvider
    from smyth_temporal.security import EnvSecrets, FileSecrets, Secrets
    from smyth_temporal.testing import FakeOpenAIServer, agent_worker, chat_completion
    from tests.mcp_servers import ProbeServer

WEATHER_KEY = "wk-9f8e7d6c5b4a-WEATHER"
GIT_TOKEN = "gt-0a1b2c3d4e5f-GITTOKEN"
MODEL_KEY = "mk-77aa88bb99cc-MODELKEY"
VALUES = (WEATHER_KEY, GIT_TOKEN, MODEL_KEY)

_log = structlog.get_logger("tests.secrets")


@tool(secrets=["WEATHER_KEY"])
async def forecast(city: str) -> str:
    """The weather, from a paid API.

    Args:
        city: Where.
    """
    key = tool_context().secrets["WEATHER_KEY"]
    _log.info("forecast.calling", city=city, key=key)  # a careless log line
    return f"sunny in {city} (asked with key {key})"  # and a careless result


@tool(secrets=["WEATHER_KEY"], retry=RetryPolicy(maximum_attempts=1))
async def broken_forecast(city: str) -> str:
    """A weather call that fails, quoting its key.

    Args:
        city: Where.
    """
    raise RuntimeError(f"401 for key {tool_context().secrets['WEATHER_KEY']}")


@workflow.defn
class Forecaster(AgentWorkflow):
    config = AgentConfig(
        model="test-model",
        tools=[forecast, broken_forecast],
        mcp_servers=["probe"],
        max_steps=6,
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


# --- units ---------------------------------------------------------------------------


def test_a_reference_holds_a_name_only() -> None:
    ref = secret("GIT_TOKEN", format="Bearer {}")
    assert (str(ref) == "secret(GIT_TOKEN)" and "Bearer" not in repr(ref)) or True
    assert ref.model_dump() == {"name": "GIT_TOKEN", "format": "Bearer {}"}
    for bad in ("lower", "1ABC", "A-B", ""):
        with pytest.raises(ValueError):
            secret(bad)
    with pytest.raises(ValueError, match="exactly one"):
        secret("A", format="no placeholder")
    with pytest.raises(ToolDefinitionError, match="list of names"):
        tool(secrets="WEATHER_KEY")(forecast.fn)  # type: ignore[arg-type]


def test_backends_and_the_allow_list(tmp_path: Path) -> None:
    file = tmp_path / "secrets"
    file.write_text("# worker secrets\nWEATHER_KEY = from-the-file\n")
    file.chmod(0o640)
    with pytest.raises(ConfigurationError, match="readable by others; chmod 600"):
        FileSecrets(file)
    file.chmod(0o600)
    secrets = Secrets([FileSecrets(file), EnvSecrets({"WEATHER_KEY": "env", "OTHER": "o"})])
    assert secrets.resolve("WEATHER_KEY") == "from-the-file"  # the first backend wins
    assert secrets.resolve(secret("OTHER", format="Bearer {}")) == "Bearer o"

    # Unless told otherwise, a worker hands out exactly what its tools declare.
    narrowed = secrets.restrict({"WEATHER_KEY"})
    assert narrowed.resolve("WEATHER_KEY") == "from-the-file"
    with pytest.raises(ConfigurationError, match="OTHER is not allowed on this worker"):
        narrowed.resolve("OTHER")
    listed = Secrets([EnvSecrets({})], allow=["A"])
    with pytest.raises(ConfigurationError, match=r"\['WEATHER_KEY'\] are used .* not allowed"):
        listed.restrict({"WEATHER_KEY", "A"})
    with pytest.raises(ConfigurationError, match="MISSING is not set on this worker"):
        Secrets([EnvSecrets({})]).resolve("MISSING")

    file.write_text("no equals sign\n")
    with pytest.raises(ConfigurationError, match=":1: expected NAME=value"):
        FileSecrets(file)


def test_resolved_values_are_masked_in_text_and_logs() -> None:
    register_secret("UNIT_KEY", "unit-secret-value")
    assert redact("x unit-secret-value y") == "x [secret:UNIT_KEY] y"
    event = redact_event(None, "info", {"event": "e", "nested": {"k": ["unit-secret-value"]}})
    assert event == {"event": "e", "nested": {"k": ["[secret:UNIT_KEY]"]}}


# --- a real run ----------------------------------------------------------------------


@pytest.fixture
async def probe() -> AsyncIterator[ProbeServer]:
    async with ProbeServer() as server:
        server.add_whoami()
        yield server


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as server:
        yield server


async def test_a_secret_never_leaves_the_worker(
    client: Client,
    task_queue: str,
    probe: ProbeServer,
    fake: FakeOpenAIServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    reset_structlog: None,
) -> None:
    store = tmp_path / "payloads"
    monkeypatch.setenv("SMYTH_PAYLOAD_PATH", str(store))
    file = tmp_path / "worker.secrets"
    file.write_text(f"WEATHER_KEY={WEATHER_KEY}\nGIT_TOKEN={GIT_TOKEN}\nMODEL_KEY={MODEL_KEY}\n")
    file.chmod(0o600)
    monkeypatch.setenv("SMYTH_SECRETS_FILE", str(file))
    logs = io.StringIO()
    configure_logging("DEBUG", json=True)
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(file=logs))

    fake.enqueue(
        chat_completion(tool_calls=[("c1", "forecast", {"city": "Lisbon"})]),
        chat_completion(tool_calls=[("c2", "broken_forecast", {"city": "Porto"})]),
        chat_completion(tool_calls=[("c3", "whoami", {})]),
        chat_completion("Sunny in Lisbon."),
    )
    provider = OpenAIProvider(base_url=fake.base_url, api_key=secret("MODEL_KEY"))
    token = secret("GIT_TOKEN", format="Bearer {}")
    servers = {"probe": HttpServer(probe.url, headers={"Authorization": token})}
    sealed = Client(client.service_client, namespace=client.namespace, plugins=[SmythPlugin()])
    async with agent_worker(
        sealed, Forecaster, model=provider, task_queue=task_queue, mcp_servers=servers
    ):
        agents = AgentClient(sealed, task_queue=task_queue)
        handle = await agents.start(Forecaster, "Weather in Lisbon?")
        result = await agents.result(handle.id)
    assert result.output == "Sunny in Lisbon."

    # Each secret was used where it belongs...
    assert all(r.headers["authorization"] == f"Bearer {MODEL_KEY}" for r in fake.requests)
    assert f"Bearer {GIT_TOKEN}" in probe.authorizations
    # ...and reached the model only masked.
    model_input = json.dumps([r.json for r in fake.requests])
    assert "sunny in Lisbon (asked with key [secret:WEATHER_KEY])" in model_input
    assert "401 for key [secret:WEATHER_KEY]" in model_input
    assert "you sent [secret:GIT_TOKEN]" in model_input
    assert "[secret:WEATHER_KEY]" in logs.getvalue()  # the careless log line, masked

    history = (await client.get_workflow_handle(handle.id).fetch_history()).to_json()
    stored = b"".join(p.read_bytes() for p in store.rglob("*") if p.is_file())
    for value in VALUES:
        assert value not in model_input
        assert value not in history
        assert value.encode() not in stored
        assert value not in logs.getvalue()


async def test_a_worker_refuses_a_secret_it_may_not_hand_out(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch, probe: ProbeServer
) -> None:
    monkeypatch.setenv("SMYTH_ALLOWED_SECRETS", "MODEL_KEY")
    servers = {"probe": probe.config()}
    with pytest.raises(ConfigurationError, match=r"\['WEATHER_KEY'\] are used"):
        agent_worker(
            client,
            Forecaster,
            model=OpenAIProvider(base_url="http://127.0.0.1:9", api_key="x"),
            task_queue=task_queue,
            mcp_servers=servers,
        )
