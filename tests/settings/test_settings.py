"""The settings models: where each value comes from, per process kind, and bad values.

Precedence, highest first: an argument (a command's option), the environment, ``.env``,
``temporal.toml``, the default. ``tests/invariants/test_settings_precedence.py`` searches
every combination; these pin each step and the models' other promises.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

import smyth_temporal.plugin
import smyth_temporal.worker
from smyth_temporal.cli.main import main
from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.plugin import SmythPlugin
from smyth_temporal.settings import (
    PROCESS_SETTINGS,
    CodecServerSettings,
    DevSettings,
    GatewaySettings,
    Settings,
    WorkerSettings,
)
from smyth_temporal.testing import new_task_queue
from tests.helpers.settings_env import isolated_settings_env

SAMPLES: dict[str, str] = {
    "TEMPORAL_ADDRESS": "temporal.example.com:7233",
    "TEMPORAL_NAMESPACE": "agents",
    "TEMPORAL_PROFILE": "prod",  # needs a temporal.toml: see the .env test
    "SMYTH_TASK_QUEUE": "trading",
    "SMYTH_ENV": "staging",
    "SMYTH_PAYLOAD_STORAGE": "off",
    "SMYTH_PAYLOAD_PATH": "/var/lib/smyth/payloads",
    "SMYTH_PAYLOAD_THRESHOLD": "4096",
    "SMYTH_PAYLOAD_CHUNKS": "off",
    "SMYTH_ENCRYPTION_KEYS": "k1:" + "A" * 43 + "=",
    "SMYTH_ENCRYPTION_KEY_FILE": "/etc/smyth/encryption-keys",
    "SMYTH_ENCRYPTION_COMPRESS": "on",
    "SMYTH_ACCEPT_PLAINTEXT": "on",
    "SMYTH_API_KEY": "smyth_key",
    "SMYTH_KEYS_FILE": "/etc/smyth/keys.json",
    "SMYTH_LOG_LEVEL": "debug",
    "SMYTH_LOG_FORMAT": "json",
    "SMYTH_MODEL_PROVIDER": "myapp.models:provider",
    "OPENAI_BASE_URL": "http://127.0.0.1:11434/v1",
    "OPENAI_API_KEY": "sk-test",
    "ANTHROPIC_BASE_URL": "http://127.0.0.1:8787",
    "ANTHROPIC_API_KEY": "sk-ant-test",
    "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:8788",
    "GOOGLE_API_KEY": "gemini-test",
    "GEMINI_API_KEY": "gemini-other-test",
    "SMYTH_PRICES_FILE": "/etc/smyth/prices.toml",
    "SMYTH_MEMORY_PATH": "/var/lib/smyth/memory",
    "QDRANT_URL": "http://qdrant:6333",
    "QDRANT_API_KEY": "qdrant-key",
    "SMYTH_EMBEDDER": "openai:text-embedding-3-large",
    "SMYTH_SECRETS_FILE": "/etc/smyth/secrets",
    "SMYTH_ALLOWED_SECRETS": "WEATHER_KEY, GIT_TOKEN",
    "SMYTH_METRICS_ADDRESS": "0.0.0.0:9464",
    "SMYTH_TRACING": "on",
    "OTEL_SERVICE_NAME": "trading-worker",
    "SMYTH_NOTIFY": "oncall=ops@example.com",
    "SMYTH_WEBHOOK_SECRET": "a-webhook-secret-of-32-characters",
    "SMYTH_SMTP_URL": "smtp://mail.example.com",
    "SMYTH_CONSOLE_URL": "https://agents.example.com/console",
    "SMYTH_DEPLOYMENT": "trading",
    "SMYTH_BUILD_ID": "abc123",
    "SMYTH_MAX_CACHED_WORKFLOWS": "50",
    "SMYTH_GATEWAY_HOST": "0.0.0.0",
    "SMYTH_GATEWAY_PORT": "9000",
    "SMYTH_CODEC_HOST": "0.0.0.0",
    "SMYTH_CODEC_PORT": "9081",
    "SMYTH_CODEC_UI_ORIGINS": "https://ui.example.com, http://localhost:8233",
    "SMYTH_CODEC_TOKEN": "a-codec-token-of-24-chars",
    "SMYTH_DEV_PORT": "7300",
    "SMYTH_DEV_UI_PORT": "8300",
    "SMYTH_DEV_DB_FILE": "/tmp/smyth/temporal.db",
}
"""A value, not the default, for every variable of every model."""

ELSEWHERE = frozenset({"TEMPORAL_PROFILE"})
"""Read only with a ``temporal.toml`` that has the profile (tested with ``.env`` below)."""

EITHER_OR = frozenset({"SMYTH_ENCRYPTION_KEY_FILE"})
"""Variables refused beside another one (the keys inline or in a file): read alone."""


@pytest.fixture
def clean(tmp_path: Path) -> Iterator[Path]:
    """No smyth or Temporal variable set, an empty directory (no ``.env``) as cwd."""
    with isolated_settings_env(tmp_path):
        yield tmp_path


def _variables(model: type[Settings]) -> dict[str, str]:
    return {
        name: variable
        for name in model.model_fields
        if (variable := model.variable(name)) is not None
    }


def _plain(value: Any) -> Any:
    return value.get_secret_value() if isinstance(value, SecretStr) else value


# -- every process kind, from the environment alone ----------------------------------


@pytest.mark.parametrize("model", PROCESS_SETTINGS, ids=lambda m: m.__name__)
def test_every_process_kind_builds_from_the_environment_alone(
    model: type[Settings], clean: Path
) -> None:
    variables = _variables(model)
    missing = sorted(set(variables.values()) - set(SAMPLES))
    assert missing == [], "give the new variables a sample value here"
    default = model.from_environ({})
    read = model.from_environ(
        {v: SAMPLES[v] for v in variables.values() if v not in EITHER_OR | ELSEWHERE}
    )
    alone = model.from_environ({v: SAMPLES[v] for v in EITHER_OR})
    for name, variable in variables.items():
        if variable in ELSEWHERE:
            continue
        got = alone if variable in EITHER_OR else read
        assert _plain(getattr(got, name)) != _plain(getattr(default, name)), variable
    assert read.address == "temporal.example.com:7233"
    assert read.namespace == "agents"  # named: SMYTH_ENV's smyth-staging does not apply


def test_the_process_environment_is_read_when_nothing_is_given(
    clean: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("SMYTH_TASK_QUEUE", "SMYTH_GATEWAY_PORT", "SMYTH_CODEC_TOKEN"):
        monkeypatch.setenv(variable, SAMPLES[variable])
    assert WorkerSettings.load().task_queue == "trading"
    assert GatewaySettings.load().port == 9000
    token = CodecServerSettings.load().codec_token
    assert token is not None and token.get_secret_value() == SAMPLES["SMYTH_CODEC_TOKEN"]
    assert DevSettings.load().task_queue == "trading"


def test_an_environment_names_the_namespace_unless_one_is_named(clean: Path) -> None:
    assert Settings.from_environ({"SMYTH_ENV": "staging"}).namespace == "smyth-staging"
    assert Settings.from_environ({"SMYTH_ENV": "staging"}, namespace="x").namespace == "x"
    named = {"SMYTH_ENV": "staging", "TEMPORAL_NAMESPACE": "agents"}
    assert Settings.from_environ(named).namespace == "agents"


# -- precedence, one step at a time ---------------------------------------------------


def test_an_option_wins_over_the_environment_which_wins_over_dotenv_and_temporal_toml(
    clean: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    toml = clean / "temporal.toml"
    toml.write_text('[profile.default]\naddress = "toml-host:7233"\nnamespace = "from-toml"\n')
    monkeypatch.setenv("TEMPORAL_CONFIG_FILE", str(toml))
    assert Settings.load().address == "toml-host:7233"
    assert Settings.load().namespace == "from-toml"

    (clean / ".env").write_text("TEMPORAL_ADDRESS=dotenv-host:7233\nSMYTH_TASK_QUEUE=from-dotenv\n")
    assert Settings.load().address == "dotenv-host:7233"
    assert Settings.load().namespace == "from-toml"  # .env does not name one
    assert Settings.load().task_queue == "from-dotenv"

    monkeypatch.setenv("TEMPORAL_ADDRESS", "env-host:7233")
    monkeypatch.setenv("SMYTH_TASK_QUEUE", "from-env")
    assert Settings.load().address == "env-host:7233"
    assert Settings.load().task_queue == "from-env"

    given = Settings.load(address="option-host:7233", task_queue="from-option")
    assert (given.address, given.task_queue) == ("option-host:7233", "from-option")


def test_dotenv_configures_temporals_own_variables_too(
    clean: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    toml = clean / "temporal.toml"
    toml.write_text(
        '[profile.default]\naddress = "local:7233"\n\n'
        '[profile.prod]\naddress = "prod.tmprl.cloud:7233"\nnamespace = "prod.acct"\n'
    )
    monkeypatch.delenv("TEMPORAL_CONFIG_FILE")  # only .env names the file
    (clean / ".env").write_text(f"TEMPORAL_CONFIG_FILE={toml}\nTEMPORAL_PROFILE=prod\n")
    settings = Settings.load()
    assert (settings.address, settings.namespace) == ("prod.tmprl.cloud:7233", "prod.acct")
    assert settings.environment == "prod"  # a profile other than default names one
    monkeypatch.setenv("TEMPORAL_API_KEY", "cloud-key")  # read by temporalio.envconfig
    assert Settings.load().connect["api_key"] == "cloud-key"


# -- bad values -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("SMYTH_PAYLOAD_THRESHOLD", "2k", "SMYTH_PAYLOAD_THRESHOLD must be a number of bytes"),
        ("SMYTH_PAYLOAD_STORAGE", "s3", "SMYTH_PAYLOAD_STORAGE must be 'on' or 'off'"),
        ("SMYTH_TRACING", "maybe", "SMYTH_TRACING must be 'on' or 'off'"),
        ("TEMPORAL_ADDRESS", "no-port", "TEMPORAL_ADDRESS: expected host:port"),
        ("SMYTH_ENV", "Prod", "SMYTH_ENV='Prod': an environment name is"),
        ("SMYTH_EMBEDDER", "bert", "SMYTH_EMBEDDER must be 'hash' or 'openai[:model]'"),
        ("SMYTH_MAX_CACHED_WORKFLOWS", "-1", "SMYTH_MAX_CACHED_WORKFLOWS:"),
        ("SMYTH_GATEWAY_PORT", "80000", "SMYTH_GATEWAY_PORT:"),
        ("SMYTH_LOG_LEVEL", "verbose", "SMYTH_LOG_LEVEL:"),
        ("SMYTH_DEPLOYMENT", "trading", "needs both a deployment name and a build id"),
    ],
)
def test_a_bad_value_is_refused_naming_its_variable(
    variable: str, value: str, expected: str, clean: Path
) -> None:
    model = next(m for m in PROCESS_SETTINGS if variable in _variables(m).values())
    with pytest.raises(ConfigurationError) as caught:
        model.from_environ({variable: value})
    assert expected in str(caught.value)


def test_a_refusal_never_shows_a_secret(clean: Path) -> None:
    secrets = {
        "SMYTH_API_KEY": "smyth_do-not-show-1",
        "OPENAI_API_KEY": "sk-do-not-show-2",
        "SMYTH_ENCRYPTION_KEYS": "k1:do-not-show-3",
        "SMYTH_ENCRYPTION_KEY_FILE": "/do-not-show-4",  # both set: refused
    }
    with pytest.raises(ConfigurationError) as caught:
        WorkerSettings.from_environ(secrets)
    message = str(caught.value)
    assert "not both" in message
    for value in list(secrets.values())[:3]:
        assert value not in message
    assert "sk-hidden" not in repr(WorkerSettings.from_environ({"OPENAI_API_KEY": "sk-hidden"}))


def test_the_worker_command_refuses_a_bad_variable_with_one_line(
    clean: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    reset_structlog: None,
) -> None:
    monkeypatch.setenv("SMYTH_PAYLOAD_THRESHOLD", "2k")
    code = main(["worker", "tests.helpers.agents:Analyst", "--model", "x:y"])
    error = capsys.readouterr().err.strip().splitlines()
    assert code == 1
    assert error == [
        "smyth: error: SMYTH_PAYLOAD_THRESHOLD must be a number of bytes (0 or more), not '2k'"
    ]


# -- one model from the command to the plugin -------------------------------------------


def test_the_worker_command_run_worker_and_the_plugin_share_one_settings_model(
    address: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    reset_structlog: None,
) -> None:
    task_queue = new_task_queue()
    monkeypatch.setenv("SMYTH_MAX_CACHED_WORKFLOWS", "7")  # the environment ...
    monkeypatch.setenv("SMYTH_TASK_QUEUE", "not-this-one")  # ... under the option
    monkeypatch.chdir(Path(__file__).parents[2])  # tests.helpers imports from here
    handed: list[object] = []
    received: list[object] = []
    real_run_worker = smyth_temporal.worker.run_worker
    real_init = SmythPlugin.__init__

    async def run_then_stop(*args: Any, **kwargs: Any) -> None:
        handed.append(kwargs["settings"])
        stop = asyncio.Event()
        stop.set()  # start, then stop at once: what matters is what was built
        await real_run_worker(*args, **kwargs, stop=stop)

    def plugin_init(self: SmythPlugin, **kwargs: Any) -> None:
        received.append(kwargs.get("settings"))
        real_init(self, **kwargs)

    monkeypatch.setattr("smyth_temporal.cli.dev.run_worker", run_then_stop)
    monkeypatch.setattr(SmythPlugin, "__init__", plugin_init)
    code = main(
        [
            "worker",
            "tests.helpers.agents:Analyst",
            "--model",
            "tests.helpers.settings_env:scripted",
            "--address",
            address,
            "--task-queue",
            task_queue,
        ]
    )
    assert code == 0, capsys.readouterr().err
    assert len(handed) == 1 and isinstance(handed[0], WorkerSettings)
    settings = handed[0]
    assert received[0] is settings  # the very object, not a parallel list of values
    assert (settings.task_queue, settings.max_cached_workflows) == (task_queue, 7)
    assert settings.model_provider == "tests.helpers.settings_env:scripted"


def test_keyword_arguments_of_run_worker_and_the_plugin_still_build_the_model(
    clean: Path,
) -> None:
    settings = WorkerSettings.load(task_queue="q")
    assert smyth_temporal.worker.worker_settings(settings) is settings
    overridden = smyth_temporal.worker.worker_settings(settings, max_cached_workflows=3)
    assert (overridden.task_queue, overridden.max_cached_workflows) == ("q", 3)
    from_client = smyth_temporal.worker.worker_settings(Settings.load(task_queue="c"))
    assert isinstance(from_client, WorkerSettings) and from_client.task_queue == "c"
    plugin = SmythPlugin(settings=Settings.load(), payload_storage=None)
    assert isinstance(plugin.worker_settings(), WorkerSettings)
    assert SmythPlugin(settings=settings).worker_settings() is settings
    assert smyth_temporal.plugin.SmythPlugin is SmythPlugin


# -- the reference page ---------------------------------------------------------------


def test_every_setting_has_a_variable_a_docstring_and_a_row_on_the_settings_page() -> None:
    hooks = str(Path(__file__).parents[2] / "docs" / "hooks")
    if hooks not in sys.path:
        sys.path.insert(0, hooks)
    from settings_table import settings_markdown

    page = settings_markdown()
    for model in PROCESS_SETTINGS:
        for name, info in model.model_fields.items():
            variable = model.variable(name)
            if name == "connect":  # the profile's Client.connect arguments, not a variable
                assert variable is None
                continue
            assert variable is not None, f"{model.__name__}.{name} has no variable"
            assert info.description, f"{variable} has no docstring: the page shows it"
            assert page.count(f"| `{variable}` |") == 1, variable


def test_a_dotenv_someone_else_could_write_is_refused(clean: Path) -> None:
    dotenv = clean / ".env"
    dotenv.write_text("SMYTH_ACCEPT_PLAINTEXT=on\n")
    dotenv.chmod(0o644)
    assert Settings.load().accept_plaintext  # the owner's own file is read
    dotenv.chmod(0o666)
    with pytest.raises(ConfigurationError, match="writable by others"):
        Settings.load()
    if os.getuid() == 0:  # only root can give a file away
        dotenv.chmod(0o644)
        os.chown(dotenv, 12345, 12345)
        with pytest.raises(ConfigurationError, match="owned by another user"):
            Settings.load()
