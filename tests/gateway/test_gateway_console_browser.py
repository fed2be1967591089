"""The web console in a real browser: headless Chromium driven by Selenium.

An approver signs in, finds the pending approval in the inbox, opens its run, approves
it there and watches the run finish live; another edits the arguments and approves in
the inbox itself, then searches memory. Screenshots go to ``test-artifacts/``.
Skipped without Debian's ``chromium`` and ``chromium-driver``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from temporalio.client import Client

from smyth_temporal.memory import EdgeStore, HashEmbedder, MemoryManager
from smyth_temporal.testing import ScriptedAgents, ScriptedModel, agent_worker, reply, tool_call
from smyth_temporal.types.messages import Message
from smyth_temporal.types.model import ModelRequest, ModelResponse
from tests.helpers.agents import read_ledger
from tests.helpers.browser_support import ARTIFACTS, requires_chromium
from tests.helpers.gateway_support import Keys, gateway, make_keys, pending_approvals
from tests.helpers.memory_agents import Researcher
from tests.helpers.trader import Trader

WAIT = 60.0
"""Seconds any one thing may take to appear: generous, since nothing is timed."""

REASON = "ACME fell 8% on the news; the mandate says sell."
ANSWER = "Sold 10 ACME at market."

pytestmark = requires_chromium

webdriver = pytest.importorskip("selenium.webdriver", reason="pip install selenium")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys as Key  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.remote.webelement import WebElement  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402
from selenium.webdriver.support.wait import WebDriverWait  # noqa: E402


def shown(driver: WebDriver, css: str) -> WebElement:
    """The element ``css`` once it is visible."""
    found: WebElement = WebDriverWait(driver, WAIT).until(
        EC.visibility_of_element_located((By.CSS_SELECTOR, css))
    )
    return found


def text_in(driver: WebDriver, css: str, text: str) -> None:
    WebDriverWait(driver, WAIT).until(
        EC.text_to_be_present_in_element((By.CSS_SELECTOR, css), text)
    )


def approve_in_the_console(driver: WebDriver, url: str, key: str, workflow_id: str) -> None:
    """What a person does, step by step (runs in a thread: Selenium blocks)."""
    ARTIFACTS.mkdir(exist_ok=True)
    driver.get(f"{url}/console")  # the redirect is relative
    shown(driver, "#key").send_keys(key + Key.ENTER)  # a keyboard sign-in

    card = shown(driver, f'#view article[data-request] a[href="#/runs/{workflow_id}"]')
    inbox = card.find_element(By.XPATH, "ancestor::article")
    assert inbox.find_element(By.TAG_NAME, "h3").text == "sell"
    assert "ACME" in inbox.find_element(By.CSS_SELECTOR, ".arguments").text
    assert inbox.find_element(By.CSS_SELECTOR, ".reason").text == REASON
    driver.save_screenshot(str(ARTIFACTS / "console-approvals.png"))

    card.click()  # to the run view, live
    text_in(driver, "#run-status", "awaiting approval")
    shown(driver, ".conversation form.decide .approve").click()
    text_in(driver, ".conversation .outcome", "approved by acme-approver")
    WebDriverWait(driver, WAIT).until(
        EC.text_to_be_present_in_element_attribute(
            (By.CSS_SELECTOR, ".conversation"), "data-finished", "completed"
        )
    )
    text_in(driver, "#run-status", "completed")
    conversation = driver.find_element(By.CSS_SELECTOR, ".conversation").text
    assert "Sell ACME" in conversation and REASON in conversation
    # The tool call is one line, its result in brief; the whole result opens on click.
    call = shown(driver, ".conversation li.tool summary")
    assert call.text.startswith("sell") and "→ sold 10 ACME" in call.text
    call.click()
    assert shown(driver, ".conversation li.tool .tool-body").text.endswith("sold 10 ACME")
    assert ANSWER in conversation
    driver.set_window_size(1280, 1800)  # the whole conversation in one picture
    driver.save_screenshot(str(ARTIFACTS / "console-run.png"))

    driver.set_window_size(390, 844)  # a phone
    driver.save_screenshot(str(ARTIFACTS / "console-run-phone.png"))
    shown(driver, 'nav a[href="#/runs"]').click()
    row = shown(driver, f'.runs a[href="#/runs/{workflow_id}"]').find_element(By.XPATH, "../..")
    text_in(driver, ".runs tbody", "completed")
    assert "Trader" in row.text
    driver.save_screenshot(str(ARTIFACTS / "console-runs-phone.png"))
    shown(driver, 'nav a[href="#/approvals"]').click()
    text_in(driver, "#view .status", "Updated")  # listed (other tests' requests may remain)
    assert not driver.find_elements(By.CSS_SELECTOR, f'#view a[href="#/runs/{workflow_id}"]')


async def test_an_approver_approves_in_the_console_and_watches_the_run_finish(
    client: Client, task_queue: str, tmp_path: Path, browser: WebDriver
) -> None:
    keys: Keys = make_keys(tmp_path / "keys.json")
    sell = tool_call("sell", symbol="ACME", quantity=10).message
    model = ScriptedModel(
        [
            ModelResponse(
                message=Message(role="assistant", content=REASON, tool_calls=sell.tool_calls)
            ),
            reply(ANSWER),
        ],
        piece_delay=0.05,
    )
    async with (
        agent_worker(client, Trader, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        started = await running.http.post(
            "/v1/agents/Trader/runs", json={"prompt": "Sell ACME"}, headers=keys.headers("operator")
        )
        workflow_id = started.json()["workflow_id"]
        await pending_approvals(running.http, keys)
        await asyncio.to_thread(
            approve_in_the_console, browser, running.url, keys.by_role["approver"], workflow_id
        )


FACT = "ACME reports earnings on May 3"


def remember_the_prompt(request: ModelRequest) -> ModelResponse:
    prompt = next(m.content for m in request.messages if m.role == "user")
    return tool_call("remember", text=prompt or "", kind="fact")


def edit_in_the_inbox_then_search_memory(
    driver: WebDriver, url: str, key: str, workflow_id: str
) -> None:
    """An approver halves the order in the inbox itself, then searches memory."""
    ARTIFACTS.mkdir(exist_ok=True)
    driver.get(f"{url}/console/")
    shown(driver, "#key").send_keys(key + Key.ENTER)
    # This run's card: other tests of the tenant may have left requests pending.
    link = shown(driver, f'#view article[data-request] a[href="#/runs/{workflow_id}"]')
    card = link.find_element(By.XPATH, "ancestor::article")
    assert "null" not in card.text  # the model gave no reason: nothing stands in for it
    card.find_element(By.CSS_SELECTOR, "details summary").click()  # "Edit arguments"
    arguments = card.find_element(By.CSS_SELECTOR, "textarea[name=arguments]")
    edited = json.loads(arguments.get_attribute("value") or "{}")
    assert edited == {"symbol": "ACME", "quantity": 10}
    arguments.clear()
    arguments.send_keys(json.dumps({**edited, "quantity": 5}))
    card.find_element(By.CSS_SELECTOR, "input[name=comment]").send_keys("half now")
    driver.save_screenshot(str(ARTIFACTS / "console-inbox-edit.png"))
    card.find_element(By.CSS_SELECTOR, "form.decide .approve").click()
    WebDriverWait(driver, WAIT).until(
        lambda _: (
            "approved by acme-approver" in card.find_element(By.CSS_SELECTOR, ".outcome").text
            and card.find_element(By.CSS_SELECTOR, ".comment").text == "half now"
        )
    )

    shown(driver, 'nav a[href="#/memory"]').click()
    shown(driver, "#memory-q").send_keys("ACME earnings" + Key.ENTER)
    text_in(driver, "#view .status", "found")
    text_in(driver, "#view .memories", FACT)
    driver.save_screenshot(str(ARTIFACTS / "console-memory.png"))


async def test_an_approver_edits_in_the_inbox_and_searches_memory(
    client: Client, task_queue: str, tmp_path: Path, browser: WebDriver, ledger: Path
) -> None:
    keys: Keys = make_keys(tmp_path / "keys.json")
    model = ScriptedAgents(
        Researcher=ScriptedModel([remember_the_prompt, reply("Noted.")]),
        Trader=ScriptedModel([tool_call("sell", symbol="ACME", quantity=10), reply(ANSWER)]),
    )
    memory = MemoryManager(EdgeStore(tmp_path / "memory"), HashEmbedder(64))
    operator = keys.headers("operator")
    async with (
        agent_worker(client, Trader, Researcher, model=model, task_queue=task_queue, memory=memory),
        gateway(client, task_queue, keys) as running,
    ):
        noted = await running.http.post(
            "/v1/agents/Researcher/runs", json={"prompt": FACT}, headers=operator
        )
        await running.http.get(
            f"/v1/runs/{noted.json()['workflow_id']}/result", headers=keys.headers("viewer")
        )
        started = await running.http.post(
            "/v1/agents/Trader/runs", json={"prompt": "Sell ACME"}, headers=operator
        )
        workflow_id = started.json()["workflow_id"]
        await pending_approvals(running.http, keys)
        await asyncio.to_thread(
            edit_in_the_inbox_then_search_memory,
            browser,
            running.url,
            keys.by_role["approver"],
            workflow_id,
        )
        result = await running.http.get(
            f"/v1/runs/{workflow_id}/result", headers=keys.headers("viewer")
        )
    await memory.close()
    assert result.json()["output"] == ANSWER
    # What ran is what the person approved in the inbox: the edited arguments.
    assert [(e["tool"], e["quantity"]) for e in read_ledger(ledger)] == [("sell", 5)]
