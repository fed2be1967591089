"""Settings: one ``pydantic-settings`` model per process kind, the one place that reads them.

- ``Settings``: what every process shares (the Temporal connection, the payload store,
  encryption, the caller's API key, logging); what clients and the CLI read.
- ``WorkerSettings``, ``GatewaySettings``, ``CodecServerSettings``, ``DevSettings``: a
  process kind's own settings on top.

Each value comes from, highest first: an argument (a command's option, a keyword
argument of ``run_worker`` or ``SmythPlugin``), the process environment, the ``.env``
file of the current directory, ``temporal.toml`` (the connection, through
``temporalio.envconfig``), the field's default. ``Model.load(**overrides)`` refuses a bad
value with a ``ConfigurationError`` naming its variable. No other module of the package
reads ``os.environ`` (an architecture test holds it so); the reference page of the docs
is generated from these models' fields.

Added in 0.1.0. Changed in 0.9.0: a package of settings models.
"""

from smyth_temporal.settings._base import DOTENV_FILE, SmythSettings, Switch
from smyth_temporal.settings._connection import (
    DEFAULT_ADDRESS,
    DEFAULT_NAMESPACE,
    DEFAULT_TASK_QUEUE,
    LOG_FORMAT_ENV,
    LOG_LEVEL_ENV,
    WORKFLOW_PAUSE_SETTING,
    LoggingSettings,
    Settings,
)
from smyth_temporal.settings._environment import (
    ENVIRONMENT_ENV,
    EnvironmentSettings,
    current_environment,
    environment_namespace,
)
from smyth_temporal.settings._notify import (
    CONSOLE_URL_ENV,
    NOTIFY_ENV,
    SMTP_URL_ENV,
    WEBHOOK_SECRET_ENV,
    NotifySettings,
)
from smyth_temporal.settings._payloads import (
    DEFAULT_PAYLOAD_THRESHOLD,
    PAYLOAD_PATH_ENV,
    STATE_DIR,
    PayloadSettings,
    payload_store_path,
)
from smyth_temporal.settings._processes import (
    CODEC_TOKEN_ENV,
    DEFAULT_CODEC_PORT,
    DEFAULT_DEV_PORT,
    DEFAULT_GATEWAY_PORT,
    DEFAULT_UI_ORIGIN,
    CodecServerSettings,
    DevSettings,
    GatewaySettings,
)
from smyth_temporal.settings._security import (
    ACCEPT_PLAINTEXT_ENV,
    ALLOWED_SECRETS_ENV,
    API_KEY_ENV,
    ENCRYPTION_COMPRESS_ENV,
    ENCRYPTION_KEY_FILE_ENV,
    ENCRYPTION_KEYS_ENV,
    KEYS_FILE_ENV,
    SECRETS_FILE_ENV,
    AccessSettings,
    EncryptionSettings,
    SecretsSettings,
)
from smyth_temporal.settings._worker import (
    DEFAULT_EMBEDDER,
    DEFAULT_MEMORY_PATH,
    DEFAULT_MODEL_PROVIDER,
    DEFAULT_PRICES_FILE,
    MODEL_PROVIDER_ENV,
    PRICES_FILE_ENV,
    MemorySettings,
    ModelSettings,
    ObservabilitySettings,
    WorkerSettings,
    deployment_version,
)

__all__ = [
    "ACCEPT_PLAINTEXT_ENV",
    "ALLOWED_SECRETS_ENV",
    "API_KEY_ENV",
    "CODEC_TOKEN_ENV",
    "CONSOLE_URL_ENV",
    "DEFAULT_ADDRESS",
    "DEFAULT_CODEC_PORT",
    "DEFAULT_DEV_PORT",
    "DEFAULT_EMBEDDER",
    "DEFAULT_GATEWAY_PORT",
    "DEFAULT_MEMORY_PATH",
    "DEFAULT_MODEL_PROVIDER",
    "DEFAULT_NAMESPACE",
    "DEFAULT_PAYLOAD_THRESHOLD",
    "DEFAULT_PRICES_FILE",
    "DEFAULT_TASK_QUEUE",
    "DEFAULT_UI_ORIGIN",
    "DOTENV_FILE",
    "ENCRYPTION_COMPRESS_ENV",
    "ENCRYPTION_KEYS_ENV",
    "ENCRYPTION_KEY_FILE_ENV",
    "ENVIRONMENT_ENV",
    "KEYS_FILE_ENV",
    "LOG_FORMAT_ENV",
    "LOG_LEVEL_ENV",
    "MODEL_PROVIDER_ENV",
    "NOTIFY_ENV",
    "PAYLOAD_PATH_ENV",
    "PRICES_FILE_ENV",
    "PROCESS_SETTINGS",
    "SECRETS_FILE_ENV",
    "SMTP_URL_ENV",
    "STATE_DIR",
    "WEBHOOK_SECRET_ENV",
    "WORKFLOW_PAUSE_SETTING",
    "AccessSettings",
    "CodecServerSettings",
    "DevSettings",
    "EncryptionSettings",
    "EnvironmentSettings",
    "GatewaySettings",
    "LoggingSettings",
    "MemorySettings",
    "ModelSettings",
    "NotifySettings",
    "ObservabilitySettings",
    "PayloadSettings",
    "SecretsSettings",
    "Settings",
    "SmythSettings",
    "Switch",
    "WorkerSettings",
    "current_environment",
    "deployment_version",
    "environment_namespace",
    "payload_store_path",
]

PROCESS_SETTINGS: tuple[type[Settings], ...] = (
    Settings,
    WorkerSettings,
    GatewaySettings,
    CodecServerSettings,
    DevSettings,
)
"""The model of each process kind (clients and the CLI read ``Settings``)."""
