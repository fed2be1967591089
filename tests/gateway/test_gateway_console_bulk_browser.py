"""The console's inbox decides several requests at once, in headless Chromium.

Issue 26 item 6, the console's part: requests are selected and approved in one action
(``POST /v1/approvals/decisions``), each pinned to the hash of the arguments its card
shows; a request that needs two approvers shows its progress ("1 of 2: who"); a request
that expired while selected is refused on its own card, saying so. Screenshots go to
``test-artifacts/``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from temporalio.client import Client

from smyth_temporal.testing import ScriptedAgents, ScriptedModel, agent_worker, reply, tool_call
from smyth_temporal.types.messages import Message
from smyth_temporal.types.model import ModelResponse
from tests.helpers.browser_support import requires_chromium
from tests.helpers.console_agents import Clerk, Janitor
from tests.helpers.console_support import (
    WAIT,
    By,
    WebDriver,
    WebDriverWait,
    WebElement,
    card_of,
    gateway_serving,
    pending_request,
    pending_requests,
    screenshot,
    shown,
    sign_in,
    text_in,
)
from tests.helpers.gateway_support import TENANT, Keys, make_keys, until
from tests.helpers.trader import Trader
from tests.helpers.trading import read_ledger

pytestmark = requires_chromium

APPROVER = f"{TENANT}-approver"
ADMIN = f"{TENANT}-admin"


@pytest.fixture
def keys(tmp_path: Path) -> Keys:
    return make_keys(tmp_path / "keys.json")


def status_is(card: WebElement, status: str) -> None:
    WebDriverWait(card.parent, WAIT).until(lambda _: card.get_attribute("data-status") == status)


# ---- a bulk approval, and quorum progress ------------------------------------------------


def approve_both_at_once(driver: WebDriver, url: str, key: str, sold: str, paid: str) -> None:
    sign_in(driver, url, key)
    sale, payment = card_of(driver, sold), card_of(driver, paid)
    assert payment.find_element(By.CSS_SELECTOR, ".quorum").text == "Approvals: 0 of 2"
    for card in (sale, payment):
        card.find_element(By.CSS_SELECTOR, "input.pick").click()
    text_in(driver, ".bulk .count", "2 selected")
    screenshot(driver, "bulk-selected")
    driver.find_element(By.CSS_SELECTOR, ".bulk .approve").click()

    status_is(sale, "approved")
    assert f"approved by {APPROVER}" in sale.find_element(By.CSS_SELECTOR, ".outcome").text
    # The payment needs a second approver: one approval counted, the request still waits.
    WebDriverWait(driver, WAIT).until(
        lambda _: "1 of 2" in payment.find_element(By.CSS_SELECTOR, ".quorum").text
    )
    assert payment.find_element(By.CSS_SELECTOR, ".quorum").text == (
        f"Approvals: 1 of 2: {APPROVER}"
    )
    assert payment.get_attribute("data-status") == "pending"
    hint = payment.find_element(By.CSS_SELECTOR, ".not-allowed").text
    assert hint == "You approved it already; each approver counts once."
    assert not payment.find_elements(By.CSS_SELECTOR, "input.pick")
    text_in(driver, ".bulk .count", "0 selected")
    screenshot(driver, "bulk-decided")


def approve_second(driver: WebDriver, url: str, key: str, paid: str) -> None:
    sign_in(driver, url, key)
    payment = card_of(driver, paid)
    assert payment.find_element(By.CSS_SELECTOR, ".quorum").text == (
        f"Approvals: 1 of 2: {APPROVER}"
    )
    screenshot(driver, "quorum-progress")
    payment.find_element(By.CSS_SELECTOR, "form.decide .approve").click()
    status_is(payment, "approved")
    assert payment.find_element(By.CSS_SELECTOR, ".quorum").text == (
        f"Approvals: 2 of 2: {APPROVER}, {ADMIN}"
    )
    assert f"approved by {ADMIN}" in payment.find_element(By.CSS_SELECTOR, ".outcome").text


async def test_the_inbox_approves_two_requests_in_one_action_and_shows_quorum_progress(
    client: Client, task_queue: str, keys: Keys, browser: WebDriver, ledger: Path
) -> None:
    model = ScriptedAgents(
        Trader=ScriptedModel([tool_call("sell", symbol="ACME", quantity=10), reply("Sold.")]),
        Clerk=ScriptedModel([tool_call("pay_supplier", amount=20_000, to="acme"), reply("Paid.")]),
    )
    async with (
        agent_worker(client, Trader, Clerk, model=model, task_queue=task_queue),
        gateway_serving(client, task_queue, keys, Clerk) as running,
    ):
        http, operator = running.http, keys.headers("operator")
        sold = await http.post("/v1/agents/Trader/runs", json={"prompt": "Sell"}, headers=operator)
        paid = await http.post("/v1/agents/Clerk/runs", json={"prompt": "Pay"}, headers=operator)
        runs = [answer.json()["workflow_id"] for answer in (sold, paid)]
        for workflow_id in runs:
            await pending_request(running, keys, workflow_id)
        await asyncio.to_thread(
            approve_both_at_once, browser, running.url, keys.by_role["approver"], *runs
        )
        [waiting] = await pending_requests(running, keys, runs[1])
        assert [vote["by"] for vote in waiting["votes"]] == [APPROVER]
        await asyncio.to_thread(
            approve_second, browser, running.url, keys.by_role["admin"], runs[1]
        )
        results = [
            await http.get(f"/v1/runs/{run}/result", headers=keys.headers("viewer")) for run in runs
        ]
    assert [result.json()["output"] for result in results] == ["Sold.", "Paid."]
    assert sorted(entry["tool"] for entry in read_ledger(ledger)) == ["pay_supplier", "sell"]


# ---- an expired request in a bulk decision ----------------------------------------------


def select(driver: WebDriver, url: str, key: str, workflow_id: str, request_id: str) -> None:
    sign_in(driver, url, key)
    card = shown(driver, f'#view article[data-key="{workflow_id}/{request_id}"]')
    card.find_element(By.CSS_SELECTOR, "input.pick").click()
    text_in(driver, ".bulk .count", "1 selected")


def approve_selected(driver: WebDriver, workflow_id: str, request_id: str) -> None:
    card = shown(driver, f'#view article[data-key="{workflow_id}/{request_id}"]')
    driver.find_element(By.CSS_SELECTOR, ".bulk .approve").click()
    problem = shown(driver, f'#view article[data-key="{workflow_id}/{request_id}"] .bulk-error')
    assert f"request {request_id} is already expired" in problem.text
    assert card.get_attribute("data-status") == "pending"  # as shown: nothing else changed
    assert not card.find_element(By.CSS_SELECTOR, "input.pick").is_selected()
    text_in(driver, ".bulk .count", "0 selected")
    screenshot(driver, "bulk-expired")
    # The answer stays on its card when the inbox is read again (the request is not listed).
    status = driver.find_element(By.CSS_SELECTOR, "#view .status")
    before = status.text
    WebDriverWait(driver, WAIT).until(lambda _: status.text != before)
    assert problem.is_displayed() and "is already expired" in problem.text


async def test_a_request_that_expired_while_selected_is_refused_on_its_card_saying_so(
    client: Client, task_queue: str, keys: Keys, browser: WebDriver, ledger: Path
) -> None:
    purge = tool_call("purge_cache", service="web").message.tool_calls
    sale = tool_call("sell", symbol="ACME", quantity=1).message.tool_calls
    both = ModelResponse(message=Message(role="assistant", content=None, tool_calls=purge + sale))
    model = ScriptedAgents(Janitor=ScriptedModel([both, reply("Done.")]))
    async with (
        agent_worker(client, Janitor, model=model, task_queue=task_queue),
        gateway_serving(client, task_queue, keys, Janitor) as running,
    ):
        http = running.http
        started = await http.post(
            "/v1/agents/Janitor/runs", json={"prompt": "Tidy"}, headers=keys.headers("operator")
        )
        workflow_id = started.json()["workflow_id"]
        request = await pending_request(running, keys, workflow_id, tool="purge_cache")
        await asyncio.to_thread(
            select, browser, running.url, keys.by_role["approver"], workflow_id, request["id"]
        )

        async def expired() -> bool:
            left = await pending_requests(running, keys, workflow_id)
            return request["id"] not in {r["id"] for r in left}

        await until(expired, "the purge request expired", timeout=WAIT)
        await asyncio.to_thread(approve_selected, browser, workflow_id, request["id"])

        # The sale still waits, untouched by the refused decision; approved, the run ends.
        sale_request = await pending_request(running, keys, workflow_id, tool="sell")
        approved = await http.post(
            f"/v1/runs/{workflow_id}/approvals/{sale_request['id']}",
            json={"approved": True, "arguments_sha256": sale_request["arguments_sha256"]},
            headers=keys.headers("approver"),
        )
        assert approved.status_code == 200, approved.text
        result = await http.get(f"/v1/runs/{workflow_id}/result", headers=keys.headers("viewer"))
    assert result.json()["output"] == "Done."
    assert [entry["tool"] for entry in read_ledger(ledger)] == ["sell"]
