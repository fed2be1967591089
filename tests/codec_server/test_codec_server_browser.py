"""The real Temporal Web UI in headless Chromium, reading an encrypted agent via the codec server.

The dev server is started with its UI and ``--ui-codec-endpoint`` pointing at
``smyth codec-server``. With the right token the workflow page shows the prompt's
SSN; with the codec server restarted under another token, the same page never does.
Screenshots go to ``test-artifacts/``. Skipped without Debian's ``chromium`` and
``chromium-driver``.
"""

from __future__ import annotations

import asyncio
import subprocess
import threading
import time
from collections.abc import AsyncIterator

import pytest
from temporalio.testing import WorkflowEnvironment

from smyth_temporal.testing import start_dev_environment
from tests.codec_server.test_codec_server import TOKEN, sealed_run, start_codec_server
from tests.helpers.browser_support import ARTIFACTS, requires_chromium
from tests.helpers.cli_support import free_port
from tests.security.test_encryption import SSN

WAIT = 90.0
"""Seconds the UI may take to render a page: generous, since nothing is timed."""

pytestmark = requires_chromium

webdriver = pytest.importorskip("selenium.webdriver", reason="pip install selenium")
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.support.wait import WebDriverWait  # noqa: E402


@pytest.fixture
def ports() -> tuple[int, int]:
    return free_port(), free_port()


@pytest.fixture
async def ui_env(ports: tuple[int, int]) -> AsyncIterator[WorkflowEnvironment]:
    codec_port, ui_port = ports
    environment = await start_dev_environment(
        ui_port=ui_port,
        extra_args=[
            "--ui-codec-endpoint",
            f"http://localhost:{codec_port}/{TOKEN}",
            "--ui-disable-news-fetch",
        ],
    )
    try:
        yield environment
    finally:
        await environment.shutdown()


REFUSED_GRACE = 3.0
"""Seconds the page gets to render once the codec server refused the UI's decode."""


def open_workflow(
    driver: WebDriver, ui_port: int, workflow_id: str, shot: str, refused: threading.Event
) -> str:
    """Open the workflow's page, let the UI render and decode, and return its text."""
    driver.get(f"http://localhost:{ui_port}/namespaces/default/workflows/{workflow_id}")
    WebDriverWait(driver, WAIT).until(lambda d: workflow_id in d.page_source)
    ARTIFACTS.mkdir(exist_ok=True)
    deadline = time.monotonic() + 20
    # Decoding happens after the page renders: wait for the input to be readable, or,
    # once the codec server has refused the UI's decode, for the page to show that.
    while time.monotonic() < deadline and SSN not in driver.page_source:
        if refused.is_set():
            deadline = min(deadline, time.monotonic() + REFUSED_GRACE)
        time.sleep(0.5)
    driver.save_screenshot(str(ARTIFACTS / shot))
    return str(driver.page_source)


def watch_refusals(server: subprocess.Popen[str]) -> threading.Event:
    """Set once the codec server logs that it refused a request (its stderr, read aside)."""
    refused = threading.Event()

    def read() -> None:
        assert server.stderr is not None
        for line in server.stderr:
            if "codec.unauthorized" in line:
                refused.set()

    threading.Thread(target=read, daemon=True).start()
    return refused


async def test_the_temporal_ui_shows_the_decrypted_conversation(
    ui_env: WorkflowEnvironment,
    ports: tuple[int, int],
    browser: WebDriver,
    sealed_env: dict[str, str],
    task_queue: str,
) -> None:
    codec_port, ui_port = ports
    workflow_id = await sealed_run(ui_env, task_queue)
    origin = f"http://localhost:{ui_port}"

    server = start_codec_server(codec_port, sealed_env, origin=origin)
    try:
        page = await asyncio.to_thread(
            open_workflow,
            browser,
            ui_port,
            workflow_id,
            "codec-ui-decoded.png",
            watch_refusals(server),
        )
        assert SSN in page
    finally:
        server.terminate()
        server.wait(timeout=10)

    # The same UI and endpoint, but the codec server now wants another token.
    server = start_codec_server(
        codec_port, {**sealed_env, "SMYTH_CODEC_TOKEN": "another-token-0123456789"}, origin
    )
    refused = watch_refusals(server)
    try:
        page = await asyncio.to_thread(
            open_workflow, browser, ui_port, workflow_id, "codec-ui-refused.png", refused
        )
        assert refused.is_set(), "the UI never asked the codec server to decode"
        assert SSN not in page
    finally:
        server.terminate()
        server.wait(timeout=10)
