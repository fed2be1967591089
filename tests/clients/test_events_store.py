"""A reader that cannot see the payload store fails loudly; the store is found from anywhere.

Poll answers over 1 MiB (``INLINE_QUERY_MAX``; smaller ones travel inline since 0.11.0)
travel as references to the payload store. A reader whose store is elsewhere (a relative
``SMYTH_PAYLOAD_PATH`` taken from another directory, say) used to read nothing and end
without a word.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from temporalio.client import Client

from smyth_temporal import AgentClient, AgentInput, ConfigurationError
from smyth_temporal.settings import payload_store_path
from smyth_temporal.storage import INLINE_QUERY_MAX
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from tests.helpers.agents import Analyst

LONG = "ACME trades at 101.5. " * 60_000  # a poll answer over INLINE_QUERY_MAX (1.3 MB)


async def test_a_reader_that_cannot_read_the_payload_store_fails_naming_the_store(
    client: Client,
    agents: AgentClient,
    task_queue: str,
    ledger: Path,
    address: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = ScriptedModel([tool_call("get_quote", symbol="ACME"), reply(LONG)])
    async with agent_worker(client, Analyst, model=model, task_queue=task_queue):
        handle = await agents.start(Analyst, AgentInput(prompt="How is ACME?"))
        await agents.result(handle.id)
        # Another process, whose store is another directory.
        elsewhere = tmp_path / "elsewhere"
        monkeypatch.setenv("SMYTH_PAYLOAD_PATH", str(elsewhere))
        reader = await AgentClient.connect(address, principal=None)
        with pytest.raises(ConfigurationError) as raised:
            async for _ in reader.events(handle.id):
                pass

    message = str(raised.value)
    assert str(elsewhere) in message and "SMYTH_PAYLOAD_PATH" in message
    assert len(LONG) > INLINE_QUERY_MAX  # so the stream's answer is stored, not inline


def test_the_payload_store_is_an_absolute_path_whatever_the_directory(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".smyth").mkdir(parents=True)
    (project / "src" / "deep").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    store = project / ".smyth" / "payloads"

    # A process anywhere in the project finds the project's store.
    assert payload_store_path({}, cwd=project) == store
    assert payload_store_path({}, cwd=project / "src" / "deep") == store
    # Outside any project: the current directory's, as an absolute path.
    assert payload_store_path({}, cwd=elsewhere) == elsewhere / ".smyth" / "payloads"
    # A relative SMYTH_PAYLOAD_PATH is taken from the directory of the process, made
    # absolute once; an environment gets its own directory in the store.
    assert payload_store_path({"SMYTH_PAYLOAD_PATH": "shared"}, cwd=elsewhere) == (
        elsewhere / "shared"
    )
    assert payload_store_path({"SMYTH_ENV": "staging"}, cwd=project / "src") == store / "staging"
    for environ in ({}, {"SMYTH_PAYLOAD_PATH": "x"}, {"SMYTH_PAYLOAD_PATH": "~/x"}):
        assert payload_store_path(environ, cwd=elsewhere).is_absolute()
    assert os.path.isabs(payload_store_path({"SMYTH_PAYLOAD_PATH": "~/x"}))
