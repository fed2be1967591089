"""The worker runtime: loading agents and model providers, serving them in-process."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from pathlib import Path

import pytest
from structlog.testing import capture_logs
from temporalio import workflow
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from smyth_temporal import (
    AgentClient,
    AgentConfig,
    AgentInput,
    AgentResult,
    AgentWorkflow,
    ConfigurationError,
    ServerUnavailableError,
    Settings,
    UnknownAgentError,
)
from smyth_temporal.models import (
    ModelRequest,
    ModelResponse,
    ModelRouter,
    OpenAIProvider,
    ProviderPrefixes,
)
from smyth_temporal.testing import ScriptedModel, new_task_queue, reply
from smyth_temporal.worker import load_agent, load_agents, load_model_provider, run_worker
from tests.helpers.agents import Analyst, Summarizer
from tests.helpers.cli_support import free_port


class Undecorated(Analyst):
    """Inherits Analyst's workflow definition but was never decorated itself."""


@workflow.defn
class NoConfig(AgentWorkflow):
    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn(name="Analyst")
class AnalystImpostor(AgentWorkflow):
    config = AgentConfig(model="test-model")

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


class EchoModel:
    """A provider class with no constructor arguments: the class itself is a factory."""

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return reply(request.messages[-1].content or "")


class NotAProvider:
    def complete(self, request: object) -> object:  # not async
        return request


def provider_factory(model: str) -> ScriptedModel:  # needs an argument
    return ScriptedModel([reply(model)])


scripted_instance = ScriptedModel([reply("hi")])
routes = {"test-*": scripted_instance}


pytestmark = pytest.mark.usefixtures("reset_structlog")


# -- load_agents ---------------------------------------------------------------------


def test_load_agents_imports_classes_in_order_once() -> None:
    specs = [
        "tests.helpers.agents:Summarizer",
        "tests.helpers.agents:Analyst",
        "tests.helpers.agents:Summarizer",
    ]
    assert load_agents(specs) == [Summarizer, Analyst]


def test_missing_module_is_named() -> None:
    with pytest.raises(UnknownAgentError, match=r"no module named 'nope'"):
        load_agent("nope.workflows:Agent")


def test_missing_attribute_lists_the_agents_there() -> None:
    with pytest.raises(UnknownAgentError) as caught:
        load_agent("tests.helpers.agents:Analist")
    message = str(caught.value)
    assert "has no attribute 'Analist'" in message
    assert "agents there: Analyst, Counter, Desk, Rater, Summarizer" in message


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("tests.helpers.agents:PRICES", "is not an agent"),
        ("tests.helpers.agents:get_quote", "is not an agent"),
        ("tests.runtime.test_worker_runtime:Undecorated", "not decorated with @workflow.defn"),
        ("tests.runtime.test_worker_runtime:NoConfig", "has no `config"),
        ("tests.helpers.agents", "expected module:attr"),
        ("Analyst", "expected module:attr"),
    ],
)
def test_things_that_are_not_agents_are_refused(spec: str, expected: str) -> None:
    with pytest.raises(UnknownAgentError, match=expected):
        load_agent(spec)


def test_two_classes_with_one_workflow_name_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="both register the workflow name 'Analyst'"):
        load_agents(
            ["tests.helpers.agents:Analyst", "tests.runtime.test_worker_runtime:AnalystImpostor"]
        )


def test_no_agents_is_an_error() -> None:
    with pytest.raises(UnknownAgentError, match="no agent given"):
        load_agents([])


def test_agents_import_from_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "checkout_agents"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "workflows.py").write_text(
        textwrap.dedent(
            """
            from temporalio import workflow
            from smyth_temporal import AgentConfig, AgentInput, AgentResult, AgentWorkflow

            @workflow.defn
            class Helper(AgentWorkflow):
                config = AgentConfig(model="m")

                @workflow.run
                async def run(self, input: AgentInput) -> AgentResult:
                    return await self.run_agent(input)
            """
        )
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    try:
        [helper] = load_agents(["checkout_agents.workflows:Helper"])
        assert helper.__name__ == "Helper"
        assert sys.path[0] == str(tmp_path)
    finally:
        for name in [m for m in sys.modules if m.startswith("checkout_agents")]:
            del sys.modules[name]


# -- load_model_provider ---------------------------------------------------------------


def test_openai_without_a_key_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        load_model_provider("openai")


def test_openai_with_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    routes = load_model_provider("openai")
    assert isinstance(routes, ProviderPrefixes)
    provider, name = routes.resolve("gpt-4o")
    assert (type(provider), name) == (OpenAIProvider, "gpt-4o")
    assert provider.base_url.startswith("http://127.0.0.1:9/v1")


def test_a_factory_an_instance_and_a_mapping_are_providers() -> None:
    assert isinstance(load_model_provider("tests.helpers.cli_models:scripted"), ScriptedModel)
    assert (
        load_model_provider("tests.runtime.test_worker_runtime:scripted_instance")
        is scripted_instance
    )
    assert isinstance(load_model_provider("tests.runtime.test_worker_runtime:routes"), ModelRouter)
    assert isinstance(load_model_provider("tests.runtime.test_worker_runtime:EchoModel"), EchoModel)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("tests.helpers.cli_models:not_a_provider", "has no `async def complete"),
        ("tests.runtime.test_worker_runtime:NotAProvider", "has no `async def complete"),
        ("tests.runtime.test_worker_runtime:provider_factory", "callable without arguments"),
        ("tests.helpers.cli_models:missing", "has no attribute 'missing'"),
        ("nope_models:provider", "no module named 'nope_models'"),
        ("anthropic-ish", "use 'openai' or 'module:attr'"),
    ],
)
def test_unusable_model_providers_are_refused(spec: str, expected: str) -> None:
    with pytest.raises(ConfigurationError, match=expected):
        load_model_provider(spec)


# -- run_worker ------------------------------------------------------------------------


async def test_run_worker_serves_agents_until_stopped(
    env: WorkflowEnvironment, address: str
) -> None:
    task_queue = new_task_queue()
    settings = Settings(address=address, task_queue=task_queue)
    stop = asyncio.Event()
    ready = asyncio.Event()
    model = ScriptedModel([reply("served in-process")])
    with capture_logs() as logs:
        worker = asyncio.create_task(
            run_worker(
                [Analyst],
                settings=settings,
                model=model,
                max_cached_workflows=10,
                ready=ready.set,
                stop=stop,
            )
        )
        await asyncio.wait_for(ready.wait(), timeout=15)
        # `ready` means the server sees the poller: a started agent is served at once.
        agents = AgentClient(env.client, task_queue=task_queue)
        assert await agents.workers_polling() == 1
        result = await agents.run(Analyst, "Say something")
        stop.set()
        await asyncio.wait_for(worker, timeout=15)

    assert result.output == "served in-process"
    events = [entry["event"] for entry in logs if entry["event"].startswith("worker.")]
    assert events == ["worker.ready", "worker.stopping", "worker.stopped"]
    ready_event = next(entry for entry in logs if entry["event"] == "worker.ready")
    assert ready_event["task_queue"] == task_queue
    assert ready_event["agents"] == ["Analyst"]
    assert ready_event["address"] == settings.address


async def test_run_worker_without_a_server() -> None:
    settings = Settings(address=f"127.0.0.1:{free_port()}")
    with pytest.raises(ServerUnavailableError, match="no Temporal server answers"):
        await run_worker([Analyst], settings=settings, model=ScriptedModel([]))


async def test_run_worker_with_an_unknown_namespace(address: str) -> None:
    settings = Settings(address=address, namespace="no-such-namespace")
    with pytest.raises(ConfigurationError, match="namespace 'no-such-namespace' does not exist"):
        await run_worker([Analyst], settings=settings, model=ScriptedModel([]))


async def test_plugin_sets_sticky_timeout_unless_the_user_did(client: Client) -> None:
    from datetime import timedelta

    from temporalio.worker import Worker

    from smyth_temporal.plugin import DEFAULT_STICKY_QUEUE_TIMEOUT
    from smyth_temporal.testing import ScriptedModel, agent_worker, new_task_queue
    from tests.helpers.agents import Analyst

    model = ScriptedModel([])
    default = agent_worker(client, Analyst, model=model, task_queue=new_task_queue())
    assert default.config(active_config=True)["sticky_queue_schedule_to_start_timeout"] == (
        DEFAULT_STICKY_QUEUE_TIMEOUT
    )
    chosen = agent_worker(
        client,
        Analyst,
        model=model,
        task_queue=new_task_queue(),
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=7),
    )
    active = chosen.config(active_config=True)
    assert active["sticky_queue_schedule_to_start_timeout"] == timedelta(seconds=7)
    assert isinstance(chosen, Worker)
