"""Small fixes of the interface layer: connecting by address, ``smyth result``'s output,
the testing extra's install hint."""

from __future__ import annotations

import importlib
import importlib.metadata
import sys

import pytest

from smyth_temporal.cli import runs
from smyth_temporal.clients import AgentClient
from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.settings import Settings
from smyth_temporal.types.agent import AgentResult
from smyth_temporal.types.messages import Usage


async def test_connect_takes_an_address_like_temporalio(address: str) -> None:
    agents = await AgentClient.connect(address, namespace="default", task_queue="q-1")
    assert agents.client.service_client.config.target_host == address
    assert (agents.client.namespace, agents.task_queue) == ("default", "q-1")
    assert await agents.workers_polling() == 0

    by_settings = await AgentClient.connect(Settings(address=address, task_queue="q-2"))
    assert by_settings.task_queue == "q-2"


async def test_connect_refuses_an_address_without_a_port() -> None:
    with pytest.raises(ConfigurationError, match="expected host:port, got 'localhost'"):
        await AgentClient.connect("localhost")


@pytest.mark.parametrize("output", ["no newline at the end", "a newline at the end\n"])
def test_result_output_and_summary_are_on_lines_of_their_own(
    output: str, capsys: pytest.CaptureFixture[str]
) -> None:
    result = AgentResult(output=output, status="completed", steps=2, usage=Usage(requests=1))
    runs._print_result(result)
    captured = capsys.readouterr()
    assert captured.out == output.rstrip("\n") + "\n"
    assert captured.err.startswith("completed after 2 steps; 1 request")


def test_testing_without_its_extra_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> importlib.metadata.Distribution:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", missing)
    monkeypatch.delitem(sys.modules, "smyth_temporal.testing")
    with pytest.raises(ImportError, match=r"pip install 'smyth-temporal\[testing\]'"):
        importlib.import_module("smyth_temporal.testing")
