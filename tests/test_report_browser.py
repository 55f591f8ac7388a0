"""The run's page in a real headless browser (Debian's Chromium and ChromeDriver, driven by Selenium): it renders
from disk with no console errors, and shows the heatmap and the timeline.

It skips where Chromium or Selenium is missing, except in CI (``L2MAC_CI=1``, set by ``.ci/run``, which installs
them), where a missing browser is a failure rather than a silent skip."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from scenario import full_run_replies

from conftest import run_scripted

CHROMIUM, DRIVER = shutil.which("chromium") or shutil.which("chromium-browser"), shutil.which("chromedriver")


def _browser():  # type: ignore[no-untyped-def]
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        missing = "selenium is not installed"
    else:
        if CHROMIUM and DRIVER:
            options = webdriver.ChromeOptions()
            options.binary_location = CHROMIUM
            for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1300,2400"):
                options.add_argument(arg)
            options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
            return webdriver.Chrome(service=Service(DRIVER), options=options)
        missing = "Chromium and ChromeDriver are not installed (apt install chromium chromium-driver)"
    if os.environ.get("L2MAC_CI"):
        pytest.fail(f"CI must run the browser test: {missing}")
    pytest.skip(missing)


def test_the_page_renders_in_a_browser_without_errors_and_shows_heatmap_and_timeline(tmp_path: Path) -> None:
    result, _ = run_scripted(tmp_path, full_run_replies(), report_page=True)
    page = result.workspace / ".l2mac" / "report.html"
    driver = _browser()
    try:
        driver.get(page.as_uri())
        assert driver.title == "l2mac run: proj"
        errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
        assert errors == []
        for section in ("heatmap", "timeline", "tests"):
            svg = driver.find_element("css selector", f"#{section} svg")
            size = svg.size
            assert svg.is_displayed() and size["width"] > 200 and size["height"] > 100, (section, size)
        assert "todo/store.py" in driver.find_element("id", "heatmap").text
        rows = driver.find_elements("css selector", "#steps tr.step")
        assert [r.get_attribute("data-status") for r in rows] == ["passed", "passed"]
        # a file is viewable: its details open on a click and show its text
        first = driver.find_element("css selector", "#files details summary")
        first.click()
        assert "def test_" in driver.find_element("css selector", "#files details[open] pre").text
        driver.save_screenshot(str(tmp_path / "page.png"))
        assert (tmp_path / "page.png").stat().st_size > 10_000
    finally:
        driver.quit()
