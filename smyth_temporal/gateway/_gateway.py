"""What every route shares: the client, the agents served, the options.

The gateway keeps no state of its own that matters: runs, sessions, approvals and
memories live in Temporal (and the workers' stores), so any number of replicas can
answer any request. Routes act through ``acting_for(caller)``, the client's one access
check, whose tenant cache (which tenant a chain of runs belongs to) is derived from
Temporal and never changes for a chain.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass, field
from typing import Annotated, TypeVar

import structlog
from fastapi import Depends, Request
from starlette.requests import ClientDisconnect

from smyth_temporal.clients import AgentClient, AgentRef, agent_name
from smyth_temporal.exceptions import UnknownAgentError
from smyth_temporal.gateway._limits import StreamSlots
from smyth_temporal.security import AuthLimiter, KeyStore, Principal

__all__ = [
    "REFUSED_FOR",
    "Gateway",
    "GatewayDep",
    "GatewayOptions",
    "gateway_of",
    "while_connected",
]

log = structlog.get_logger("smyth_temporal.gateway")

T = TypeVar("T")

REFUSED_FOR = 30.0
"""Seconds between two probes of an agent no worker served: it is refused by every
route until a probe finds a worker with it (one may be deployed meanwhile)."""


@dataclass(frozen=True)
class GatewayOptions:
    """Limits and timings of a gateway.

    Added in 0.3.0.
    """

    max_body_bytes: int = 1024 * 1024
    """Larger request bodies are refused with 413."""
    ping_interval: float = 15.0
    """Seconds without an event before an event stream sends a keep-alive comment."""
    stream_grace: float = 5.0
    """Seconds a streamed reply waits for its first piece before the response begins,
    so a message refused at once still gets an HTTP error status."""
    worker_timeout: float = 30.0
    """Seconds to wait for a worker to answer a state query or take a decision."""
    pickup_timeout: float = 5.0
    """Seconds a new run waits for a worker to take it before the start is answered
    (a worker that lacks the agent is found then; no worker at all only delays it)."""
    auth_burst: int = 10
    """Failed authentications a client address may make in a row."""
    auth_refill_per_second: float = 0.2
    """How fast a client address earns back a failed attempt (one every 5 s)."""
    console: bool = True
    """Serve the web console under ``/console/`` (its pages hold no data)."""
    max_streams_per_key: int = 16
    """Event streams (run events, streamed replies) one API key may have open at once in
    a gateway process; past it, 429. Added in 0.8.0."""
    pending_check: float = 1.0
    """Seconds between two looks, while a whole OpenAI answer (chat completion, response)
    waits, for an approval the session waits for: one ends the answer, naming it.
    Added in 0.9.0."""


@dataclass
class Gateway:
    """The shared part of a gateway app (``app.state.gateway``).

    Args:
        agents: The client every route calls.
        served: The agents the gateway serves (classes or workflow type names).
        keys: The API keys; ``None`` with ``insecure_dev`` only.
        insecure_dev: Requests without a key act as tenant ``default``, admin.
        options: Limits and timings.
    """

    agents: AgentClient
    served: Iterable[AgentRef]
    keys: KeyStore | None = None
    insecure_dev: bool = False
    options: GatewayOptions = field(default_factory=GatewayOptions)
    limiter: AuthLimiter = field(init=False)
    streams: StreamSlots = field(init=False)
    _names: tuple[str, ...] = field(init=False)
    _served: dict[str, bool] = field(init=False, default_factory=dict)
    _refused_at: dict[str, float] = field(init=False, default_factory=dict)
    _probes: dict[str, asyncio.Future[bool | None]] = field(init=False, default_factory=dict)
    _background: set[asyncio.Future[bool | None]] = field(init=False, default_factory=set)

    def __post_init__(self) -> None:
        self._names = tuple(dict.fromkeys(agent_name(a) for a in self.served))
        self.limiter = AuthLimiter(self.options.auth_burst, self.options.auth_refill_per_second)
        self.streams = StreamSlots(self.options.max_streams_per_key)

    @property
    def agent_names(self) -> tuple[str, ...]:
        """The workflow type names of the agents served, in the order given."""
        return self._names

    def agent(self, name: str) -> str:
        """``name`` if the gateway serves that agent.

        Raises:
            UnknownAgentError: It does not.
        """
        if name not in self._names:
            served = ", ".join(self._names) or "none"
            raise UnknownAgentError(f"unknown agent {name!r}; this gateway serves: {served}")
        refused = self._refused_at.get(name)
        if refused is not None:
            # Refused until a probe finds a worker with it; one probe every REFUSED_FOR
            # seconds, in the background, so no request of any route waits for it.
            if time.monotonic() - refused >= REFUSED_FOR and name not in self._probes:
                self._refused_at[name] = time.monotonic()
                task = asyncio.ensure_future(self._probe_again(name))
                self._background.add(task)  # referenced until done, or it may be collected
                task.add_done_callback(self._background.discard)
            raise UnknownAgentError(
                f"no worker serves agent {name!r} on task queue {self.agents.task_queue!r}; "
                f"{self._known(name)}"
            )
        return name

    async def check_served(self, name: str) -> bool | None:
        """Whether a worker serves agent ``name``, probed once (see ``AgentClient.check_served``).

        Concurrent callers share one probe; an answer is kept (a refusal for
        ``REFUSED_FOR`` seconds), ``None`` (no worker took the probe) is not.
        """
        if name in self._served:
            return True
        probe = self._probes.get(name)
        if probe is None:
            probe = asyncio.ensure_future(
                self.agents.check_served(name, timeout=self.options.pickup_timeout)
            )
            self._probes[name] = probe
            probe.add_done_callback(lambda _: self._probes.pop(name, None))
        served = await asyncio.shield(probe)
        if served is not None:
            self._remember(name, served)
        return served

    async def _probe_again(self, name: str) -> bool | None:
        try:
            return await self.check_served(name)
        except Exception as exc:  # nobody awaits it: say why, refuse on until the next
            log.warning("gateway.probe_failed", agent=name, error=str(exc))
            return None

    async def confirm_started(self, workflow_id: str, name: str) -> None:
        """Make sure a worker took the run just started; terminate it if none has the agent.

        Raises:
            UnknownAgentError: No worker on the queue has the agent (the run is
                terminated; the agent is refused for ``REFUSED_FOR`` seconds).
        """
        try:
            taken = await self.agents.confirm_pickup(
                workflow_id, name, timeout=self.options.pickup_timeout
            )
        except UnknownAgentError as exc:
            self._remember(name, False)
            raise UnknownAgentError(f"{exc}; {self._known(name)}") from exc
        if taken:
            self._remember(name, True)

    def _remember(self, name: str, served: bool) -> None:
        if served:
            self._served[name] = True
            self._refused_at.pop(name, None)
        else:
            self._served.pop(name, None)
            self._refused_at[name] = time.monotonic()
            log.warning("gateway.agent_unserved", agent=name, task_queue=self.agents.task_queue)

    def _known(self, name: str) -> str:
        others = [n for n in self._names if n != name and n not in self._refused_at]
        return "the agents served here: " + (", ".join(others) or "none")

    def acting_for(self, caller: Principal) -> AgentClient:
        """The client acting for ``caller`` (``AgentClient.acting_for``): every route's way in.

        Added in 0.9.0.
        """
        return self.agents.acting_for(caller)


def gateway_of(request: Request) -> Gateway:
    """The ``Gateway`` of the app serving ``request``."""
    gateway: Gateway = request.app.state.gateway
    return gateway


GatewayDep = Annotated[Gateway, Depends(gateway_of)]


async def while_connected(request: Request, awaitable: Awaitable[T]) -> T:
    """Await ``awaitable`` unless the client leaves first (then it is cancelled).

    Starlette goes on running a handler whose client has gone; a handler that waits
    for a run's end would hold its long poll on Temporal for nothing.

    Raises:
        ClientDisconnect: The client left; nobody reads the answer.
    """
    work = asyncio.ensure_future(awaitable)

    async def gone() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass

    watcher = asyncio.ensure_future(gone())
    try:
        await asyncio.wait({work, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (work, watcher):
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
    if not work.done() or work.cancelled():
        raise ClientDisconnect()
    return work.result()
