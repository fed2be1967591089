"""The worker's settings: its model provider, memory, secrets, telemetry and deployment."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, Field, SecretStr, model_validator
from temporalio.common import WorkerDeploymentVersion

from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.settings._base import SmythSettings, Switch
from smyth_temporal.settings._connection import Settings
from smyth_temporal.settings._environment import EnvironmentSettings
from smyth_temporal.settings._notify import NotifySettings
from smyth_temporal.settings._payloads import STATE_DIR
from smyth_temporal.settings._security import SecretsSettings

__all__ = [
    "DEFAULT_EMBEDDER",
    "DEFAULT_MEMORY_PATH",
    "DEFAULT_MODEL_PROVIDER",
    "DEFAULT_PRICES_FILE",
    "MODEL_PROVIDER_ENV",
    "PRICES_FILE_ENV",
    "MemorySettings",
    "ModelSettings",
    "ObservabilitySettings",
    "WorkerSettings",
    "deployment_version",
]

DEFAULT_MODEL_PROVIDER = "openai"
"""The model provider a worker uses when nothing else is said."""

MODEL_PROVIDER_ENV = "SMYTH_MODEL_PROVIDER"
"""The environment variable that chooses the model provider (``openai`` or ``module:attr``)."""

PRICES_FILE_ENV = "SMYTH_PRICES_FILE"
"""A price table file for workers (TOML or JSON)."""

DEFAULT_PRICES_FILE = Path(STATE_DIR) / "prices.toml"
"""Read when ``SMYTH_PRICES_FILE`` is not set, if it exists."""

DEFAULT_MEMORY_PATH = Path(STATE_DIR) / "memory"
"""Where the embedded Qdrant Edge store lives (``SMYTH_MEMORY_PATH``)."""

DEFAULT_EMBEDDER = "hash"
"""The embedder when nothing else is said: offline, lexical."""


def _embedder(spec: str) -> str:
    if spec == "hash" or spec == "openai" or spec.startswith("openai:"):
        return spec
    raise ValueError(f"must be 'hash' or 'openai[:model]', not {spec!r}")


def deployment_version(
    deployment: str | None, build_id: str | None
) -> WorkerDeploymentVersion | None:
    """The version a worker serves as, from its deployment name and build id.

    Args:
        deployment: The Worker Deployment's name (``None``: no versioning).
        build_id: The build's id within it (a git sha, a release tag).

    Returns:
        The version, or ``None`` when neither is given.

    Raises:
        ConfigurationError: Only one of them is given, or one is blank.

    Added in 0.5.0. Changed in 0.9.0: here, where ``WorkerSettings`` checks it.
    """
    if deployment is None and build_id is None:
        return None
    if not deployment or not deployment.strip() or not build_id or not build_id.strip():
        raise ConfigurationError(
            "a versioned worker needs both a deployment name and a build id "
            "(--deployment NAME --build-id ID)"
        )
    if "." in deployment:
        # Temporal writes a version as NAME.BUILD_ID; a dot in the name is ambiguous.
        raise ConfigurationError(f"the deployment name {deployment!r} must not contain '.'")
    return WorkerDeploymentVersion(deployment_name=deployment.strip(), build_id=build_id.strip())


class ModelSettings(SmythSettings):
    """The model provider and what its calls cost.

    Added in 0.9.0.
    """

    model_provider: str = Field(default=DEFAULT_MODEL_PROVIDER, validation_alias=MODEL_PROVIDER_ENV)
    """The model provider: `openai` or `module:attr` (`smyth worker --model`)."""
    openai_base_url: str | None = Field(default=None, validation_alias="OPENAI_BASE_URL")
    """The OpenAI-compatible endpoint of the `openai` provider and embedder (default:
    OpenAI's API)."""
    openai_api_key: SecretStr | None = Field(default=None, validation_alias="OPENAI_API_KEY")
    """The endpoint's key, required by the `openai` provider; any value for endpoints
    without keys."""
    anthropic_base_url: str | None = Field(default=None, validation_alias="ANTHROPIC_BASE_URL")
    """The endpoint of the `anthropic` provider, for models named `anthropic:NAME`
    (default: Anthropic's API). Added in 0.10.0."""
    anthropic_api_key: SecretStr | None = Field(default=None, validation_alias="ANTHROPIC_API_KEY")
    """The key of the `anthropic` provider, needed once an agent names an `anthropic:`
    model. Added in 0.10.0."""
    google_base_url: str | None = Field(default=None, validation_alias="GOOGLE_GEMINI_BASE_URL")
    """The Gemini API endpoint of the `google` provider, for models named `google:NAME`
    (default: Google's). Added in 0.10.0."""
    google_api_key: SecretStr | None = Field(default=None, validation_alias="GOOGLE_API_KEY")
    """The Gemini API key of the `google` provider, needed once an agent names a
    `google:` model (Vertex AI uses the worker's Google credentials instead). Added in
    0.10.0."""
    gemini_api_key: SecretStr | None = Field(default=None, validation_alias="GEMINI_API_KEY")
    """The `google` provider's key when `GOOGLE_API_KEY` is not set, as the SDK reads
    them. Added in 0.10.0."""
    prices_file: Path | None = Field(default=None, validation_alias=PRICES_FILE_ENV)
    """The model price table (budgets and `Usage.cost`; default: `.smyth/prices.toml`
    if it exists)."""


class MemorySettings(EnvironmentSettings):
    """Where long-term memory is kept and how it is embedded.

    Added in 0.9.0.
    """

    memory_path: Path = Field(default=DEFAULT_MEMORY_PATH, validation_alias="SMYTH_MEMORY_PATH")
    """The embedded Qdrant Edge store's directory."""
    qdrant_url: str | None = Field(default=None, validation_alias="QDRANT_URL")
    """A Qdrant server or cluster instead of the embedded store."""
    qdrant_api_key: SecretStr | None = Field(default=None, validation_alias="QDRANT_API_KEY")
    """The Qdrant server's key."""
    embedder: Annotated[str, AfterValidator(_embedder)] = Field(
        default=DEFAULT_EMBEDDER, validation_alias="SMYTH_EMBEDDER"
    )
    """`hash` (offline, lexical) or `openai[:model]` (semantic)."""


class ObservabilitySettings(SmythSettings):
    """Metrics and traces.

    Added in 0.9.0.
    """

    metrics_address: str | None = Field(default=None, validation_alias="SMYTH_METRICS_ADDRESS")
    """Serve Prometheus metrics at `http://HOST:PORT/metrics` (default: off; `--metrics`)."""
    tracing: Switch = Field(default=False, validation_alias="SMYTH_TRACING")
    """Send OpenTelemetry spans over OTLP (`--tracing`)."""
    otel_service_name: str | None = Field(default=None, validation_alias="OTEL_SERVICE_NAME")
    """The spans' `service.name` (default: `smyth-worker`)."""


class WorkerSettings(
    Settings,
    ModelSettings,
    MemorySettings,
    SecretsSettings,
    ObservabilitySettings,
    NotifySettings,
):
    """Everything a worker (``smyth worker``, ``run_worker``, ``SmythPlugin``) reads.

    ```python
    settings = WorkerSettings.load(task_queue="trading")  # the environment, .env, ...
    await run_worker(agents, settings=settings)
    ```

    Added in 0.9.0.
    """

    process_kind = "worker"

    deployment: str | None = Field(default=None, validation_alias="SMYTH_DEPLOYMENT")
    """Serve as a version of this Worker Deployment (with `build_id`; `--deployment`)."""
    build_id: str | None = Field(default=None, validation_alias="SMYTH_BUILD_ID")
    """This build's id in the deployment, e.g. a git sha (`--build-id`)."""
    max_cached_workflows: int | None = Field(
        default=None, ge=0, validation_alias="SMYTH_MAX_CACHED_WORKFLOWS"
    )
    """Runs kept in memory between steps (default: temporalio's, 1000;
    `--max-cached-workflows`)."""

    @model_validator(mode="after")
    def _one_version(self) -> WorkerSettings:
        try:
            deployment_version(self.deployment, self.build_id)
        except ConfigurationError as exc:
            raise ValueError(f"SMYTH_DEPLOYMENT and SMYTH_BUILD_ID: {exc}") from None
        return self

    @property
    def version(self) -> WorkerDeploymentVersion | None:
        """The Worker Deployment Version this worker serves as, or ``None``."""
        return deployment_version(self.deployment, self.build_id)
