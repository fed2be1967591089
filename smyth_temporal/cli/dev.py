"""``smyth dev`` (the embedded Temporal dev server) and ``smyth worker`` (serve agents)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from pathlib import Path
from typing import Annotated

import typer

from smyth_temporal.cli._common import (
    CommonOptions,
    command,
    event_on_signals,
    non_negative,
    port,
    run,
    status,
)
from smyth_temporal.devserver import (
    DEFAULT_DEV_PORT,
    LOCAL_HOSTS,
    DevServer,
    is_reachable,
    split_address,
)
from smyth_temporal.exceptions import ClientError, ConfigurationError
from smyth_temporal.mcp import parse_server
from smyth_temporal.models import ModelProvider
from smyth_temporal.security import Secrets
from smyth_temporal.settings import (
    CONSOLE_URL_ENV,
    DEFAULT_MODEL_PROVIDER,
    ENVIRONMENT_ENV,
    MODEL_PROVIDER_ENV,
    NOTIFY_ENV,
    SMTP_URL_ENV,
    WEBHOOK_SECRET_ENV,
    DevSettings,
    WorkerSettings,
    current_environment,
    environment_namespace,
)
from smyth_temporal.worker import load_agents, load_model_provider, run_worker

__all__ = ["app"]

app = typer.Typer()

_POLL_INTERVAL = 0.5


@command(
    app,
    "dev",
    help="Run the embedded Temporal dev server (SQLite under .smyth/): start it and keep it "
    "in the foreground until Ctrl-C. Does nothing if a server already answers on the port. "
    "The server stops with this command, even if it is killed.",
)
def dev(
    options: CommonOptions,
    port_: Annotated[
        int | None,
        typer.Option(
            "--port",
            parser=port,
            metavar="PORT",
            help="gRPC port (default: SMYTH_DEV_PORT, the port of --address when it is local, "
            "else 7233)",
        ),
    ] = None,
    ui_port: Annotated[
        int | None,
        typer.Option(
            "--ui-port",
            parser=port,
            metavar="PORT",
            help="Web UI port (default: SMYTH_DEV_UI_PORT, else port + 1000)",
        ),
    ] = None,
    db_file: Annotated[
        Path | None,
        typer.Option(
            "--db-file",
            metavar="PATH",
            help="the SQLite file; the server's log goes beside it (default: "
            "SMYTH_DEV_DB_FILE or .smyth/temporal.db)",
        ),
    ] = None,
    env: Annotated[
        list[str] | None,
        typer.Option(
            "--env",
            metavar="NAME",
            help="also create the namespace of environment NAME (smyth-NAME), repeatable; "
            "SMYTH_ENV's namespace is always created",
        ),
    ] = None,
) -> None:
    """Run the embedded Temporal dev server."""
    settings = options.load(DevSettings, dev_port=port_, dev_ui_port=ui_port, dev_db_file=db_file)
    host, configured_port = split_address(settings.address)
    if host not in LOCAL_HOSTS:
        host, configured_port = "localhost", DEFAULT_DEV_PORT
    server = DevServer(
        port=settings.dev_port or configured_port,
        ui_port=settings.dev_ui_port,
        db_path=settings.dev_db_file,
        namespace=settings.namespace,
        state_dir=settings.dev_db_file.parent,
        host=host,
        die_with_parent=True,
        extra_namespaces=[environment_namespace(_environment(name)) for name in env or ()],
    )
    on_main_thread = threading.current_thread() is threading.main_thread()
    if on_main_thread and signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        # Started from a background job, the process inherits SIGINT ignored, and
        # asyncio.run then installs no handler: restore it, so that Ctrl-C or
        # `kill -INT` stops the server here too.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    run(_serve(server))


def _environment(name: str) -> str:
    found = current_environment({ENVIRONMENT_ENV: name})
    assert found is not None  # a name was given; a bad one raises ConfigurationError
    return found


async def _serve(server: DevServer) -> None:
    if await is_reachable(server.address, server.namespace):
        print(f"a Temporal server already answers at {server.address} (Web UI: {server.ui_url})")
        return
    server.start()
    status(f"starting the Temporal dev server on {server.address} (data: {server.db_path}) ...")
    try:
        await server.wait_ready()
        namespaces = ", ".join([server.namespace, *server.extra_namespaces])
        print(f"Temporal dev server ready at {server.address} (namespaces: {namespaces})")
        print(f"Web UI: {server.ui_url}", flush=True)
        status(f"log: {server.log_path}; press Ctrl-C to stop")
        # SIGINT cancels this task (asyncio.run's own handler), SIGTERM sets `stop`;
        # either way the finally clause stops the server, which runs in its own
        # process group and so never sees the terminal's signals itself.
        with event_on_signals(signal.SIGTERM) as stop:
            while not stop.is_set():
                code = server.process.poll() if server.process else None
                if code is not None:
                    raise ClientError(
                        f"the Temporal dev server exited unexpectedly with code {code}; "
                        f"see {server.log_path}"
                    )
                # asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow
                # a cancellation that lands as its timeout fires.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(_POLL_INTERVAL):
                        await stop.wait()
    finally:
        if server.running:
            status("stopping the Temporal dev server ...")
        server.stop()
    status("stopped")


@command(
    app,
    "worker",
    task_queue=True,
    log_level="info",
    help="Serve agents: run their workflows, model calls and tools until SIGINT/SIGTERM.",
    epilog="example, offline with a scripted model (from the repository root):\n\n"
    "  smyth worker examples.market_monitor.workflows:MarketMonitor "
    "--model examples.market_monitor.script:model",
)
def worker(
    options: CommonOptions,
    agents: Annotated[
        list[str],
        typer.Argument(
            metavar="AGENT",
            help="an agent class as module:Class, e.g. "
            "examples.market_monitor.workflows:MarketMonitor",
        ),
    ],
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            metavar="openai|MODULE:ATTR",
            help="the model provider: 'openai' (OPENAI_BASE_URL, OPENAI_API_KEY) or a provider "
            "object or factory as module:attr, e.g. a scripted model (default: "
            f"{MODEL_PROVIDER_ENV} or {DEFAULT_MODEL_PROVIDER})",
        ),
    ] = None,
    max_cached_workflows: Annotated[
        int | None,
        typer.Option(
            "--max-cached-workflows",
            parser=non_negative,
            metavar="N",
            help="runs kept in memory between steps (default: SMYTH_MAX_CACHED_WORKFLOWS, "
            "else temporalio's, 1000)",
        ),
    ] = None,
    mcp: Annotated[
        list[str] | None,
        typer.Option(
            "--mcp",
            metavar="NAME=COMMAND|URL",
            help="an MCP server the agents may name (AgentConfig.mcp_servers): a command run "
            "over stdio, e.g. git='uvx mcp-server-git', or a streamable-HTTP URL; repeatable",
        ),
    ] = None,
    notify: Annotated[
        list[str] | None,
        typer.Option(
            "--notify",
            metavar="NAME=URL|ADDRESS",
            help="a channel approval policies may name to tell people a request waits: a "
            f"webhook URL (signed with {WEBHOOK_SECRET_ENV}), e.g. webhook=https://hooks.slack.com/"
            f"services/..., or e-mail addresses sent through {SMTP_URL_ENV} "
            "(smtp://user:password@host:port?from=ADDRESS), e.g. oncall=ops@example.com; "
            f"repeatable (default: {NOTIFY_ENV}, the same, separated by spaces)",
        ),
    ] = None,
    console_url: Annotated[
        str | None,
        typer.Option(
            "--console-url",
            metavar="URL",
            help="the console's public address, e.g. https://agents.example.com/console: "
            f"notifications link to the request there ({CONSOLE_URL_ENV})",
        ),
    ] = None,
    secrets_file: Annotated[
        Path | None,
        typer.Option(
            "--secrets-file",
            metavar="PATH",
            help='NAME=value lines (owner-only) that secret("NAME") references resolve from '
            "before the environment (default: SMYTH_SECRETS_FILE)",
        ),
    ] = None,
    allow_secret: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-secret",
            metavar="NAME",
            help="a secret this worker may hand out, repeatable (default: SMYTH_ALLOWED_SECRETS, "
            "else the names its tools and MCP servers declare)",
        ),
    ] = None,
    deployment: Annotated[
        str | None,
        typer.Option(
            "--deployment",
            metavar="NAME",
            help="serve as a version of this Temporal Worker Deployment (with --build-id): "
            "agent runs stay pinned to the build that started them (SMYTH_DEPLOYMENT)",
        ),
    ] = None,
    build_id: Annotated[
        str | None,
        typer.Option(
            "--build-id",
            metavar="ID",
            help="this build's id in the deployment, e.g. a git sha (SMYTH_BUILD_ID)",
        ),
    ] = None,
    metrics: Annotated[
        str | None,
        typer.Option(
            "--metrics",
            metavar="HOST:PORT",
            help="serve Prometheus metrics (Temporal's and smyth's) at http://HOST:PORT/metrics "
            "(SMYTH_METRICS_ADDRESS)",
        ),
    ] = None,
    tracing: Annotated[
        bool,
        typer.Option(
            "--tracing",
            help="send OpenTelemetry spans over OTLP to OTEL_EXPORTER_OTLP_ENDPOINT "
            "(default http://localhost:4318; needs the otel extra) (SMYTH_TRACING)",
        ),
    ] = False,
) -> None:
    """Serve agent classes."""
    # One model from the options, the environment, .env and temporal.toml; run_worker
    # and the plugin receive this same object.
    settings = options.load(
        WorkerSettings,
        model_provider=model,
        max_cached_workflows=max_cached_workflows,
        secrets_file=secrets_file,
        allowed_secrets=tuple(allow_secret) if allow_secret else None,
        deployment=deployment,
        build_id=build_id,
        metrics_address=metrics,
        tracing=tracing or None,
        notify=tuple(notify) if notify else None,
        console_url=console_url,
    )
    secrets = _secrets(settings)
    classes = load_agents(agents)
    provider = _model_provider(settings)
    servers = dict(parse_server(spec) for spec in mcp or ())
    _tracing(settings.tracing)
    run(
        run_worker(classes, settings=settings, model=provider, mcp_servers=servers, secrets=secrets)
    )


def _model_provider(settings: WorkerSettings) -> ModelProvider:
    spec = settings.model_provider
    try:
        return load_model_provider(spec, settings=settings)
    except ConfigurationError as exc:
        if spec != DEFAULT_MODEL_PROVIDER or "OPENAI_API_KEY" not in str(exc):
            raise
        # A newcomer without a key is better served by the offline path than by a key.
        raise ConfigurationError(
            f"{exc}. To run offline without a key, serve a scripted model "
            "(smyth_temporal.testing.ScriptedModel) as --model MODULE:ATTR, e.g. "
            "--model examples.market_monitor.script:model from a checkout of smyth-temporal"
        ) from None


def _tracing(enabled: bool) -> None:
    if enabled:
        try:
            from smyth_temporal.observability import configure_tracing
        except ImportError as exc:
            raise ConfigurationError(str(exc)) from None
        configure_tracing("smyth-worker")


def _secrets(settings: WorkerSettings) -> Secrets:
    # Exported, not only passed on: a model provider built by the loaded modules
    # (OpenAIProvider(api_key=secret(...))) resolves with Secrets.from_env() and must
    # see the same file and allow-list as the worker's tools and MCP servers.
    settings.export("secrets_file", "allowed_secrets")
    return Secrets.from_settings(settings)
