"""Where the suite's Temporal server comes from: a dev server of its own, or one named.

``pytest --workflow-environment=HOST:PORT`` runs the suite against a Temporal server that
is already there (namespace ``default``, or ``--workflow-environment-namespace``) instead
of starting the embedded dev server. The search attributes smyth agents publish are
registered on it through the operator service, as ``start_dev_environment`` does; a
server that refuses fails the session's tests with one clear message. Tests that need
the time-skipping server, or a server configured their own way (pause switched off,
extra namespaces, the Web UI), still start their own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import pytest
import structlog
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import WorkflowEnvironment

from smyth_temporal import SmythPlugin
from smyth_temporal.devserver import register_search_attributes, split_address
from smyth_temporal.testing import start_dev_environment
from smyth_temporal.types.visibility import SEARCH_ATTRIBUTES

__all__ = ["OPTION", "ExternalServer", "add_options", "external_server", "workflow_environment"]

OPTION = "--workflow-environment"
NAMESPACE_OPTION = "--workflow-environment-namespace"

log = structlog.get_logger("tests.workflow_environment")


@dataclass(frozen=True)
class ExternalServer:
    """A Temporal server the suite was told to use instead of starting one."""

    address: str
    namespace: str


def add_options(parser: pytest.Parser) -> None:
    """Add ``--workflow-environment`` and its namespace to pytest's command line."""
    group = parser.getgroup("smyth", "smyth-temporal's Temporal server")
    group.addoption(
        OPTION,
        metavar="HOST:PORT",
        default=None,
        help="run against the Temporal server at HOST:PORT instead of starting a dev "
        "server (tests that need the time-skipping server still start it)",
    )
    group.addoption(
        NAMESPACE_OPTION,
        metavar="NAMESPACE",
        default="default",
        help=f"the namespace to use with {OPTION} (default: default)",
    )


def external_server(config: pytest.Config) -> ExternalServer | None:
    """The server named on the command line, or None to start a dev server.

    Raises:
        pytest.UsageError: The address is not ``HOST:PORT`` or the namespace is empty.
    """
    address = config.getoption(OPTION)
    if address is None:
        return None
    namespace = config.getoption(NAMESPACE_OPTION)
    try:
        split_address(address)
    except ValueError as error:
        raise pytest.UsageError(f"{OPTION}: {error}") from None
    if not namespace:
        raise pytest.UsageError(f"{NAMESPACE_OPTION}: a namespace is required")
    return ExternalServer(address=address, namespace=namespace)


@asynccontextmanager
async def workflow_environment(
    server: ExternalServer | None,
) -> AsyncIterator[WorkflowEnvironment]:
    """The session's environment: a new dev server, or the named server (left running)."""
    if server is None:
        environment = await start_dev_environment()
        try:
            yield environment
        finally:
            await environment.shutdown()
        return
    client = await _connect(server)
    await _register_search_attributes(client, server)
    log.info("tests.external_server", address=server.address, namespace=server.namespace)
    yield WorkflowEnvironment.from_client(client)


async def _connect(server: ExternalServer) -> Client:
    try:
        return await Client.connect(
            server.address, namespace=server.namespace, plugins=[SmythPlugin()]
        )
    except (RuntimeError, RPCError) as error:
        # temporalio reports an unreachable server as a RuntimeError.
        pytest.fail(
            f"{OPTION}={server.address}: cannot connect to Temporal: {error}",
            pytrace=False,
        )


async def _register_search_attributes(client: Client, server: ExternalServer) -> None:
    try:
        await register_search_attributes(client)
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            pytest.fail(
                f"{OPTION}={server.address}: namespace {server.namespace!r} does not exist "
                f"there; create it (temporal operator namespace create --namespace "
                f"{server.namespace}) or name another with {NAMESPACE_OPTION}",
                pytrace=False,
            )
        wanted = ", ".join(
            f"{key.name} ({key.indexed_value_type.name.title().replace('_', '')})"
            for key in SEARCH_ATTRIBUTES
        )
        pytest.fail(
            f"{OPTION}={server.address}: namespace {server.namespace!r} needs the search "
            f"attributes {wanted} and registering them failed: {error.message}; register "
            "them with `temporal operator search-attribute create` or use a server "
            "started by `smyth dev`",
            pytrace=False,
        )
