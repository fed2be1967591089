"""Every setting a smyth process reads from its environment: the settings page's source.

One row per variable: the variable, the process kinds that read it, its default and what
it does. ``docs/hooks/generated.py`` renders it as ``reference/settings.md`` at build
time, and ``tests/docs/test_docs.py`` fails when a module of ``smyth_temporal`` reads a
variable this table does not name (or the table names one nobody reads), so the page
follows the code. When the settings become one ``pydantic-settings`` model per process
kind, the page is to be generated from those models instead.
"""

from __future__ import annotations

from typing import NamedTuple


class Setting(NamedTuple):
    """One environment variable."""

    variable: str
    processes: str
    default: str
    meaning: str
    library: str = ""
    """The library that reads it for smyth (``temporalio.envconfig``), if not smyth itself."""


SETTINGS: tuple[Setting, ...] = (
    # Connection
    Setting(
        "TEMPORAL_ADDRESS",
        "all",
        "`localhost:7233`",
        "the Temporal frontend (`--address`)",
        library="temporalio.envconfig",
    ),
    Setting(
        "TEMPORAL_NAMESPACE",
        "all",
        "`default` (`smyth-<env>` with `SMYTH_ENV`)",
        "the Temporal namespace (`--namespace`)",
        library="temporalio.envconfig",
    ),
    Setting(
        "TEMPORAL_PROFILE",
        "all",
        "`default`",
        "the `temporal.toml` profile to connect with; a profile other than `default` "
        "also names the environment",
    ),
    Setting(
        "TEMPORAL_API_KEY",
        "all",
        "none",
        "an API key for Temporal Cloud, with the other `TEMPORAL_*` variables (TLS, config file)",
        library="temporalio.envconfig",
    ),
    Setting(
        "SMYTH_TASK_QUEUE", "all", "`smyth-agents`", "the task queue agents run on (`--task-queue`)"
    ),
    Setting(
        "SMYTH_ENV",
        "all",
        "none",
        "the environment (`staging`, `production`): its own namespace, payload "
        "directory and memory collections",
    ),
    # Worker
    Setting(
        "SMYTH_MODEL_PROVIDER",
        "worker",
        "`openai`",
        "the model provider: `openai` or `module:attr` (`smyth worker --model`)",
    ),
    Setting(
        "OPENAI_BASE_URL",
        "worker",
        "OpenAI's API",
        "the OpenAI-compatible endpoint of the `openai` provider and embedder",
    ),
    Setting(
        "OPENAI_API_KEY",
        "worker",
        "none (required by the `openai` provider)",
        "the endpoint's key; any value for endpoints without keys",
    ),
    Setting(
        "SMYTH_DEPLOYMENT",
        "worker",
        "none",
        "serve as a version of this Worker Deployment (`--deployment`)",
    ),
    Setting("SMYTH_BUILD_ID", "worker", "none", "this build's id in the deployment (`--build-id`)"),
    Setting(
        "SMYTH_SECRETS_FILE",
        "worker",
        "none",
        '`NAME=value` lines (owner-only) that `secret("NAME")` resolves from first',
    ),
    Setting(
        "SMYTH_ALLOWED_SECRETS",
        "worker",
        "the names the tools and MCP servers declare",
        "comma-separated secrets this worker may hand out",
    ),
    Setting(
        "SMYTH_PRICES_FILE",
        "worker",
        "`.smyth/prices.toml`",
        "the model price table (budgets and `Usage.cost`)",
    ),
    Setting(
        "SMYTH_METRICS_ADDRESS",
        "worker",
        "off",
        "serve Prometheus metrics at `http://HOST:PORT/metrics` (`--metrics`)",
    ),
    Setting("SMYTH_TRACING", "worker", "off", "send OpenTelemetry spans over OTLP (`--tracing`)"),
    Setting(
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "worker",
        "`http://localhost:4318`",
        "where spans go (OTLP/HTTP)",
        library="the OpenTelemetry SDK",
    ),
    Setting(
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "worker",
        "none",
        "the traces endpoint, if not the one above",
        library="the OpenTelemetry SDK",
    ),
    Setting("OTEL_SERVICE_NAME", "worker", "`smyth-worker`", "the spans' `service.name`"),
    # Memory
    Setting(
        "SMYTH_MEMORY_PATH",
        "worker",
        "`.smyth/memory`",
        "the embedded Qdrant Edge store's directory",
    ),
    Setting(
        "QDRANT_URL",
        "worker",
        "none (embedded store)",
        "a Qdrant server or cluster instead of the embedded store",
    ),
    Setting("QDRANT_API_KEY", "worker", "none", "the Qdrant server's key"),
    Setting(
        "SMYTH_EMBEDDER",
        "worker",
        "`hash`",
        "`hash` (offline, lexical) or `openai[:model]` (semantic)",
    ),
    # Payload store
    Setting(
        "SMYTH_PAYLOAD_STORAGE",
        "all",
        "`on`",
        "large payloads go to the content-addressed store (`on`/`off`; the same everywhere)",
    ),
    Setting(
        "SMYTH_PAYLOAD_PATH",
        "all",
        "`.smyth/payloads` in the nearest directory up that has `.smyth/`",
        "the payload store's directory",
    ),
    Setting(
        "SMYTH_PAYLOAD_THRESHOLD", "all", "`2048`", "from what size (bytes) a payload is stored"
    ),
    Setting(
        "SMYTH_PAYLOAD_CHUNKS",
        "all",
        "`on`",
        "conversations stored as shared chunks (`off` while 0.4 processes still run)",
    ),
    # Security
    Setting(
        "SMYTH_ENCRYPTION_KEYS",
        "all",
        "none (no encryption)",
        "comma-separated `id:base64-of-32-bytes`; the first one encrypts",
    ),
    Setting(
        "SMYTH_ENCRYPTION_KEY_FILE",
        "all",
        "none",
        "the same entries one per line; refused unless owner-only",
    ),
    Setting("SMYTH_ENCRYPTION_COMPRESS", "all", "`off`", "zlib before sealing, when smaller"),
    Setting("SMYTH_ACCEPT_PLAINTEXT", "all", "`off`", "read unsealed payloads (migrations only)"),
    Setting(
        "SMYTH_KEYS_FILE",
        "gateway, MCP server, CLI",
        "`.smyth/keys.json`",
        "the API keys (hashed, owner-only)",
    ),
    Setting(
        "SMYTH_API_KEY",
        "client, CLI, MCP server",
        "none (a trusted local operator)",
        "the caller's API key: its tenant and role",
    ),
    Setting(
        "SMYTH_CODEC_TOKEN",
        "codec server",
        "none (required, 16+ characters)",
        "the bearer token (or URL segment) that allows decoding",
    ),
    # CLI
    Setting(
        "SMYTH_LOG_LEVEL",
        "CLI",
        "`info` for the worker, `warning` otherwise",
        "least severe log level shown on stderr",
    ),
    Setting("SMYTH_LOG_FORMAT", "CLI", "`console`", "`console` or `json` (one object per line)"),
)
"""Every variable, grouped by concern."""


def settings_markdown() -> str:
    """The settings page: an introduction and the table."""
    rows = "\n".join(
        f"| `{s.variable}` | {s.processes} | {s.default} | {s.meaning}"
        f"{f' (read by {s.library})' if s.library else ''} |"
        for s in SETTINGS
    )
    return f"""# Settings

Every setting a smyth process reads from its environment, generated from
`docs/hooks/settings_table.py` (a test fails when the package reads a variable the table
does not name). Command-line options, where a command has one, win over the variable;
`temporal.toml` profiles (`TEMPORAL_PROFILE`) give the connection settings too. Settings
are validated when a process starts, with a one-line message naming the problem.

| variable | read by | default | what it does |
| --- | --- | --- | --- |
{rows}

The dev server's port is `smyth dev --port P` (default `7233`; its UI on port + 1000).
"""
