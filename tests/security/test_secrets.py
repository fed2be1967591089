"""Secrets stay on the worker: resolved there, used there, and masked everywhere else."""

from __future__ import annotations

import base64
import contextlib
import io
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import structlog
from temporalio import workflow
from temporalio.client import Client, WorkflowHistory
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError

from smyth_temporal import (
    AgentClient,
    AgentConfig,
    AgentInput,
    AgentResult,
    AgentWorkflow,
    ConfigurationError,
    Message,
    SmythPlugin,
    ToolDefinitionError,
    secret,
    tool,
    tool_context,
)

with workflow.unsafe.imports_passed_through():
    from smyth_temporal import configure_logging
    from smyth_temporal.mcp import HttpServer
    from smyth_temporal.models import ModelRequest, ModelResponse, OpenAIProvider
    from smyth_temporal.security import EnvSecrets, FileSecrets, Secrets
    from smyth_temporal.testing import (
        FakeOpenAIServer,
        ScriptedModel,
        agent_worker,
        chat_completion,
        error_response,
        new_task_queue,
        reply,
        tool_call,
    )
    from smyth_temporal.tools import ToolContext
    from tests.helpers.cli_support import (
        assert_one_error_line,
        run_smyth,
        spawn_worker,
        stop_process,
    )
    from tests.helpers.mcp_servers import ProbeServer

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
    # A careless result, long enough to go to the payload store (2 KiB and up).
    return f"sunny in {city} (asked with key {key})" + " Details follow." * 150


@tool(secrets=["WEATHER_KEY"], retry=RetryPolicy(maximum_attempts=1))
async def broken_forecast(city: str) -> str:
    """A weather call that fails, quoting its key.

    Args:
        city: Where.
    """
    raise RuntimeError(f"401 for key {tool_context().secrets['WEATHER_KEY']}")


@tool(secrets=["WEATHER_KEY"])
async def refused_forecast(city: str) -> str:
    """A weather call the API refuses, quoting the key in message and details.

    Args:
        city: Where.
    """
    key = tool_context().secrets["WEATHER_KEY"]
    raise ApplicationError(f"key {key} refused", {"key": key}, non_retryable=True)


@workflow.defn
class Forecaster(AgentWorkflow):
    config = AgentConfig(
        model="test-model",
        tools=[forecast, broken_forecast, refused_forecast],
        mcp_servers=["probe"],
        max_steps=6,
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class WeatherAgent(AgentWorkflow):
    """For ``smyth worker`` processes: one tool with a secret, no MCP server."""

    config = AgentConfig(model="test-model", tools=[forecast], max_steps=3)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


def _tool_results(request: ModelRequest) -> ModelResponse:
    return reply(" | ".join(m.content or "" for m in request.messages if m.role == "tool"))


def weather_model() -> ScriptedModel:
    """For ``smyth worker --model``: ask the forecast, then answer with what it returned."""
    return ScriptedModel([tool_call("forecast", city="Lisbon"), _tool_results])


def _readable(history: WorkflowHistory) -> str:
    """The history as JSON, with every base64 field (payload data) also decoded."""
    document = history.to_json()
    texts = [document]

    def walk(node: object) -> None:
        if isinstance(node, dict):
            node = list(node.values())
        if isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, str):
            with contextlib.suppress(ValueError):
                texts.append(base64.b64decode(node, validate=True).decode("utf-8", "replace"))

    walk(json.loads(document))
    return "\n".join(texts)


# --- units ---------------------------------------------------------------------------


def test_a_reference_holds_a_name_only() -> None:
    ref = secret("GIT_TOKEN", format="Bearer {}")
    assert str(ref) == "secret(GIT_TOKEN)"
    assert ref.model_dump() == {"name": "GIT_TOKEN", "format": "Bearer {}"}
    for bad in ("lower", "1ABC", "A-B", ""):
        with pytest.raises(ValueError):
            secret(bad)
    with pytest.raises(ValueError, match="exactly one"):
        secret("A", format="no placeholder")
    with pytest.raises(ToolDefinitionError, match="list of names"):
        tool(secrets="WEATHER_KEY")(forecast.fn)  # type: ignore[arg-type]


def test_a_tool_context_never_shows_its_secrets() -> None:
    context = ToolContext(
        tool_name="forecast",
        call_id="c1",
        idempotency_key="k",
        agent="Forecaster",
        workflow_id="w",
        run_id="r",
        step=1,
        tenant="t",
        attempt=1,
        secrets={"WEATHER_KEY": "ctx-secret-value"},
    )
    assert context.secrets["WEATHER_KEY"] == "ctx-secret-value"
    assert "ctx-secret-value" not in repr(context) + context.model_dump_json()
    assert "secrets" not in context.model_dump()


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
    file.write_text("weather_key=x\n")
    with pytest.raises(ConfigurationError, match=":1: 'weather_key' is not a secret name"):
        FileSecrets(file)
    with pytest.raises(ConfigurationError, match="cannot allow \\['weather_key'\\]"):
        Secrets(allow=["weather_key"])


def test_a_secrets_file_of_lines_or_json(tmp_path: Path) -> None:
    lines = tmp_path / "lines"
    lines.write_text("A_KEY='quoted value'\nB_KEY=\"double\"\nC_KEY=a=b\n")
    lines.chmod(0o600)
    assert [FileSecrets(lines).get(n) for n in ("A_KEY", "B_KEY", "C_KEY")] == [
        "quoted value",
        "double",
        "a=b",
    ]
    document = tmp_path / "secrets.json"
    document.write_text(json.dumps({"WEATHER_KEY": "from-json"}))
    document.chmod(0o600)
    assert FileSecrets(document).get("WEATHER_KEY") == "from-json"
    document.write_text('{"WEATHER_KEY": 12}')
    with pytest.raises(ConfigurationError, match="a JSON object of names to string values"):
        FileSecrets(document)
    document.write_text('{"WEATHER_KEY": "sk-leaky",')
    with pytest.raises(ConfigurationError, match="not valid JSON") as refused:
        FileSecrets(document)
    assert "sk-leaky" not in str(refused.value)


def test_a_worker_checks_at_start_that_it_has_what_its_tools_declare() -> None:
    secrets = Secrets([EnvSecrets({"WEATHER_KEY": "v"})])
    with pytest.raises(ConfigurationError, match=r"\['GIT_TOKEN'\] are used .* but not set"):
        secrets.restrict({"WEATHER_KEY", "GIT_TOKEN"})
    assert secrets.restrict({"WEATHER_KEY"}).allowed == {"WEATHER_KEY"}


async def test_a_model_error_quoting_the_key_reaches_no_history(
    fake: FakeOpenAIServer,
) -> None:
    key = "mk-echoed-by-a-proxy-0123"
    provider = OpenAIProvider(
        base_url=fake.base_url,
        api_key=secret("PROXY_KEY"),
        secrets=Secrets([EnvSecrets({"PROXY_KEY": key})]),
    )
    fake.enqueue(error_response(401, f"invalid key {key}"))
    request = ModelRequest(model="m", messages=[Message(role="user", content="hi")])
    with pytest.raises(ApplicationError) as raised:
        await provider.complete(request)
    assert raised.value.message.endswith("invalid key [secret:PROXY_KEY]")
    assert raised.value.__cause__ is None  # the openai error quoted it whole


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
    # No encryption: masking alone must keep the values out of history and the store.
    for name in ("SMYTH_ENCRYPTION_KEYS", "SMYTH_ENCRYPTION_KEY_FILE", "SMYTH_ENV"):
        monkeypatch.delenv(name, raising=False)
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
        chat_completion(tool_calls=[("c4", "refused_forecast", {"city": "Faro"})]),
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
    assert "key [secret:WEATHER_KEY] refused" in model_input  # the tool's own error
    assert "[secret:WEATHER_KEY]" in logs.getvalue()  # the careless log line, masked

    history = _readable(await client.get_workflow_handle(handle.id).fetch_history())
    stored = b"".join(p.read_bytes() for p in store.rglob("*") if p.is_file())
    # Both were searched with something in them: the long result went to the store,
    # the short ones and the failures stayed in history, masked.
    assert b"asked with key [secret:WEATHER_KEY]" in stored
    assert "401 for key [secret:WEATHER_KEY]" in history
    assert "you sent [secret:GIT_TOKEN]" in history
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


# --- smyth worker --------------------------------------------------------------------


def test_smyth_worker_refuses_bad_secret_options(tmp_path: Path, address: str) -> None:
    file = tmp_path / "worker.secrets"
    file.write_text(f"WEATHER_KEY={WEATHER_KEY}\n")
    file.chmod(0o644)
    worker = ("worker", "tests.security.test_secrets:WeatherAgent", "--address", address)
    queue = (
        "--model",
        "tests.security.test_secrets:weather_model",
        "--task-queue",
        new_task_queue(),
    )
    refused = run_smyth(*worker, "--secrets-file", str(file))
    assert_one_error_line(refused, f"the secrets file {file} is readable by others; chmod 600")
    assert WEATHER_KEY not in refused.err
    file.chmod(0o600)
    refused = run_smyth(*worker, "--secrets-file", str(file), "--allow-secret", "weather_key")
    assert_one_error_line(refused, "cannot allow ['weather_key']")
    # The agent's tool declares WEATHER_KEY: a worker allowed only another stops at start.
    refused = run_smyth(*worker, *queue, "--secrets-file", str(file), "--allow-secret", "GIT_TOKEN")
    assert_one_error_line(refused, "secrets ['WEATHER_KEY'] are used by this worker's tools")
    file.write_text("GIT_TOKEN=x\n")  # and the environment has it empty: not a value
    refused = run_smyth(*worker, *queue, "--secrets-file", str(file), env={"WEATHER_KEY": ""})
    assert_one_error_line(refused, "secrets ['WEATHER_KEY'] are used by this worker's tools")
    assert "but not set" in refused.err


async def test_smyth_worker_serves_a_secret_from_its_file(
    client: Client, address: str, task_queue: str, tmp_path: Path
) -> None:
    file = tmp_path / "worker.secrets"
    file.write_text(f"WEATHER_KEY={WEATHER_KEY}\n")
    file.chmod(0o600)
    log = tmp_path / "worker.log"
    process = spawn_worker(
        ["tests.security.test_secrets:WeatherAgent"],
        model="tests.security.test_secrets:weather_model",
        address=address,
        task_queue=task_queue,
        log=log,
        args=["--secrets-file", str(file), "--allow-secret", "WEATHER_KEY"],
    )
    try:
        agents = AgentClient(client, task_queue=task_queue)
        handle = await agents.start(WeatherAgent, "Weather in Lisbon?")
        result = await agents.result(handle.id)
    finally:
        stop_process(process)
    # The tool got the file's value (the model saw it masked), and the log masks it too.
    assert result.output.startswith("sunny in Lisbon (asked with key [secret:WEATHER_KEY])")
    assert "[secret:WEATHER_KEY]" in log.read_text()
    history = _readable(await client.get_workflow_handle(handle.id).fetch_history())
    assert WEATHER_KEY not in result.output + log.read_text() + history
