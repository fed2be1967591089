"""Requests under approval policies, in the console (headless Chromium).

Issue 26 items 2, 3 and 6: the inbox shows the quorum's progress ("Approvals: 1 of 2:
who"); an approver's vote, cast in a bulk action, leaves the request waiting and that
approver unable to vote again; a second approver's decision settles it. The run view
says when a request escalated and shows it expired. Screenshots go to
``test-artifacts/``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from temporalio.client import Client

from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from tests.helpers.browser_support import requires_chromium
from tests.helpers.console_agents import Clerk
from tests.helpers.console_support import (
    WAIT,
    By,
    StaleElementReferenceException,
    WebDriver,
    WebDriverWait,
    WebElement,
    card_of,
    gateway_serving,
    pending_request,
    pending_requests,
    screenshot,
    sign_in,
    text_in,
)
from tests.helpers.gateway_support import TENANT, Keys, make_keys
from tests.helpers.policy_agents import Treasurer
from tests.helpers.trading import read_ledger

pytestmark = requires_chromium

APPROVER = f"{TENANT}-approver"
ADMIN = f"{TENANT}-admin"


@pytest.fixture
def keys(tmp_path: Path) -> Keys:
    return make_keys(tmp_path / "keys.json")


def progress(card: WebElement) -> str:
    return card.find_element(By.CSS_SELECTOR, ".quorum").text


def settled_card(
    driver: WebDriver, workflow_id: str, done: Callable[[WebElement], bool]
) -> WebElement:
    """The run's card once ``done`` holds: found again each time, since the inbox may
    draw its cards anew while the decision goes through (a card held on to goes stale)."""
    wait = WebDriverWait(driver, WAIT, ignored_exceptions=(StaleElementReferenceException,))
    wait.until(lambda _: done(card_of(driver, workflow_id)))
    return card_of(driver, workflow_id)


def first_vote(driver: WebDriver, url: str, key: str, workflow_id: str) -> None:
    sign_in(driver, url, key)
    payment = card_of(driver, workflow_id)
    assert progress(payment) == "Approvals: 0 of 2"
    payment.find_element(By.CSS_SELECTOR, "input.pick").click()
    text_in(driver, ".bulk .count", "1 selected")
    driver.find_element(By.CSS_SELECTOR, ".bulk .approve").click()
    payment = settled_card(driver, workflow_id, lambda card: "1 of 2" in progress(card))
    assert progress(payment) == f"Approvals: 1 of 2: {APPROVER}"
    assert payment.get_attribute("data-status") == "pending"
    hint = payment.find_element(By.CSS_SELECTOR, ".not-allowed").text
    assert hint == "You approved it already; each approver counts once."
    assert not payment.find_element(By.CSS_SELECTOR, "form.decide .approve").is_enabled()
    assert not payment.find_elements(By.CSS_SELECTOR, "input.pick")
    screenshot(driver, "quorum-first-vote")


def second_vote(driver: WebDriver, url: str, key: str, workflow_id: str) -> None:
    sign_in(driver, url, key)
    payment = card_of(driver, workflow_id)
    assert progress(payment) == f"Approvals: 1 of 2: {APPROVER}"
    assert "Edit arguments" not in payment.text  # a quorum approves the arguments as asked
    screenshot(driver, "quorum-progress")
    payment.find_element(By.CSS_SELECTOR, "form.decide .approve").click()
    payment = settled_card(
        driver, workflow_id, lambda card: card.get_attribute("data-status") == "approved"
    )
    assert progress(payment) == f"Approvals: 2 of 2: {APPROVER}, {ADMIN}"
    assert f"approved by {ADMIN}" in payment.find_element(By.CSS_SELECTOR, ".outcome").text


async def test_the_inbox_shows_quorum_progress_and_each_approver_votes_once(
    client: Client, task_queue: str, keys: Keys, browser: WebDriver, ledger: Path
) -> None:
    model = ScriptedModel([tool_call("pay_supplier", amount=20_000, to="acme"), reply("Paid.")])
    async with (
        agent_worker(client, Clerk, model=model, task_queue=task_queue),
        gateway_serving(client, task_queue, keys, Clerk) as running,
    ):
        http = running.http
        started = await http.post(
            "/v1/agents/Clerk/runs", json={"prompt": "Pay"}, headers=keys.headers("operator")
        )
        workflow_id = started.json()["workflow_id"]
        await pending_request(running, keys, workflow_id)
        await asyncio.to_thread(
            first_vote, browser, running.url, keys.by_role["approver"], workflow_id
        )
        [waiting] = await pending_requests(running, keys, workflow_id)
        assert [vote["by"] for vote in waiting["votes"]] == [APPROVER]
        await asyncio.to_thread(
            second_vote, browser, running.url, keys.by_role["admin"], workflow_id
        )
        result = await http.get(f"/v1/runs/{workflow_id}/result", headers=keys.headers("viewer"))
    assert result.json()["output"] == "Paid."
    assert [entry["tool"] for entry in read_ledger(ledger)] == ["pay_supplier"]


def escalated_then_expired(driver: WebDriver, url: str, key: str, workflow_id: str) -> None:
    sign_in(driver, url, key)
    driver.get(f"{url}/console/#/runs/{workflow_id}")
    text_in(driver, ".conversation", "No decision on hotfix yet: escalated (step 1)")
    note = driver.find_element(By.XPATH, "//li[contains(., 'escalated (step 1)')]").text
    assert note.endswith("approver, admin may decide now.")
    card = driver.find_element(By.CSS_SELECTOR, ".conversation article[data-request]")
    WebDriverWait(driver, WAIT).until(lambda _: card.get_attribute("data-status") == "expired")
    assert card.find_element(By.CSS_SELECTOR, ".outcome").text.startswith("expired ")
    assert "deadline" not in card.find_element(By.CSS_SELECTOR, ".timing").text
    comment = card.find_element(By.CSS_SELECTOR, ".comment").text
    assert comment == "no decision before the deadline; rejected by policy"
    row = driver.find_element(By.CSS_SELECTOR, ".conversation li.tool.failed summary").text
    assert row.startswith("hotfix") and "error: the call to 'hotfix' was not run" in row
    screenshot(driver, "escalated-expired")


async def test_the_run_view_shows_an_escalation_and_the_expiry_that_follows(
    client: Client, task_queue: str, keys: Keys, browser: WebDriver
) -> None:
    model = ScriptedModel([tool_call("hotfix", service="web"), reply("Not patched.")])
    async with (
        agent_worker(client, Treasurer, model=model, task_queue=task_queue),
        gateway_serving(client, task_queue, keys, Treasurer) as running,
    ):
        started = await running.http.post(
            "/v1/agents/Treasurer/runs", json={"prompt": "Patch"}, headers=keys.headers("operator")
        )
        workflow_id = started.json()["workflow_id"]
        await asyncio.to_thread(
            escalated_then_expired, browser, running.url, keys.by_role["approver"], workflow_id
        )
