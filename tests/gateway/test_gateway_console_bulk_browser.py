"""The console's inbox decides several requests at once, in headless Chromium.

Issue 26 item 6, the console's part: requests are selected and approved in one action
(``POST /v1/approvals/decisions``), each pinned to the hash of the arguments its card
shows; a request that expired while selected is refused on its own card, saying so.
Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from temporalio.client import Client

from smyth_temporal.testing import ScriptedAgents, ScriptedModel, agent_worker, reply, tool_call
from smyth_temporal.types.messages import Message
from smyth_temporal.types.model import ModelRequest, ModelResponse
from tests.helpers.browser_support import requires_chromium
from tests.helpers.console_agents import Janitor
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


@pytest.fixture
def keys(tmp_path: Path) -> Keys:
    return make_keys(tmp_path / "keys.json")


def status_is(card: WebElement, status: str) -> None:
    WebDriverWait(card.parent, WAIT).until(lambda _: card.get_attribute("data-status") == status)


# ---- a bulk approval ----------------------------------------------------------------------


def approve_both_at_once(driver: WebDriver, url: str, key: str, runs: list[str]) -> None:
    sign_in(driver, url, key)
    cards = [card_of(driver, workflow_id) for workflow_id in runs]
    # Both runs' requests have the same id (apr-1-call_1_0): their forms' ids must not.
    assert {card.get_attribute("data-request") for card in cards} == {"apr-1-call_1_0"}
    repeated = driver.execute_script(
        "const ids = [...document.querySelectorAll('[id]')].map((e) => e.id);"
        "return ids.filter((id, i) => ids.indexOf(id) !== i)"
    )
    assert repeated == []  # each label names its own field
    for card in cards:
        card.find_element(By.CSS_SELECTOR, "input.pick").click()
    text_in(driver, ".bulk .count", "2 selected")
    screenshot(driver, "bulk-selected")
    driver.find_element(By.CSS_SELECTOR, ".bulk .approve").click()
    for card in cards:
        status_is(card, "approved")
        assert f"approved by {APPROVER}" in card.find_element(By.CSS_SELECTOR, ".outcome").text
    text_in(driver, ".bulk .count", "0 selected")
    screenshot(driver, "bulk-decided")


def sell_what_was_asked(request: ModelRequest) -> ModelResponse:
    prompt = next(m.content for m in request.messages if m.role == "user") or ""
    return tool_call("sell", symbol=prompt.removeprefix("Sell "), quantity=10)


async def test_the_inbox_approves_two_requests_in_one_action(
    client: Client, task_queue: str, keys: Keys, browser: WebDriver, ledger: Path
) -> None:
    model = ScriptedModel([sell_what_was_asked, reply("Sold.")])  # each run reads it anew
    async with (
        agent_worker(client, Trader, model=model, task_queue=task_queue),
        gateway_serving(client, task_queue, keys) as running,
    ):
        http, operator = running.http, keys.headers("operator")
        runs = []
        for symbol in ("ACME", "GLOBEX"):
            started = await http.post(
                "/v1/agents/Trader/runs", json={"prompt": f"Sell {symbol}"}, headers=operator
            )
            runs.append(started.json()["workflow_id"])
            await pending_request(running, keys, runs[-1])
        await asyncio.to_thread(
            approve_both_at_once, browser, running.url, keys.by_role["approver"], runs
        )
        results = [
            await http.get(f"/v1/runs/{run}/result", headers=keys.headers("viewer")) for run in runs
        ]
    assert [result.json()["output"] for result in results] == ["Sold.", "Sold."]
    assert sorted(entry["symbol"] for entry in read_ledger(ledger)) == ["ACME", "GLOBEX"]


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


def a_card_pins_the_hash_it_shows(driver: WebDriver, workflow_id: str, request_id: str) -> None:
    """The bulk decision sends the hash the card was drawn with: another one is refused."""
    card = shown(driver, f'#view article[data-key="{workflow_id}/{request_id}"]')
    driver.execute_script("arguments[0].dataset.sha = '0'.repeat(64)", card)  # not shown
    card.find_element(By.CSS_SELECTOR, "input.pick").click()
    driver.find_element(By.CSS_SELECTOR, ".bulk .approve").click()
    problem = shown(driver, f'#view article[data-key="{workflow_id}/{request_id}"] .bulk-error')
    assert "arguments_sha256 does not match" in problem.text
    assert card.get_attribute("data-status") == "pending"


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

        # The sale still waits, untouched by the refused decision, and is refused too when
        # its card's hash is not the one it was drawn with; approved, the run ends.
        sale_request = await pending_request(running, keys, workflow_id, tool="sell")
        await asyncio.to_thread(
            a_card_pins_the_hash_it_shows, browser, workflow_id, sale_request["id"]
        )
        assert (await pending_request(running, keys, workflow_id, tool="sell")) == sale_request
        approved = await http.post(
            f"/v1/runs/{workflow_id}/approvals/{sale_request['id']}",
            json={"approved": True, "arguments_sha256": sale_request["arguments_sha256"]},
            headers=keys.headers("approver"),
        )
        assert approved.status_code == 200, approved.text
        result = await http.get(f"/v1/runs/{workflow_id}/result", headers=keys.headers("viewer"))
    assert result.json()["output"] == "Done."
    assert [entry["tool"] for entry in read_ledger(ledger)] == ["sell"]
