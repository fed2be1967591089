"""The console where a new user stumbled (issue 26 item 7), in headless Chromium.

Who is signed in and what the key may do shows in the header, and the page offers only
that (the API still refuses the rest: 403); a decided request says who decided and
when; a long run is a compact timeline; the memory page lists memories at once, with
their ids and, for admins, Forget. Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from temporalio.client import Client

from smyth_temporal.memory import EdgeStore, HashEmbedder, MemoryManager
from smyth_temporal.testing import ScriptedAgents, ScriptedModel, agent_worker, reply, tool_call
from smyth_temporal.types.messages import Message
from smyth_temporal.types.model import ModelRequest, ModelResponse
from tests.helpers.browser_support import requires_chromium
from tests.helpers.console_agents import Reporter
from tests.helpers.console_support import (
    EC,
    WAIT,
    By,
    Key,
    WebDriver,
    WebDriverWait,
    card_of,
    gateway_serving,
    pending_request,
    screenshot,
    shown,
    sign_in,
    text_in,
)
from tests.helpers.gateway_support import TENANT, Keys, gateway, make_keys
from tests.helpers.memory_agents import Researcher
from tests.helpers.trader import Trader

pytestmark = requires_chromium


@pytest.fixture
def keys(tmp_path: Path) -> Keys:
    return make_keys(tmp_path / "keys.json")


# ---- 1, 2: the header ------------------------------------------------------------------


def check_the_header(driver: WebDriver, url: str, key: str) -> None:
    driver.get(f"{url}/console/")
    shown(driver, "#key")
    for css in ("#nav", "#sign-out", 'nav a[href="#/approvals"]', "#identity"):
        assert not driver.find_element(By.CSS_SELECTOR, css).is_displayed(), css
    screenshot(driver, "signed-out")

    shown(driver, "#key").send_keys(key + Key.ENTER)
    text_in(driver, "#identity", f"{TENANT} · approver ({TENANT}-approver)")
    assert shown(driver, "#sign-out").is_displayed()
    assert not driver.find_element(By.ID, "login").is_displayed()
    screenshot(driver, "signed-in")

    driver.refresh()  # the key stays in the tab; whom it names is asked again
    text_in(driver, "#identity", f"{TENANT} · approver ({TENANT}-approver)")

    shown(driver, "#sign-out").click()
    shown(driver, "#key")
    assert not driver.find_element(By.ID, "nav").is_displayed()
    assert driver.find_element(By.ID, "identity").text == ""


async def test_the_menu_shows_only_once_signed_in_and_names_tenant_role_and_key(
    client: Client, task_queue: str, keys: Keys, browser: WebDriver
) -> None:
    async with gateway(client, task_queue, keys) as running:
        await asyncio.to_thread(check_the_header, browser, running.url, keys.by_role["approver"])


# ---- 3, 4: what a viewer may do, and a decided request ----------------------------------


def a_viewer_cannot_decide(driver: WebDriver, url: str, key: str, workflow_id: str) -> None:
    sign_in(driver, url, key)
    card = card_of(driver, workflow_id)
    approve = card.find_element(By.CSS_SELECTOR, "form.decide .approve")
    assert not approve.is_enabled()
    assert not card.find_element(By.CSS_SELECTOR, "input[name=comment]").is_displayed()
    assert not driver.find_elements(By.CSS_SELECTOR, ".bulk, input.pick")  # no bulk decisions
    assert "null" not in driver.find_element(By.ID, "view").text
    hint = card.find_element(By.CSS_SELECTOR, ".not-allowed").text
    assert hint == f"Your key {TENANT}-viewer has role viewer, which may not decide approvals."
    screenshot(driver, "viewer-inbox")
    # A page altered to enable the button still gets nothing past the gateway.
    driver.execute_script("arguments[0].querySelector('fieldset').disabled = false", card)
    approve.click()
    error = card.find_element(By.CSS_SELECTOR, "form.decide .error")
    WebDriverWait(driver, WAIT).until(lambda _: "may not decide approvals" in error.text)
    assert not card.find_elements(By.CSS_SELECTOR, ".outcome")


def an_approver_decides(driver: WebDriver, url: str, key: str, workflow_id: str) -> None:
    sign_in(driver, url, key)
    card = card_of(driver, workflow_id)
    assert "deadline in" in card.find_element(By.CSS_SELECTOR, ".timing").text
    card.find_element(By.CSS_SELECTOR, "input[name=comment]").send_keys("go")
    card.find_element(By.CSS_SELECTOR, "form.decide .approve").click()
    outcome = shown(driver, f'#view article[data-key^="{workflow_id}/"] .outcome')
    card = outcome.find_element(By.XPATH, "ancestor::article")
    assert outcome.text.startswith(f"approved by {TENANT}-approver ")
    assert outcome.text.endswith(" s ago")
    assert card.find_element(By.CSS_SELECTOR, ".comment").text == "go"
    timing = card.find_element(By.CSS_SELECTOR, ".timing").text
    assert timing.startswith("Requested ") and "deadline" not in timing
    screenshot(driver, "decided")
    # Relative times are redrawn: move the decision five minutes back and watch.
    driver.execute_script(
        "const t = arguments[0], at = Date.parse(t.getAttribute('datetime'));"
        "t.setAttribute('datetime', new Date(at - 300000).toISOString())",
        outcome.find_element(By.TAG_NAME, "time"),
    )
    WebDriverWait(driver, WAIT).until(lambda _: outcome.text.endswith(" 5 min ago"))

    # The run view shows the request decided too (from the run's own events).
    card.find_element(By.CSS_SELECTOR, f'a[href="#/runs/{workflow_id}"]').click()
    decided = shown(driver, ".conversation article[data-status=approved]")
    assert "deadline" not in decided.find_element(By.CSS_SELECTOR, ".timing").text
    assert (
        f"approved by {TENANT}-approver" in decided.find_element(By.CSS_SELECTOR, ".outcome").text
    )


async def test_a_viewer_cannot_decide_and_a_decided_request_says_who_decided_and_when(
    client: Client, task_queue: str, keys: Keys, browser: WebDriver
) -> None:
    model = ScriptedModel([tool_call("sell", symbol="ACME", quantity=10), reply("Sold.")])
    async with (
        agent_worker(client, Trader, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        started = await running.http.post(
            "/v1/agents/Trader/runs", json={"prompt": "Sell ACME"}, headers=keys.headers("operator")
        )
        workflow_id = started.json()["workflow_id"]
        request = await pending_request(running, keys, workflow_id)
        refused = await running.http.post(
            f"/v1/runs/{workflow_id}/approvals/{request['id']}",
            json={"approved": True, "arguments_sha256": request["arguments_sha256"]},
            headers=keys.headers("viewer"),
        )
        assert refused.status_code == 403
        await asyncio.to_thread(
            a_viewer_cannot_decide, browser, running.url, keys.by_role["viewer"], workflow_id
        )
        assert (await pending_request(running, keys, workflow_id))["id"] == request["id"]
        await asyncio.to_thread(
            an_approver_decides, browser, running.url, keys.by_role["approver"], workflow_id
        )
        result = await running.http.get(
            f"/v1/runs/{workflow_id}/result", headers=keys.headers("viewer")
        )
    assert result.json()["output"] == "Sold."


# ---- 5: a long run is a compact timeline ------------------------------------------------

SECTIONS = ("overview", "risks", "revenue", "margins", "guidance", "outlook")
REPORT = "\n".join(
    [f"# ACME: what the filings say ({len(SECTIONS)} sections read)"]
    + [
        f"- {s.title()}: steady, with the detail the filing gives on line {n}."
        for n, s in enumerate(SECTIONS, 1)
    ]
    + [f"Paragraph {n}: revenue grew while margins held; guidance unchanged." for n in range(1, 19)]
)


def reading_the_filings() -> ScriptedModel:
    """Six steps that each read a section (saying why), then the report: seven steps."""
    steps: list[ModelResponse] = []
    for section in SECTIONS:
        call = tool_call("read_filing", symbol="ACME", section=section).message
        why = f"Reading the {section} section next: it bears on the report."
        steps.append(
            ModelResponse(
                message=Message(role="assistant", content=why, tool_calls=call.tool_calls)
            )
        )
    return ScriptedModel([*steps, reply(REPORT)])


def the_run_view_is_compact(driver: WebDriver, url: str, key: str, workflow_id: str) -> None:
    sign_in(driver, url, key)
    driver.get(f"{url}/console/#/runs/{workflow_id}")
    WebDriverWait(driver, WAIT).until(
        EC.text_to_be_present_in_element_attribute(
            (By.CSS_SELECTOR, ".conversation"), "data-finished", "completed"
        )
    )
    rows = driver.find_elements(By.CSS_SELECTOR, ".conversation li.tool")
    assert len(rows) == len(SECTIONS)
    for row, section in zip(rows, SECTIONS, strict=True):
        summary = row.find_element(By.TAG_NAME, "summary").text
        assert summary.startswith("read_filing") and f'section: "{section}"' in summary
        assert not row.find_element(By.CSS_SELECTOR, ".tool-body pre").is_displayed()
    page = driver.find_element(By.TAG_NAME, "body").text
    assert page.count("Paragraph 18:") == 1  # the report once: no copy in the footer
    height, viewport = driver.execute_script(
        "return [document.documentElement.scrollHeight, window.innerHeight]"
    )
    screenshot(driver, "run-seven-steps")
    assert height < 2 * viewport, (height, viewport)
    driver.set_window_size(1400, height + 200)  # the whole page in one picture
    screenshot(driver, "run-seven-steps-whole")
    driver.set_window_size(390, 844)  # a phone: one-line tool calls are cut, not scrolled
    width, room = driver.execute_script(
        "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    screenshot(driver, "run-seven-steps-phone")
    assert width <= room, (width, room)
    driver.set_window_size(1400, 1000)

    first = rows[0]
    first.find_element(By.TAG_NAME, "summary").click()  # a result opens on click
    result = first.find_elements(By.CSS_SELECTOR, ".tool-body pre")[-1]
    assert result.is_displayed() and "ACME overview, line 40:" in result.text
    screenshot(driver, "run-seven-steps-opened")


async def test_a_seven_step_run_view_stays_under_two_screens_with_results_on_click(
    client: Client, task_queue: str, keys: Keys, browser: WebDriver
) -> None:
    async with (
        agent_worker(client, Reporter, model=reading_the_filings(), task_queue=task_queue),
        gateway_serving(client, task_queue, keys, Reporter) as running,
    ):
        started = await running.http.post(
            "/v1/agents/Reporter/runs",
            json={"prompt": "Report on ACME"},
            headers=keys.headers("operator"),
        )
        workflow_id = started.json()["workflow_id"]
        result = await running.http.get(
            f"/v1/runs/{workflow_id}/result", headers=keys.headers("viewer")
        )
        assert result.json()["output"] == REPORT
        await asyncio.to_thread(
            the_run_view_is_compact, browser, running.url, keys.by_role["viewer"], workflow_id
        )


# ---- 6: the memory page -----------------------------------------------------------------

FACTS = ("ACME reports earnings on May 3", "GLOBEX moved its listing to Frankfurt")


def remember_the_prompt(request: ModelRequest) -> ModelResponse:
    prompt = next(m.content for m in request.messages if m.role == "user")
    return tool_call("remember", text=prompt or "", kind="fact")


def memories_on_open(driver: WebDriver, url: str, key: str, ids: dict[str, str]) -> None:
    """An admin opens the memory page: the facts are listed, with ids; one is forgotten."""
    sign_in(driver, url, key)
    shown(driver, 'nav a[href="#/memory"]').click()
    for text, memory_id in ids.items():
        card = shown(driver, f'.memories [data-memory="{memory_id}"]')
        assert card.find_element(By.CSS_SELECTOR, ".text").text == text
        assert card.find_element(By.CSS_SELECTOR, ".memory-id").text == memory_id
    screenshot(driver, "memory-recent")
    assert "null" not in driver.find_element(By.ID, "view").text  # an admin gets no hint
    forgotten = shown(driver, f'.memories [data-memory="{ids[FACTS[0]]}"]')
    forgotten.find_element(By.CSS_SELECTOR, "button.forget").click()
    assert "Forget this memory for good?" in forgotten.text
    forgotten.find_element(By.CSS_SELECTOR, "button.cancel").click()  # a second thought
    assert not forgotten.find_elements(By.CSS_SELECTOR, "button.confirm-forget")
    forgotten.find_element(By.CSS_SELECTOR, "button.forget").click()
    screenshot(driver, "memory-confirm")
    forgotten.find_element(By.CSS_SELECTOR, "button.confirm-forget").click()
    WebDriverWait(driver, WAIT).until(
        lambda _: "Forgotten." in forgotten.find_element(By.CSS_SELECTOR, ".actions").text
    )
    # A search shows ids too.
    shown(driver, "#memory-q").send_keys("GLOBEX listing" + Key.ENTER)
    text_in(driver, "#view .status", "found")
    hit = shown(driver, f'.memories [data-memory="{ids[FACTS[1]]}"]')
    assert hit.find_element(By.CSS_SELECTOR, ".memory-id").text == ids[FACTS[1]]


def a_viewer_may_not_forget(driver: WebDriver, url: str, key: str, memory_id: str) -> None:
    sign_in(driver, url, key)
    shown(driver, 'nav a[href="#/memory"]').click()
    card = shown(driver, f'.memories [data-memory="{memory_id}"]')
    assert not card.find_elements(By.TAG_NAME, "button")
    hint = driver.find_element(By.CSS_SELECTOR, "#view .not-allowed").text
    assert hint == f"Your key {TENANT}-viewer has role viewer, which may not forget memories."
    screenshot(driver, "memory-viewer")


async def test_the_memory_page_lists_recent_memories_with_ids_and_an_admin_forgets_one(
    client: Client, task_queue: str, keys: Keys, tmp_path: Path, browser: WebDriver
) -> None:
    model = ScriptedAgents(Researcher=ScriptedModel([remember_the_prompt, reply("Noted.")] * 2))
    memory = MemoryManager(EdgeStore(tmp_path / "memory"), HashEmbedder(64))
    async with (
        agent_worker(client, Researcher, model=model, task_queue=task_queue, memory=memory),
        gateway(client, task_queue, keys) as running,
    ):
        http = running.http
        for fact in FACTS:
            started = await http.post(
                "/v1/agents/Researcher/runs",
                json={"prompt": fact},
                headers=keys.headers("operator"),
            )
            await http.get(
                f"/v1/runs/{started.json()['workflow_id']}/result", headers=keys.headers("viewer")
            )
        listed = await http.get(
            "/v1/memory", params={"kind": "fact"}, headers=keys.headers("viewer")
        )
        ids = {m["text"]: m["id"] for m in listed.json()["memories"]}
        assert set(ids) == set(FACTS)
        await asyncio.to_thread(
            a_viewer_may_not_forget, browser, running.url, keys.by_role["viewer"], ids[FACTS[0]]
        )
        refused = await http.delete(
            f"/v1/memory/{ids[FACTS[0]]}",
            params={"namespace": "research"},
            headers=keys.headers("viewer"),
        )
        assert refused.status_code == 403
        await asyncio.to_thread(memories_on_open, browser, running.url, keys.by_role["admin"], ids)
        left = await http.get("/v1/memory", params={"kind": "fact"}, headers=keys.headers("viewer"))
    await memory.close()
    assert [m["text"] for m in left.json()["memories"]] == [FACTS[1]]
