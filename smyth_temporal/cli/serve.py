"""``smyth serve``: the HTTP gateway (FastAPI on uvicorn) for the agents named."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from smyth_temporal.cli._common import CommonOptions, agent_type, command, port, run, status
from smyth_temporal.clients import AgentClient
from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.settings import DEFAULT_GATEWAY_PORT, GatewaySettings

__all__ = ["DEFAULT_PORT", "app"]

app = typer.Typer()

DEFAULT_PORT = DEFAULT_GATEWAY_PORT


@command(
    app,
    "serve",
    task_queue=True,
    log_level="info",
    help="Serve agents over HTTP: runs, events (SSE), sessions, approvals, memory and an "
    "OpenAI-compatible /openai/v1/chat/completions; OpenAPI at /openapi.json. Every request "
    "needs an API key from `smyth keys create`, which names its tenant and role.",
)
def serve(
    options: CommonOptions,
    agents: Annotated[
        list[str],
        typer.Argument(
            metavar="AGENT", help="the agents served: workflow type names or module:Class"
        ),
    ],
    port_: Annotated[
        int | None,
        typer.Option(
            "--port",
            parser=port,
            metavar="PORT",
            help=f"the TCP port (default: SMYTH_GATEWAY_PORT or {DEFAULT_PORT})",
        ),
    ] = None,
    host: Annotated[
        str | None,
        typer.Option(
            "--host",
            metavar="HOST",
            help="the address to bind, 0.0.0.0 for every interface (default: "
            "SMYTH_GATEWAY_HOST or 127.0.0.1)",
        ),
    ] = None,
    insecure_dev: Annotated[
        bool,
        typer.Option(
            "--insecure-dev",
            help="serve without API keys, as tenant 'default' with role admin, on 127.0.0.1 "
            "only: for trying it out on your own machine",
        ),
    ] = False,
    keys_file: Annotated[
        Path | None,
        typer.Option(
            "--keys-file",
            metavar="PATH",
            help="the key file (default: SMYTH_KEYS_FILE or .smyth/keys.json)",
        ),
    ] = None,
) -> None:
    """Serve agents over HTTP."""
    settings = options.load(GatewaySettings, host=host, port=port_, keys_file=keys_file)
    run(_serve(settings, agents, insecure_dev))


async def _serve(settings: GatewaySettings, specs: list[str], insecure_dev: bool) -> None:
    # Imported here: the gateway needs the server extra, and `smyth` must work without it.
    try:
        import smyth_temporal.gateway as gateway
    except ImportError as exc:
        raise ConfigurationError(str(exc)) from None
    keys = gateway.KeyStore(settings.keys_file)
    if not insecure_dev:
        gateway.require_keys(keys)  # before connecting: the quicker, clearer failure
    served = [agent_type(spec) for spec in specs]
    agents = await AgentClient.connect(settings)
    await gateway.serve(
        agents,
        served,
        host=settings.host,
        port=settings.port,
        keys=keys,
        insecure_dev=insecure_dev,
        note=status,
    )
