"""The console in headless Chromium: a gateway serving extra agents, and what a person does.

Selenium blocks, so the functions that drive the browser run in a thread
(``asyncio.to_thread``); nothing here waits on a clock: every wait is for something to
appear, up to ``WAIT`` seconds.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

import httpx
import pytest
from temporalio.client import Client

from smyth_temporal import AgentClient
from smyth_temporal.clients import AgentRef
from smyth_temporal.gateway import create_app
from tests.helpers.browser_support import ARTIFACTS
from tests.helpers.gateway_support import FAST, SERVED, Keys, Running, serving, until

WAIT = 60.0
"""Seconds any one thing may take to appear: generous, since nothing is timed."""

webdriver = pytest.importorskip("selenium.webdriver", reason="pip install selenium")
from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys as Key  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.remote.webelement import WebElement  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402
from selenium.webdriver.support.wait import WebDriverWait  # noqa: E402

__all__ = [
    "EC",
    "WAIT",
    "By",
    "Key",
    "StaleElementReferenceException",
    "WebDriver",
    "WebDriverWait",
    "WebElement",
    "card_of",
    "gateway_serving",
    "pending_request",
    "pending_requests",
    "screenshot",
    "shown",
    "sign_in",
    "text_in",
]


@contextlib.asynccontextmanager
async def gateway_serving(
    client: Client, task_queue: str, keys: Keys, *extra: AgentRef
) -> AsyncIterator[Running]:
    """A running gateway that also serves ``extra`` agents (beside ``SERVED``)."""
    agents: Sequence[AgentRef] = [*SERVED, *extra]
    app = create_app(
        AgentClient(client, task_queue=task_queue), agents, keys=keys.store, options=FAST
    )
    async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
        yield Running(app, url, http)


async def pending_requests(running: Running, keys: Keys, workflow_id: str) -> list[dict[str, Any]]:
    """``workflow_id``'s pending requests (other tests' are left out)."""
    answer = await running.http.get("/v1/approvals", headers=keys.headers("viewer"))
    return [p["request"] for p in answer.json()["approvals"] if p["workflow_id"] == workflow_id]


async def pending_request(
    running: Running, keys: Keys, workflow_id: str, tool: str | None = None
) -> dict[str, Any]:
    """``workflow_id``'s pending request (for ``tool``, if given), once listed."""
    found: list[dict[str, Any]] = []

    async def listed() -> bool:
        requests = await pending_requests(running, keys, workflow_id)
        found[:] = [r for r in requests if tool is None or r["tool"] == tool]
        return bool(found)

    await until(listed, f"{workflow_id}'s approval request listed")
    return found[0]


def shown(driver: WebDriver, css: str) -> WebElement:
    """The element ``css`` once it is visible."""
    found: WebElement = WebDriverWait(driver, WAIT).until(
        EC.visibility_of_element_located((By.CSS_SELECTOR, css))
    )
    return found


def text_in(driver: WebDriver, css: str, text: str) -> None:
    """Wait until the element ``css`` holds ``text``."""
    WebDriverWait(driver, WAIT).until(
        EC.text_to_be_present_in_element((By.CSS_SELECTOR, css), text)
    )


def sign_in(driver: WebDriver, url: str, key: str) -> None:
    """Sign in with ``key`` (whoever was signed in before, in this tab, signed out)."""
    driver.get(f"{url}/console/")
    driver.execute_script("sessionStorage.clear()")
    driver.refresh()
    shown(driver, "#key").send_keys(key + Key.ENTER)
    shown(driver, "#identity")


def screenshot(driver: WebDriver, name: str) -> None:
    """``test-artifacts/console-NAME.png``: for a person's eyes, not for asserting."""
    ARTIFACTS.mkdir(exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / f"console-{name}.png"))


def card_of(driver: WebDriver, workflow_id: str) -> WebElement:
    """The inbox card of ``workflow_id``'s request (other tests' requests may be listed)."""
    link = shown(driver, f'#view article[data-request] a[href="#/runs/{workflow_id}"]')
    card: WebElement = link.find_element(By.XPATH, "ancestor::article")
    return card
