"""``serve``: run the gateway with uvicorn until it is stopped (what ``smyth serve`` does)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable, Sequence

import structlog
import uvicorn

from smyth_temporal.clients import AgentClient, AgentRef
from smyth_temporal.exceptions import ConfigurationError, UnknownAgentError
from smyth_temporal.gateway._app import create_app
from smyth_temporal.gateway._gateway import Gateway, GatewayOptions
from smyth_temporal.security import KeyStore

__all__ = [
    "DEV_HOST",
    "GRACEFUL_SHUTDOWN",
    "AnnouncingServer",
    "check_agents",
    "require_keys",
    "serve",
]

log = structlog.get_logger("smyth_temporal.gateway")

DEV_HOST = "127.0.0.1"
"""The only address ``--insecure-dev`` binds: a gateway without keys is for this machine."""


def require_keys(keys: KeyStore) -> None:
    """Make sure ``keys`` has a key a caller could use: a gateway nobody can call is a mistake.

    Raises:
        ConfigurationError: No active key.

    Added in 0.3.0.
    """
    if not keys.has_active_keys():
        raise ConfigurationError(
            f"no active API key in {keys.path}: create one with `smyth keys create --tenant T "
            "--role admin --name N` (or try the gateway alone on this machine with "
            "`smyth serve --insecure-dev`)"
        )


GRACEFUL_SHUTDOWN = 5
"""Seconds a stopping gateway gives requests in flight; event streams of sessions never
end by themselves, so after this they are cut (clients resume with ``Last-Event-ID``)."""


async def serve(
    agents: AgentClient,
    served: Sequence[AgentRef],
    *,
    host: str = DEV_HOST,
    port: int = 8000,
    keys: KeyStore | None = None,
    insecure_dev: bool = False,
    options: GatewayOptions | None = None,
    note: Callable[[str], None] | None = None,
) -> None:
    """Serve the gateway on ``host:port`` until the process is told to stop.

    Args:
        agents: The client every route calls.
        served: The agents callers may use.
        host: The address to bind (ignored with ``insecure_dev``: loopback only).
        port: The TCP port.
        keys: The API keys (default: the key file).
        insecure_dev: Serve without keys, as tenant ``default`` with role admin, on
            ``127.0.0.1`` only.
        options: Limits and timings.
        note: Receives lines worth showing a person (what ``--insecure-dev`` does).

    Raises:
        ConfigurationError: No active API key (and not ``insecure_dev``), or the port
            cannot be bound.
        UnknownAgentError: A worker on the task queue lacks a served agent (see
            ``check_agents``).

    Added in 0.3.0. Changed in 0.8.0: agents no worker has are refused at start-up.
    """
    keys = keys if keys is not None else KeyStore()
    if insecure_dev:
        if host != DEV_HOST and note is not None:
            note(f"note: --insecure-dev binds {DEV_HOST} only, not {host}")
        host = DEV_HOST
        if note is not None:
            note(
                "warning: --insecure-dev: requests without an API key act as tenant "
                f"'default' with role admin; serving on {DEV_HOST} only"
            )
    else:
        require_keys(keys)
    app = create_app(agents, served, keys=keys, insecure_dev=insecure_dev, options=options)
    gateway: Gateway = app.state.gateway
    await check_agents(gateway, note)
    # uvicorn's own log configuration would replace the process's (structlog on stderr);
    # its access log is left off: the gateway logs what matters (failed keys, errors).
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN,
    )

    def ready() -> None:
        log.info(
            "gateway.ready",
            url=f"http://{host}:{port}",
            agents=list(gateway.agent_names),
            task_queue=agents.task_queue,
            insecure_dev=insecure_dev,
        )

    try:
        await AnnouncingServer(config, ready).serve()
    except SystemExit as exc:  # how uvicorn gives up when it cannot bind the port
        raise ConfigurationError(f"cannot serve on {host}:{port} (see the log above)") from exc


async def check_agents(gateway: Gateway, note: Callable[[str], None] | None = None) -> None:
    """Refuse to serve agents no worker on the task queue has (``Gateway.check_served``).

    Raises:
        UnknownAgentError: A worker took the probe of an agent and lacks it.

    Added in 0.8.0.
    """
    names = gateway.agent_names
    answers = await asyncio.gather(*(gateway.check_served(name) for name in names))
    queue = gateway.agents.task_queue
    missing = [name for name, served in zip(names, answers, strict=True) if served is False]
    if missing:
        found = [name for name, served in zip(names, answers, strict=True) if served]
        raise UnknownAgentError(
            f"no worker on task queue {queue!r} serves {', '.join(missing)} (they do: "
            f"{', '.join(found) or 'none'}); start one with `smyth worker module:Class`, "
            "or serve only the agents your workers have"
        )
    waiting = [name for name, served in zip(names, answers, strict=True) if served is None]
    if waiting and note is not None:
        note(
            f"note: no worker on task queue {queue!r} took a probe of {', '.join(waiting)}; "
            "their runs wait until one does"
        )


class AnnouncingServer(uvicorn.Server):
    """uvicorn's server, announcing when it listens."""

    def __init__(self, config: uvicorn.Config, ready: Callable[[], None]) -> None:
        super().__init__(config)
        self._ready = ready

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            self._ready()
