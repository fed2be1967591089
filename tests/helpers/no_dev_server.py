"""A pytest plugin (``-p tests.helpers.no_dev_server``) under which no Temporal server starts.

For runs with ``--workflow-environment``: starting a dev server or a time-skipping
server fails the test that asked for one, so a run that passes used the external server.
"""

from __future__ import annotations

from typing import Any, NoReturn

import pytest
from temporalio.testing import WorkflowEnvironment


def _refuse(*args: Any, **kwargs: Any) -> NoReturn:
    raise AssertionError("a Temporal server was started under tests.helpers.no_dev_server")


def pytest_configure(config: pytest.Config) -> None:
    # Both ways temporalio starts a server; smyth's start_* functions call them.
    WorkflowEnvironment.start_local = _refuse  # type: ignore[method-assign,assignment]
    WorkflowEnvironment.start_time_skipping = _refuse  # type: ignore[method-assign,assignment]
