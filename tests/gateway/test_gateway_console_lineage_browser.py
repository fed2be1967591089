"""Time travel in the console (issue 28 item 5), in headless Chromium.

"Fork here" on a step of the run view starts a fork and opens it; the fork names its
parent, the parent lists its fork, and "compare" shows both from the step they share;
"Rewind here" takes the run back and its lineage says so.
A viewer sees the buttons disabled with why, and the gateway refuses a forced one.
Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import unquote

import pytest
from temporalio.client import Client

from smyth_temporal import AgentClient, AgentInput
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from smyth_temporal.types.model import ModelRequest, ModelResponse
from tests.helpers.agents import Analyst
from tests.helpers.browser_support import requires_chromium
from tests.helpers.console_support import (
    EC,
    WAIT,
    By,
    WebDriver,
    WebDriverWait,
    screenshot,
    shown,
    sign_in,
    text_in,
)
from tests.helpers.gateway_support import TENANT, Keys, gateway, make_keys

pytestmark = requires_chromium

PROMPT = "Look at INITECH instead."


def turn(request: ModelRequest) -> ModelResponse:
    """ACME, then GLOBEX and an answer; a fork told PROMPT looks at INITECH instead."""
    forked = any(m.content == PROMPT for m in request.messages)
    if request.step == 1:
        return tool_call("get_quote", symbol="ACME")
    if request.step == 2:
        return tool_call("get_quote", symbol="INITECH" if forked else "GLOBEX")
    return reply("INITECH is flat." if forked else "Both are up.")


@pytest.fixture
def keys(tmp_path: Path) -> Keys:
    return make_keys(tmp_path / "keys.json")


def finished(driver: WebDriver, css: str = ".conversation") -> None:
    WebDriverWait(driver, WAIT).until(
        EC.text_to_be_present_in_element_attribute((By.CSS_SELECTOR, css), "data-finished", "c")
    )


def a_viewer_may_not_fork(driver: WebDriver, url: str, key: str, parent: str) -> None:
    sign_in(driver, url, key)
    driver.get(f"{url}/console/#/runs/{parent}")
    finished(driver)
    why = f"Your key {TENANT}-viewer has role viewer, which may not fork or rewind runs."
    assert driver.find_element(By.CSS_SELECTOR, "#view .not-allowed").text == why
    step = shown(driver, '.conversation li[data-step="1"]')
    for css in (".fork-here", ".rewind-here"):
        button = step.find_element(By.CSS_SELECTOR, css)
        assert not button.is_enabled() and button.get_attribute("title") == why
    screenshot(driver, "lineage-viewer")
    # A page altered to enable the button gets nothing past the gateway.
    fork = step.find_element(By.CSS_SELECTOR, ".fork-here")
    driver.execute_script("arguments[0].disabled = false", fork)
    fork.click()
    step.find_element(By.CSS_SELECTOR, "form.fork button[type=submit]").click()
    error = step.find_element(By.CSS_SELECTOR, ".error")
    WebDriverWait(driver, WAIT).until(lambda _: "may not" in error.text)


def an_operator_forks_and_compares(driver: WebDriver, url: str, key: str, parent: str) -> str:
    sign_in(driver, url, key)
    driver.get(f"{url}/console/#/runs/{parent}")
    finished(driver)
    step = shown(driver, '.conversation li[data-step="1"]')
    step.find_element(By.CSS_SELECTOR, ".fork-here").click()
    form = step.find_element(By.CSS_SELECTOR, "form.fork")
    form.find_element(By.NAME, "prompt").send_keys(PROMPT)
    screenshot(driver, "lineage-fork-form")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()

    # The fork opens: it names its parent and the step.
    WebDriverWait(driver, WAIT).until(lambda d: f"#/runs/{parent}-fork-" in unquote(d.current_url))
    fork = unquote(driver.current_url.split("#/runs/")[1])
    text_in(driver, ".lineage-parent", f"Forked from {parent} after step 1")
    finished(driver)
    assert not driver.find_elements(By.CSS_SELECTOR, '.conversation li[data-step="1"]')
    screenshot(driver, "lineage-fork")

    driver.find_element(By.CSS_SELECTOR, ".lineage-parent a.compare-link").click()
    text_in(driver, ".common", "Step 1 is the same in both; from step 2 on:")
    finished(driver, f'.side[data-run="{parent}"] .conversation')
    finished(driver, f'.side[data-run="{fork}"] .conversation')
    left = driver.find_element(By.CSS_SELECTOR, f'.side[data-run="{parent}"]')
    right = driver.find_element(By.CSS_SELECTOR, f'.side[data-run="{fork}"]')
    assert "GLOBEX" in left.text and "Both are up." in left.text and "INITECH" not in left.text
    assert "INITECH" in right.text and "INITECH is flat." in right.text
    for side in (left, right):  # the shared step is in neither column
        assert not side.find_elements(By.CSS_SELECTOR, '[data-step="1"]')
        assert side.find_elements(By.CSS_SELECTOR, '[data-step="2"]')
    assert left.location["y"] == right.location["y"]  # side by side
    screenshot(driver, "lineage-compare")

    # The parent lists its fork.
    left.find_element(By.CSS_SELECTOR, "h3 a").click()
    text_in(driver, ".lineage-forks", f"Forks: {fork} (after step 1, completed)")

    # Rewind here: the same run goes back to step 1 and says so.
    step = shown(driver, '.conversation li[data-step="1"]')
    step.find_element(By.CSS_SELECTOR, ".rewind-here").click()
    form = step.find_element(By.CSS_SELECTOR, "form.rewind")
    form.find_element(By.NAME, "prompt").send_keys("Once more, please.")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    text_in(driver, ".lineage-rewind", f"Rewound to step 1 by {TENANT}-operator")
    screenshot(driver, "lineage-rewound")
    return fork


async def test_fork_here_opens_a_fork_to_compare_side_by_side_rewind_here_rewinds_viewers_may_not(
    client: Client, agents: AgentClient, task_queue: str, keys: Keys, browser: WebDriver
) -> None:
    async with (
        agent_worker(client, Analyst, model=ScriptedModel([turn] * 3), task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        parent = await agents.start(Analyst, AgentInput(prompt="ACME, GLOBEX?", tenant=TENANT))
        await agents.result(parent.id)
        viewer, operator = keys.by_role["viewer"], keys.by_role["operator"]
        await asyncio.to_thread(a_viewer_may_not_fork, browser, running.url, viewer, parent.id)
        fork = await asyncio.to_thread(
            an_operator_forks_and_compares, browser, running.url, operator, parent.id
        )
        result = await agents.result(fork)
        rewound = await agents.result(parent.id)

    assert result.output == "INITECH is flat." and rewound.output == "Both are up."
    forks = [e.id async for e in client.list_workflows(f"SmythForkOf = '{parent.id}'")]
    assert forks == [fork]  # the viewer's forced click started nothing
