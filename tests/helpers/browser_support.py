"""Headless Chromium for browser tests: Debian's ``chromium`` and ``chromium-driver``.

A test module does ``pytestmark = requires_chromium`` and asks for the ``browser``
fixture (imported into it); screenshots go to ``ARTIFACTS``.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
ARTIFACTS = Path(__file__).parents[2] / "test-artifacts"

requires_chromium = pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None,
    reason="no Chromium here: apt-get install chromium chromium-driver",
)


@pytest.fixture
def browser() -> Iterator[object]:
    """A headless Chromium driven by Selenium, quit after the test."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="pip install selenium")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(flag)
    options.add_argument("--window-size=1400,1000")
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()
