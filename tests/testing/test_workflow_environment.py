"""``pytest --workflow-environment=HOST:PORT``: the suite against a server that is already there.

Each test runs pytest again in a subprocess on one or two of the suite's tests. The
inner run loads ``tests.helpers.no_dev_server``, under which starting any Temporal server
fails, so an inner run that passes ran against the server it was given.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.testing import WorkflowEnvironment

from smyth_temporal.devserver import dynamic_config_args
from smyth_temporal.testing import find_binary
from smyth_temporal.types.visibility import SEARCH_ATTRIBUTES
from tests.helpers.cli_support import ROOT, free_port

# One plain agent run and one that finds its pending approval by search attribute.
SUBSET = (
    "tests/agent/test_agent_loop.py::test_multi_step_agent_with_several_tools",
    "tests/agent/test_approvals.py::test_pending_approvals_are_found_by_search_attribute",
)
INNER_TIMEOUT = 300.0
"""An upper bound for an inner run (collection and two agent runs), for a loaded machine."""


@dataclass
class Run:
    code: int
    output: str


async def inner_pytest(*args: str) -> Run:
    """``pytest`` on the given arguments, from the repository root, refusing any server."""
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "pytest", "-p", "tests.helpers.no_dev_server"),
        *("-p", "no:cacheprovider", "-q", *args),
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await asyncio.wait_for(process.communicate(), INNER_TIMEOUT)
    assert process.returncode is not None
    return Run(process.returncode, output.decode())


@pytest.fixture
async def bare_server() -> AsyncIterator[WorkflowEnvironment]:
    """A dev server of this test's own, started without smyth's search attributes."""
    environment = await WorkflowEnvironment.start_local(
        dev_server_existing_path=find_binary("temporal"),
        dev_server_extra_args=dynamic_config_args(),
    )
    try:
        yield environment
    finally:
        await environment.shutdown()


async def test_the_suite_runs_against_the_server_it_is_given(
    bare_server: WorkflowEnvironment,
) -> None:
    client = bare_server.client
    address = client.service_client.config.target_host

    run = await inner_pytest(f"--workflow-environment={address}", *SUBSET)

    assert run.code == 0, run.output
    assert "2 passed" in run.output, run.output
    # The inner run registered what its agents publish on this server, which had none.
    listed = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=client.namespace)
    )
    assert {key.name for key in SEARCH_ATTRIBUTES} <= set(listed.custom_attributes)


async def test_an_unreachable_server_fails_the_tests_with_its_address() -> None:
    address = f"127.0.0.1:{free_port()}"

    run = await inner_pytest(f"--workflow-environment={address}", SUBSET[0])

    assert run.code == 1, run.output
    assert f"--workflow-environment={address}: cannot connect to Temporal" in run.output
    assert "a Temporal server was started" not in run.output


@pytest.mark.parametrize("address", ["localhost", "localhost:port", ":"])
async def test_a_malformed_address_stops_the_run_before_any_test(address: str) -> None:
    run = await inner_pytest(f"--workflow-environment={address}", SUBSET[0])

    assert run.code == pytest.ExitCode.USAGE_ERROR, run.output
    assert "--workflow-environment: expected host:port" in run.output
