"""Running the gateway on loopback for a test, with keys for two tenants, and reading SSE."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI
from temporalio.client import Client

from smyth_temporal import AgentClient
from smyth_temporal.gateway import ROLES, Gateway, GatewayOptions, KeyStore, create_app
from tests.helpers.agents import Analyst
from tests.helpers.cli_support import free_port
from tests.helpers.live_agents import Operator
from tests.helpers.memory_agents import Researcher
from tests.helpers.trader import Trader

TENANT = "acme"
OTHER = "globex"
SERVED = [Analyst, Operator, Trader, Researcher]
FAST = GatewayOptions(ping_interval=0.5, stream_grace=10.0, worker_timeout=15.0)
STARTUP_TIMEOUT = 10.0


@dataclass
class Keys:
    """The key store and one key per role of ``TENANT``, plus an admin of ``OTHER``."""

    store: KeyStore
    by_role: dict[str, str]
    other: str

    def headers(self, role: str) -> dict[str, str]:
        return bearer(self.by_role[role])


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def make_keys(path: Path) -> Keys:
    store = KeyStore(path)
    by_role = {
        role: store.create(tenant=TENANT, role=role, name=f"{TENANT}-{role}")[1] for role in ROLES
    }
    _, other = store.create(tenant=OTHER, role="admin", name=f"{OTHER}-admin")
    return Keys(store, by_role, other)


class _QuietServer(uvicorn.Server):
    """uvicorn without its signal handlers: pytest owns Ctrl-C."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@contextlib.asynccontextmanager
async def serving(app: FastAPI, port: int | None = None) -> AsyncIterator[str]:
    """``app`` on loopback (``port``, or a free one), in this event loop; yields its base URL."""
    port = port or free_port()
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        log_config=None,
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=1,
    )
    server = _QuietServer(config)
    task = asyncio.create_task(server.serve())
    async with asyncio.timeout(STARTUP_TIMEOUT):
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


@dataclass
class Running:
    """A gateway serving on loopback, and an HTTP client pointed at it."""

    app: FastAPI
    url: str
    http: httpx.AsyncClient

    @property
    def gateway(self) -> Gateway:
        found: Gateway = self.app.state.gateway
        return found


@contextlib.asynccontextmanager
async def gateway(
    client: Client, task_queue: str, keys: Keys, options: GatewayOptions = FAST
) -> AsyncIterator[Running]:
    """A running gateway over ``client`` (agents start on ``task_queue``)."""
    app = create_app(
        AgentClient(client, task_queue=task_queue), SERVED, keys=keys.store, options=options
    )
    async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
        yield Running(app, url, http)


@dataclass
class Event:
    """One Server-Sent Event."""

    event: str | None
    id: str | None
    data: str

    def json(self) -> Any:
        return json.loads(self.data)


async def sse(response: httpx.Response) -> AsyncIterator[Event]:
    """The events of a ``text/event-stream`` response (comments skipped)."""
    fields: dict[str, list[str]] = {}
    async for line in response.aiter_lines():
        if not line:
            if "data" in fields:
                yield Event(
                    (fields.get("event") or [None])[0],
                    (fields.get("id") or [None])[0],
                    "\n".join(fields["data"]),
                )
            fields = {}
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        fields.setdefault(name, []).append(value.removeprefix(" "))


async def history_length(client: Client, workflow_id: str) -> int:
    return len((await client.get_workflow_handle(workflow_id).fetch_history()).events)


async def until(check: Callable[[], Awaitable[bool]], what: str, timeout: float = 20.0) -> None:
    try:
        async with asyncio.timeout(timeout):
            while not await check():
                await asyncio.sleep(0.05)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


def flag(test: Callable[[], bool]) -> Callable[[], Awaitable[bool]]:
    """A condition for ``until`` that needs no awaiting."""

    async def check() -> bool:
        return test()

    return check


async def pending_approvals(
    http: httpx.AsyncClient, keys: Keys, workflow_id: str | None = None
) -> list[dict[str, Any]]:
    """The tenant's pending approvals (of ``workflow_id`` only, if given), once there is one.

    Give the run: on a server shared with earlier tests the tenant may already have
    other runs waiting, and the first listing would not wait for this run's request.
    """
    pending: list[dict[str, Any]] = []

    async def listed() -> bool:
        answer = await http.get("/v1/approvals", headers=keys.headers("approver"))
        pending[:] = [
            a
            for a in answer.json()["approvals"]
            if workflow_id is None or a["workflow_id"] == workflow_id
        ]
        return bool(pending)

    await until(listed, "an approval request listed")
    return pending
