"""Invariant: a setting's value comes from the highest source that says one.

Sources, highest first: an argument (a command's option), the process environment, the
``.env`` file of the current directory, ``temporal.toml`` (the connection only), the
default. Hypothesis picks which sources say something; the value read must be the
highest one's, for a connection setting read through ``temporalio.envconfig`` (the
address) and for one of smyth's own (the task queue).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from smyth_temporal.settings import DEFAULT_ADDRESS, DEFAULT_TASK_QUEUE, Settings
from tests.helpers.settings_env import isolated_settings_env

ADDRESS_SOURCES = ("option", "environ", "dotenv", "toml")
QUEUE_SOURCES = ("option", "environ", "dotenv")


def _read(address_from: set[str], queue_from: set[str]) -> Settings:
    with tempfile.TemporaryDirectory() as raw, isolated_settings_env(Path(raw)):
        directory = Path(raw)
        toml = directory / "temporal.toml"
        address = 'address = "toml:7233"\n' if "toml" in address_from else ""
        toml.write_text(f"[profile.default]\n{address}")
        os.environ["TEMPORAL_CONFIG_FILE"] = str(toml)
        dotenv = []
        if "dotenv" in address_from:
            dotenv.append("TEMPORAL_ADDRESS=dotenv:7233")
        if "dotenv" in queue_from:
            dotenv.append("SMYTH_TASK_QUEUE=dotenv")
        (directory / ".env").write_text("\n".join(dotenv) + "\n")
        if "environ" in address_from:
            os.environ["TEMPORAL_ADDRESS"] = "environ:7233"
        if "environ" in queue_from:
            os.environ["SMYTH_TASK_QUEUE"] = "environ"
        return Settings.load(
            address="option:7233" if "option" in address_from else None,
            task_queue="option" if "option" in queue_from else None,
        )


@given(
    address_from=st.sets(st.sampled_from(ADDRESS_SOURCES)),
    queue_from=st.sets(st.sampled_from(QUEUE_SOURCES)),
)
def test_the_highest_source_that_names_a_setting_wins(
    address_from: set[str], queue_from: set[str]
) -> None:
    settings = _read(address_from, queue_from)
    top_address = next((s for s in ADDRESS_SOURCES if s in address_from), None)
    top_queue = next((s for s in QUEUE_SOURCES if s in queue_from), None)
    assert settings.address == (f"{top_address}:7233" if top_address else DEFAULT_ADDRESS)
    assert settings.task_queue == (top_queue or DEFAULT_TASK_QUEUE)
