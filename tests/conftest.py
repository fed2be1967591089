"""Test environment: one real Temporal dev server per session, a task queue per test."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import structlog
from hypothesis import HealthCheck, settings
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from smyth_temporal import AgentClient
from smyth_temporal.testing import new_task_queue, start_time_skipping_environment
from tests.helpers.agents import LEDGER_ENV
from tests.helpers.workflow_environment import add_options, external_server, workflow_environment

pytest_plugins = ["tests.helpers.browser_support"]  # the `browser` fixture (headless Chromium)

# Invariant tests search adversarial input with Hypothesis. Examples run workflows on a
# real server, so there is no per-example deadline (a shared 2-core machine is noise);
# `dev` keeps `make test` fast, `pytest --hypothesis-profile=ci` searches wider.
_SLOW_EXAMPLES = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
settings.register_profile(
    "dev", max_examples=20, deadline=None, suppress_health_check=_SLOW_EXAMPLES
)
settings.register_profile(
    "ci", max_examples=200, deadline=None, suppress_health_check=_SLOW_EXAMPLES
)
settings.load_profile("dev")


@pytest.fixture(scope="session", autouse=True)
def payload_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Externally stored payloads go to a session directory, never the repo's ``.smyth/``.

    Set in ``os.environ`` before any ``SmythPlugin`` is built, so the session's server
    client, every test's workers and the worker processes tests start share it.
    """
    path = tmp_path_factory.mktemp("payloads")
    # (Default memory stays per test: an embedded store admits one process at a time.)
    settings = {"SMYTH_PAYLOAD_PATH": str(path)}
    previous = {name: os.environ.get(name) for name in settings}
    os.environ.update(settings)
    try:
        yield path
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)  # --workflow-environment=HOST:PORT and its namespace


def pytest_configure(config: pytest.Config) -> None:
    external_server(config)  # a malformed --workflow-environment stops the run at once


@pytest.fixture(scope="session")
async def env(
    payload_store: Path, pytestconfig: pytest.Config
) -> AsyncIterator[WorkflowEnvironment]:
    """The session's Temporal server: a dev server, or ``--workflow-environment``'s."""
    server = external_server(pytestconfig)
    # Processes the tests start (workers, the CLI) name no namespace: they read this.
    namespace = {"TEMPORAL_NAMESPACE": server.namespace} if server else {}
    with pytest.MonkeyPatch.context() as patch:
        for name, value in namespace.items():
            patch.setenv(name, value)
        async with workflow_environment(server) as environment:
            yield environment


@pytest.fixture(scope="session")
def address(env: WorkflowEnvironment) -> str:
    """The test server's ``host:port``, for processes that connect on their own."""
    return str(env.client.service_client.config.target_host)


@pytest.fixture
def reset_structlog() -> Iterator[None]:
    """For tests that call the CLI's ``main()`` in-process: it points structlog at the
    captured stderr, which closes after the test.

    Before the test, log lines go nowhere (``capture_logs`` still sees them): the
    test's in-process workers log while a command runs, and structlog's defaults print
    to stdout, where a line could land in the command's captured output before the
    command sets up its own logging.
    """
    structlog.configure(logger_factory=structlog.ReturnLoggerFactory())
    yield
    structlog.reset_defaults()


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


@pytest.fixture(scope="module")
async def skipping() -> AsyncIterator[WorkflowEnvironment]:
    """Temporal's time-skipping test server, for a module's tests of long waits."""
    environment = await start_time_skipping_environment()
    try:
        yield environment
    finally:
        await environment.shutdown()


CODEC_TOKEN = "codec-token-for-tests-0123456789"
"""What the codec-server tests present (and the servers they start expect)."""


@pytest.fixture
def sealed_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """An encryption key, a codec token and a payload store of this test's own.

    Set in the environment (so every ``SmythPlugin`` built in the test encrypts) and
    returned, for the processes the test starts.
    """
    from smyth_temporal.security import new_key

    settings = {
        "SMYTH_ENCRYPTION_KEYS": new_key("k1"),
        "SMYTH_PAYLOAD_PATH": str(tmp_path / "payloads"),
        "SMYTH_CODEC_TOKEN": CODEC_TOKEN,
    }
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    yield settings
