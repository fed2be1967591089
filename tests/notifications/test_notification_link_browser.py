"""A notification's console link opens its request, in a real browser (headless Chromium).

The webhook of a request made through the gateway carries ``console_url``; an approver
who follows it signs in and lands on the run's view with that request's card in view
and marked, ready to decide. Skipped without Debian's ``chromium`` and ``chromium-driver``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest
from temporalio.client import Client
from temporalio.worker import Worker

from smyth_temporal import AgentClient, SmythPlugin
from smyth_temporal.gateway import create_app
from smyth_temporal.notifications import Notifications
from smyth_temporal.testing import ScriptedModel, reply, tool_call
from tests.helpers.browser_support import ARTIFACTS, requires_chromium
from tests.helpers.gateway_support import FAST, Keys, make_keys, serving
from tests.helpers.notify_agents import Payer
from tests.helpers.notify_receivers import eventually, webhook_receiver

pytestmark = requires_chromium

webdriver = pytest.importorskip("selenium.webdriver", reason="pip install selenium")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys as Key  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402
from selenium.webdriver.support.wait import WebDriverWait  # noqa: E402

WAIT = 60.0
"""Seconds any one thing may take to appear: generous, since nothing is timed."""


def follow_the_link(driver: WebDriver, link: str, key: str, request_id: str) -> None:
    """What the approver does with the notification (in a thread: Selenium blocks)."""
    ARTIFACTS.mkdir(exist_ok=True)
    driver.get(link)
    WebDriverWait(driver, WAIT).until(
        EC.visibility_of_element_located((By.CSS_SELECTOR, "#key"))
    ).send_keys(key + Key.ENTER)
    focused = WebDriverWait(driver, WAIT).until(
        EC.visibility_of_element_located((By.CSS_SELECTOR, ".conversation li.focused"))
    )
    card = focused.find_element(By.CSS_SELECTOR, "article[data-request]")
    assert card.get_attribute("data-request") == request_id
    assert card.find_element(By.TAG_NAME, "h3").text == "pay"
    assert card.find_element(By.CSS_SELECTOR, "form.decide .approve").is_displayed()
    driver.save_screenshot(str(ARTIFACTS / "console-notification-link.png"))


async def test_the_notifications_link_opens_its_request_in_the_console(
    client: Client, task_queue: str, tmp_path: Path, browser: WebDriver
) -> None:
    keys: Keys = make_keys(tmp_path / "keys.json")
    app = create_app(
        AgentClient(client, task_queue=task_queue), [Payer], keys=keys.store, options=FAST
    )
    model = ScriptedModel([tool_call("pay", amount=12_000, to="ACME"), reply("Paid.")])
    with webhook_receiver() as receiver:
        async with serving(app) as url:
            notifications = Notifications.parse(
                [f"hook={receiver.url}", f"lead={receiver.url}"],
                webhook_secret="whsec-test-0123456789abcdef",
                console_url=f"{url}/console",
            )
            plugin = SmythPlugin(model=model, notifications=notifications)
            worker_client = Client(
                client.service_client, namespace=client.namespace, plugins=[plugin]
            )
            async with Worker(worker_client, task_queue=task_queue, workflows=[Payer]):
                agents = AgentClient(client, task_queue=task_queue)
                async with httpx.AsyncClient(base_url=url) as http:
                    started = await http.post(
                        "/v1/agents/Payer/runs",
                        json={"prompt": "Pay ACME"},
                        headers=keys.headers("operator"),
                    )
                workflow_id = started.json()["workflow_id"]
                await eventually(lambda: bool(receiver.accepted), "the webhook")
                body = json.loads(receiver.accepted[0].body)
                request_id = body["request"]["id"]
                assert body["console_url"].startswith(f"{url}/console/#/runs/")
                await asyncio.to_thread(
                    follow_the_link,
                    browser,
                    body["console_url"],
                    keys.by_role["approver"],
                    request_id,
                )
                await agents.reject(workflow_id, request_id, by="test", comment="done")
                await agents.result(workflow_id)
